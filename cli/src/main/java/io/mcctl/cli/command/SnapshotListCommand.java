package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code list}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "list", mixinStandardHelpOptions = true, description = "List snapshots and WAL segments in a state directory. (Not built in this version.)")
public final class SnapshotListCommand extends NotBuiltCommand {
}
