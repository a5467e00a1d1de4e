package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code export}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "export", mixinStandardHelpOptions = true, description = "Export a snapshot's whole state as JSON lines. (Not built in this version.)")
public final class SnapshotExportCommand extends NotBuiltCommand {
}
