package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl snapshot}: lists its subcommands. */
@Command(name = "snapshot", mixinStandardHelpOptions = true, description = "Create, list, inspect, verify, diff and export master snapshots.",
        synopsisSubcommandLabel = "COMMAND", subcommands = {SnapshotCreateCommand.class, SnapshotListCommand.class, SnapshotInspectCommand.class, SnapshotVerifyCommand.class, SnapshotDiffCommand.class, SnapshotExportCommand.class, SnapshotRecoverCommand.class, WalCommand.class})
public final class SnapshotCommand extends GroupCommand {
}
