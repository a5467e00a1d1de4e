package io.mcctl.cli.command;

import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.bench.PageServiceBenchmark;
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

/** {@code mcctl bench pages}: the page service's own cost per key, in this JVM, with no transport and no log. */
@Command(name = "pages", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"The master's page service alone, in this JVM (no gRPC, no write-ahead log): offload cycles",
                "(allocate + notify) filling its table to --mappings, then for a fixed time, then lookups of random",
                "committed keys and of a few keys that stay in the caches, one thread in batches. Reports CPU per key",
                "of this process and the collector threads' share of it: the floor under bench master's figures."})
public final class BenchPagesCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--mappings", paramLabel = "N", defaultValue = "1000000",
            description = "Mappings in the table before the timed phases (default: ${DEFAULT-VALUE}).")
    long mappings;

    @Option(names = "--batch", paramLabel = "N", defaultValue = "64", description = "Keys per batch (default: ${DEFAULT-VALUE}).")
    int batch;

    @Option(names = "--seconds", paramLabel = "S", defaultValue = "5", description = "Seconds of each timed phase (default: ${DEFAULT-VALUE}).")
    double seconds;

    @Option(names = "--working-set", paramLabel = "N", defaultValue = "1000",
            description = "Keys of the in-cache lookup phase (default: ${DEFAULT-VALUE}).")
    int workingSet;

    @Option(names = "--key-length", paramLabel = "N",
            description = {"Characters of each key, its number padded with zeros (default: as short as the number, about 14;",
                    "an engine's keys, a page hash in hex with a model and rank suffix, are 64 to 100)."})
    Integer keyLength;

    @Override
    public Integer call() {
        if (mappings < 1000 || mappings > 100_000_000) {
            throw new ParameterException(spec.commandLine(), "invalid --mappings " + mappings + ": allowed is 1000 to 100000000");
        }
        if (batch < 1 || batch > 10_000) {
            throw new ParameterException(spec.commandLine(), "invalid --batch " + batch + ": allowed is 1 to 10000");
        }
        if (!(seconds > 0) || seconds > 3600) {
            throw new ParameterException(spec.commandLine(), "invalid --seconds " + seconds + ": allowed is more than 0, at most 3600");
        }
        if (workingSet < 1 || workingSet > mappings) {
            throw new ParameterException(spec.commandLine(), "invalid --working-set " + workingSet + ": allowed is 1 to --mappings ("
                    + mappings + ")");
        }
        if (keyLength != null && (keyLength < PageServiceBenchmark.MIN_KEY_LENGTH || keyLength > PageServiceBenchmark.MAX_KEY_LENGTH)) {
            throw new ParameterException(spec.commandLine(), "invalid --key-length " + keyLength + ": allowed is "
                    + PageServiceBenchmark.MIN_KEY_LENGTH + " to " + PageServiceBenchmark.MAX_KEY_LENGTH + " characters");
        }
        PageServiceBenchmark benchmark = new PageServiceBenchmark(batch, keyLength == null ? 0 : keyLength);
        List<PageServiceBenchmark.Phase> phases = new ArrayList<>();
        phases.add(benchmark.fill(mappings));
        phases.add(benchmark.offloadFor(seconds));
        phases.add(benchmark.lookupAllFor(seconds));
        phases.add(benchmark.lookupFewFor(workingSet, seconds));

        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("benchmark", "pages");
            report.put("machine", MachineInfo.describe());
            report.put("batch", batch);
            report.put("key_length", keyLength); // null: keys as short as their numbers
            List<Map<String, Object>> rows = new ArrayList<>();
            for (PageServiceBenchmark.Phase p : phases) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("phase", p.name());
                row.put("keys", p.keys());
                row.put("failures", p.failures());
                row.put("mappings_at_end", p.mappingsAtEnd());
                row.put("seconds", Rounding.round(p.seconds(), 3));
                row.put("keys_per_second", Math.round(p.keysPerSecond()));
                row.put("cpu_ns_per_key", Rounding.round(p.cpuNanosPerKey(), 1));
                row.put("collector_share_of_cpu", Rounding.round(p.gcShare(), 3));
                rows.add(row);
            }
            report.put("phases", rows);
            out.println(OutputMixin.toJson(report));
        } else {
            Table table = new Table("PHASE", "KEYS", "MAPPINGS AT END", "KEYS/S", "CPU ns/KEY", "COLLECTOR SHARE", "FAILURES");
            for (PageServiceBenchmark.Phase p : phases) {
                table.row(p.name(), Long.toString(p.keys()), Long.toString(p.mappingsAtEnd()), String.format(Locale.ROOT, "%.0f", p.keysPerSecond()),
                        String.format(Locale.ROOT, "%.1f", p.cpuNanosPerKey()), String.format(Locale.ROOT, "%.1f%%", 100 * p.gcShare()),
                        Long.toString(p.failures()));
            }
            out.print(table.render());
        }
        out.flush();
        return 0;
    }
}
