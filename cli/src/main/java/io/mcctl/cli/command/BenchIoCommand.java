package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code io}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "io", mixinStandardHelpOptions = true, description = "Batch get throughput against a plain sequential read of a bucket file. (Not built in this version.)")
public final class BenchIoCommand extends NotBuiltCommand {
}
