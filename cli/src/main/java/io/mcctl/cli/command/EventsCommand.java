package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl events}: lists its subcommands. */
@Command(name = "events", mixinStandardHelpOptions = true, description = "The KV events the master publishes for routers.",
        synopsisSubcommandLabel = "COMMAND", subcommands = {EventsTailCommand.class})
public final class EventsCommand extends GroupCommand {
}
