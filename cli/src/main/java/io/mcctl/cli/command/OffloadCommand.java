package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code offload}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "offload", mixinStandardHelpOptions = true, description = "Write a file (or stdin, or a directory of files) into the tier under a key. (Not built in this version.)")
public final class OffloadCommand extends NotBuiltCommand {
}
