package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl demo}: lists its subcommands. */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Demonstrations an operator can run on one machine, with real processes on a temporary root.",
        synopsisSubcommandLabel = "COMMAND", subcommands = {DemoOwnerDeathCommand.class})
public final class DemoCommand extends GroupCommand {
}
