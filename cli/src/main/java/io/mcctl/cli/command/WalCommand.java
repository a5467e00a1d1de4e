package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl wal}: lists its subcommands. */
@Command(name = "wal", mixinStandardHelpOptions = true, description = "Read the master's write-ahead log.",
        synopsisSubcommandLabel = "COMMAND", subcommands = {WalDumpCommand.class})
public final class WalCommand extends GroupCommand {
}
