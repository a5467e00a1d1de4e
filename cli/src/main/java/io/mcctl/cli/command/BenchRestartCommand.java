package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.Main;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.LatencyRecorder;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.bench.MasterBenchmark;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.durability.Snapshotter;
import io.mcctl.master.server.MasterServer;
import io.mcctl.master.server.MasterSettings;
import io.mcctl.master.service.PageService;
import io.mcctl.master.service.Placement;
import io.mcctl.storage.layout.BucketLayout;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl bench restart}: what durability costs: restart time, snapshot cost, WAL vs snapshot throughput. */
@Command(name = "restart", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Builds a master state of --mappings mappings (then a snapshot, then --wal-records more log records),",
                "and measures: snapshot write time and size, lookup p99 while the snapshot is written against idle p99,",
                "time from starting a new master process to serving, and offload-cycle throughput with WAL durability",
                "against snapshot durability. Uses temporary roots (256 x 4GiB sparse buckets, 64KiB pages)."})
public final class BenchRestartCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--mappings", paramLabel = "N", defaultValue = "1000000", description = "Mappings in the state (default: ${DEFAULT-VALUE}).")
    int mappings;

    @Option(names = "--wal-records", paramLabel = "N", defaultValue = "100000",
            description = "Log records after the snapshot (default: ${DEFAULT-VALUE}).")
    int walRecords;

    @Option(names = "--keys", paramLabel = "N", defaultValue = "100000",
            description = "Keys per durability mode in the throughput comparison (default: ${DEFAULT-VALUE}).")
    int keys;

    @Override
    public Integer call() throws Exception {
        if (mappings < 1000 || walRecords < 2 || keys < 8 * 640) {
            throw new CliException(ExitCodes.USAGE, "invalid sizes: allowed are --mappings >= 1000, --wal-records >= 2, --keys >= 5120");
        }
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("benchmark", "restart");
        report.put("machine", MachineInfo.describe());
        Path root = Files.createTempDirectory("mcctl-bench-restart");
        try {
            BucketLayout layout = new BucketLayout(root, 256, 64 << 10, 4L << 30);
            MasterServer.Options options = new MasterServer.Options(layout, "posix", "127.0.0.1", 0, 0, Duration.ofMinutes(10),
                    Duration.ofSeconds(5), MasterSettings.Durability.wal, null, null, 2, 64L << 20, Map.of());
            try (MasterServer master = MasterServer.start(options)) {
                fill(master.pages(), "base-", mappings);
                master.wal().whenDurable().get();
                LatencyRecorder idle = lookups(master, Duration.ofSeconds(2), null);
                AtomicBoolean snapshotDone = new AtomicBoolean();
                Snapshotter.Taken[] taken = new Snapshotter.Taken[1];
                Thread snapshotThread = new Thread(() -> {
                    try {
                        taken[0] = master.snapshot();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    } finally {
                        snapshotDone.set(true);
                    }
                });
                LatencyRecorder during = lookups(master, null, () -> {
                    snapshotThread.start();
                    return snapshotDone;
                });
                snapshotThread.join();
                report.put("snapshot_mappings", taken[0].mappings());
                report.put("snapshot_millis", taken[0].millis());
                report.put("snapshot_bytes", taken[0].bytes());
                report.put("lookup_p99_idle_us", round(idle.percentileMicros(0.99)));
                report.put("lookup_p99_during_snapshot_us", round(during.percentileMicros(0.99)));
                report.put("lookup_p99_ratio", round(during.percentileMicros(0.99) / idle.percentileMicros(0.99)));
                fill(master.pages(), "tail-", walRecords / 2);
                master.wal().whenDurable().get();
            }
            report.put("restart_mappings", mappings + walRecords / 2);
            report.put("restart_wal_records_replayed", (walRecords / 2) * 2);
            report.put("restart_millis_to_serving", restartMillis(root));
        } finally {
            BenchMasterCommand.deleteTree(root);
        }
        Map<String, Double> throughput = new LinkedHashMap<>();
        for (MasterSettings.Durability durability : MasterSettings.Durability.values()) {
            throughput.put(durability.name(), offloadThroughput(durability));
        }
        report.put("offload_keys_per_s_wal", Math.round(throughput.get("wal")));
        report.put("offload_keys_per_s_snapshot", Math.round(throughput.get("snapshot")));
        report.put("wal_cost", round(1 - throughput.get("wal") / throughput.get("snapshot")));
        print(report);
        return ExitCodes.OK;
    }

    /** Commits {@code count} one-page mappings straight through the page service (and so through its log). */
    static void fill(PageService pages, String prefix, int count) {
        for (int i = 0; i < count; i++) {
            String key = prefix + i;
            Placement placement = pages.allocate("bench", key, 64 << 10, false).value();
            if (!pages.notifySuccess("bench", key, placement.withCrc(i)).isOk()) {
                throw new IllegalStateException("notify failed for " + key);
            }
        }
    }

    /** Single-key lookups of base-0..base-999 from one caller, for a fixed time or until {@code until} says stop. */
    static LatencyRecorder lookups(MasterServer master, Duration time, java.util.function.Supplier<AtomicBoolean> until)
            throws Exception {
        LatencyRecorder latencies = new LatencyRecorder();
        try (MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(30))) {
            for (int i = 0; i < 2000; i++) {
                client.getMapping("bench", "base-" + (i % 1000)); // warm-up, on the keys measured below (every state has 1000)
            }
            AtomicBoolean stop = until == null ? null : until.get();
            long end = time == null ? Long.MAX_VALUE : System.nanoTime() + time.toNanos();
            int i = 0;
            while (System.nanoTime() < end && (stop == null || !stop.get())) {
                long start = System.nanoTime();
                client.getMapping("bench", "base-" + (i++ % 1000));
                latencies.record(System.nanoTime() - start);
            }
        }
        return latencies;
    }

    /** Starts `mcctl master start` in a new JVM on the state and times it until it prints that it serves. */
    private long restartMillis(Path root) throws Exception {
        Path out = Files.createTempFile("mcctl-bench-restart", ".out");
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"), Main.class.getName(), "master", "start", "--root", root.toString(),
                "--bind", "127.0.0.1", "--port", "0", "--metrics-port", "0", "--allocation-deadline", "10m"));
        long start = System.nanoTime();
        Process process = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try {
            while (true) {
                if (Files.readString(out).contains("serving gRPC")) {
                    return (System.nanoTime() - start) / 1_000_000;
                }
                if (!process.isAlive()) {
                    throw new CliException(ExitCodes.FAILED, "the restarted master exited with " + process.exitValue());
                }
                if (System.nanoTime() - start > TimeUnit.MINUTES.toNanos(5)) {
                    throw new CliException(ExitCodes.FAILED, "the restarted master did not serve within 5 minutes");
                }
                Thread.sleep(5);
            }
        } finally {
            process.destroy();
            process.waitFor(30, TimeUnit.SECONDS);
            Files.deleteIfExists(out);
        }
    }

    private double offloadThroughput(MasterSettings.Durability durability) throws Exception {
        Path root = Files.createTempDirectory("mcctl-bench-durability");
        try {
            BucketLayout layout = new BucketLayout(root, 256, 64 << 10, 4L << 30);
            try (MasterServer master = MasterServer.start(new MasterServer.Options(layout, "posix", "127.0.0.1", 0, 0,
                    Duration.ofMinutes(10), Duration.ofSeconds(5), durability, null, null, 2, 64L << 20, Map.of()));
                 MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(30))) {
                MasterBenchmark warm = new MasterBenchmark(client, 8, 64 << 10, "warm");
                warm.offload(64, keys / 8 / 4 / 64 * 64, new ArrayList<>());
                MasterBenchmark bench = new MasterBenchmark(client, 8, 64 << 10, "run");
                return bench.offload(64, keys / 8 / 64 * 64, new ArrayList<>()).keysPerSecond();
            }
        } finally {
            BenchMasterCommand.deleteTree(root);
        }
    }

    private void print(Map<String, Object> report) {
        print(spec, output, report);
    }

    /** A report as a FIGURE/VALUE table, or as JSON with {@code -o json}. */
    static void print(CommandSpec spec, OutputMixin output, Map<String, Object> report) {
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(report));
        } else {
            Table table = new Table("FIGURE", "VALUE");
            report.forEach((k, v) -> {
                if (!"machine".equals(k) && !"benchmark".equals(k)) {
                    table.row(k, v);
                }
            });
            out.print(table.render());
        }
        out.flush();
    }

    static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }
}
