package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code fsck}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "fsck", mixinStandardHelpOptions = true, description = "Check page state for leaks, false frees and overlaps; repair what is safe. (Not built in this version.)")
public final class FsckCommand extends NotBuiltCommand {
}
