package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl master}: lists its subcommands. */
@Command(name = "master", mixinStandardHelpOptions = true, description = "Run the master.",
        synopsisSubcommandLabel = "COMMAND", subcommands = {MasterStartCommand.class, MasterStatusCommand.class})
public final class MasterCommand extends GroupCommand {
}
