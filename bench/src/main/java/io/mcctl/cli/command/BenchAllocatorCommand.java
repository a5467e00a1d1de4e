package io.mcctl.cli.command;

import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.AllocatorBenchmark;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.util.Rounding;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code mcctl bench allocator}: mcctl's page allocator against the design RFC's scan, in one run. */
@Command(name = "allocator", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Steady-state free+allocate pairs (runs of 1..16 pages) on fragmented buckets, for mcctl's",
                "allocator and for the design RFC's bit-by-bit scan, from the same state in the same run:",
                "65,536 pages at 50%%, 90%%, 97%% fill and 1,048,576 pages at 90%%."})
public final class BenchAllocatorCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--ops", paramLabel = "N", defaultValue = "1000000",
            description = "Pairs measured per case for mcctl's allocator (default: ${DEFAULT-VALUE}).")
    long ops;

    @Option(names = "--rfc-budget-ms", paramLabel = "MS", defaultValue = "3000",
            description = "Time the RFC allocator may take per case; it stops early when spent (default: ${DEFAULT-VALUE}).")
    long rfcBudgetMillis;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "42", description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Override
    public Integer call() {
        if (ops < 1000) {
            throw new ParameterException(spec.commandLine(), "invalid --ops " + ops + ": allowed is at least 1000");
        }
        if (rfcBudgetMillis < 1) {
            throw new ParameterException(spec.commandLine(), "invalid --rfc-budget-ms " + rfcBudgetMillis + ": allowed is at least 1");
        }
        PrintWriter out = spec.commandLine().getOut();
        AllocatorBenchmark benchmark = new AllocatorBenchmark(seed, ops, rfcBudgetMillis * 1_000_000L);
        List<AllocatorBenchmark.Case> cases = List.of(new AllocatorBenchmark.Case(65_536, 0.50),
                new AllocatorBenchmark.Case(65_536, 0.90), new AllocatorBenchmark.Case(65_536, 0.97),
                new AllocatorBenchmark.Case(1_048_576, 0.90));
        List<AllocatorBenchmark.Result> results = new ArrayList<>();
        for (AllocatorBenchmark.Case benchCase : cases) {
            results.add(benchmark.run(benchCase));
        }
        double scaling = results.get(3).oursNsPerPair() / results.get(1).oursNsPerPair();
        long memory = AllocatorBenchmark.footprintBytes(256, 65_536);
        AllocatorBenchmark.Result at90 = results.get(1);

        Map<String, Object> targets = new LinkedHashMap<>();
        targets.put("speedup_at_90pct_min_50x", at90.speedup() >= 50);
        targets.put("ns_per_pair_at_90pct_under_500", at90.oursNsPerPair() < 500);
        targets.put("scaling_1m_over_64k_at_most_2x", scaling <= 2.0);
        targets.put("memory_256x65536_under_4mib", memory < 4L << 20);

        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("benchmark", "allocator");
            report.put("machine", MachineInfo.describe());
            report.put("seed", seed);
            List<Map<String, Object>> rows = new ArrayList<>();
            for (AllocatorBenchmark.Result r : results) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("case", r.name());
                row.put("pages", r.pages());
                row.put("target_fill", r.targetFill());
                row.put("start_fill", Rounding.round(r.startFill(), 4));
                row.put("fragmentation_score", Rounding.round(r.fragmentationScore(), 4));
                row.put("mcctl_ns_per_pair", Rounding.round(r.oursNsPerPair(), 1));
                row.put("mcctl_pairs", r.oursOps());
                row.put("mcctl_failures", r.oursFailures());
                row.put("rfc_ns_per_pair", Rounding.round(r.rfcNsPerPair(), 1));
                row.put("rfc_pairs", r.rfcOps());
                row.put("rfc_failures", r.rfcFailures());
                row.put("speedup", Rounding.round(r.speedup(), 1));
                rows.add(row);
            }
            report.put("cases", rows);
            report.put("scaling_1m_over_64k_at_90pct", Rounding.round(scaling, 3));
            report.put("memory_bytes_256_buckets_x_65536_pages", memory);
            report.put("targets_met", targets);
            out.println(OutputMixin.toJson(report));
        } else {
            Table table = new Table("CASE", "FRAG", "MCCTL ns/pair", "RFC ns/pair", "SPEEDUP", "FAILURES mcctl/rfc", "PAIRS mcctl/rfc");
            for (AllocatorBenchmark.Result r : results) {
                table.row(r.name(), format("%.3f", r.fragmentationScore()), format("%.1f", r.oursNsPerPair()),
                        format("%.1f", r.rfcNsPerPair()), format("%.1fx", r.speedup()),
                        r.oursFailures() + "/" + r.rfcFailures(), r.oursOps() + "/" + r.rfcOps());
            }
            out.print(table.render());
            out.println(format("1,048,576 vs 65,536 pages at 90%%: %.2fx per pair; allocator state of 256 x 65,536 pages: %.2f MiB",
                    scaling, memory / 1048576.0));
            out.println("targets met: " + targets);
        }
        out.flush();
        return 0;
    }

    private static String format(String pattern, Object... args) {
        return String.format(Locale.ROOT, pattern, args);
    }
}
