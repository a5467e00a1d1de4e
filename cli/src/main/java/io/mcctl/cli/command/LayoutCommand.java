package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl layout}: lists its subcommands. */
@Command(name = "layout", mixinStandardHelpOptions = true, description = "The root's bucket layout (admin).",
        synopsisSubcommandLabel = "COMMAND", subcommands = {LayoutGrowCommand.class})
public final class LayoutCommand extends GroupCommand {
}
