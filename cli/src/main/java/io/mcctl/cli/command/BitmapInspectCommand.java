package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code inspect}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "inspect", mixinStandardHelpOptions = true, description = "Per-bucket page usage, free-run histogram, fragmentation, region map. (Not built in this version.)")
public final class BitmapInspectCommand extends NotBuiltCommand {
}
