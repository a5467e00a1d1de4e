package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code inspect}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "inspect", mixinStandardHelpOptions = true, description = "Show a snapshot's header, sections, counters and, with --keys, its mappings. (Not built in this version.)")
public final class SnapshotInspectCommand extends NotBuiltCommand {
}
