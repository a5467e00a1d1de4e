package io.mcctl.cli.command;

import io.mcctl.cli.NotBuiltCommand;
import picocli.CommandLine.Command;

/** {@code master}: registered so the whole tool shows in help; not built in this version. */
@Command(name = "master", mixinStandardHelpOptions = true, description = "Offload-cycle and mapping-lookup throughput against a master. (Not built in this version.)")
public final class BenchMasterCommand extends NotBuiltCommand {
}
