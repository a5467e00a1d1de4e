package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code rm}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "rm", mixinStandardHelpOptions = true, description = "Remove keys; their pages are freed once no reader can still see them. (Not built in this version.)")
public final class RmCommand extends NotBuiltCommand {
}
