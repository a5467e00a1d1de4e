package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl node}: lists its subcommands. */
@Command(name = "node", mixinStandardHelpOptions = true,
        description = "Nodes: the per-host process that registers with the master, and offloads and reads through one.",
        synopsisSubcommandLabel = "COMMAND",
        subcommands = {NodeStartCommand.class, NodeStatusCommand.class, NodeOffloadCommand.class, NodeGetCommand.class})
public final class NodeCommand extends GroupCommand {
}
