package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code restart}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "restart", mixinStandardHelpOptions = true, description = "Master restart time and snapshot cost with a million mappings. (Not built in this version.)")
public final class BenchRestartCommand extends NotBuiltCommand {
}
