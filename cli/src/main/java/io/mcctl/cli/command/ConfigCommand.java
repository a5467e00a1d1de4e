package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl config}: lists its subcommands. */
@Command(name = "config", mixinStandardHelpOptions = true, description = "Show the effective settings.",
        synopsisSubcommandLabel = "COMMAND", subcommands = {ConfigShowCommand.class})
public final class ConfigCommand extends GroupCommand {
}
