package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code create}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "create", mixinStandardHelpOptions = true, description = "Ask the master to write a snapshot now. (Not built in this version.)")
public final class SnapshotCreateCommand extends NotBuiltCommand {
}
