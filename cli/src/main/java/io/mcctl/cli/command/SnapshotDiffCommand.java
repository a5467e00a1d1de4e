package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code diff}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "diff", mixinStandardHelpOptions = true, description = "Compare two snapshots: keys added, removed, moved; pages per bucket. (Not built in this version.)")
public final class SnapshotDiffCommand extends NotBuiltCommand {
}
