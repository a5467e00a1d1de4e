package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code verify}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "verify", mixinStandardHelpOptions = true, description = "Verify every checksum and invariant of a snapshot or state directory. (Not built in this version.)")
public final class SnapshotVerifyCommand extends NotBuiltCommand {
}
