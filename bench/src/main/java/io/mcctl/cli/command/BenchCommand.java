package io.mcctl.cli.command;

import io.mcctl.cli.GroupCommand;
import picocli.CommandLine.Command;

/** {@code mcctl bench}: lists its subcommands. */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Benchmarks; figures belong in docs/benchmarks.md.",
        synopsisSubcommandLabel = "COMMAND", subcommands = {BenchAllocatorCommand.class, BenchMasterCommand.class, BenchIoCommand.class, BenchRestartCommand.class, BenchFsckCommand.class, BenchCacheCommand.class, BenchCrossnodeCommand.class, BenchLayoutCommand.class, BenchFailoverCommand.class, BenchPromotionCommand.class, BenchPagesCommand.class, BenchChaosCommand.class})
public final class BenchCommand extends GroupCommand {
}
