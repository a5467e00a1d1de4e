package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code get}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "get", mixinStandardHelpOptions = true, description = "Read a key's object from the tier by direct pread, checking its CRC32C. (Not built in this version.)")
public final class GetCommand extends NotBuiltCommand {
}
