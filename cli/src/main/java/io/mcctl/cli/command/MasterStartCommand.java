package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code start}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "start", mixinStandardHelpOptions = true, description = "Run the master in the foreground: page allocation, mappings, metrics. (Not built in this version.)")
public final class MasterStartCommand extends NotBuiltCommand {
}
