package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code dump}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "dump", mixinStandardHelpOptions = true, description = "Print decoded write-ahead log records. (Not built in this version.)")
public final class WalDumpCommand extends NotBuiltCommand {
}
