package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.bench.FigureReport;
import io.mcctl.cli.bench.LatencyRecorder;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.bench.MappingLoad;
import io.mcctl.cli.bench.MasterBenchmark;
import io.mcctl.cli.bench.MasterProcess;
import io.mcctl.cli.util.FileTrees;
import io.mcctl.cli.util.Rounding;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.CreateSnapshotResponse;
import io.mcctl.master.server.MasterSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl bench restart}: what durability costs: restart time, snapshot cost, WAL vs snapshot throughput. */
@Command(name = "restart", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Runs each master as its own process, as in production, on temporary roots (256 x 4GiB sparse buckets, "
                + "64KiB pages). Fills a master (write-ahead log on) with --mappings mappings over gRPC (8 callers, batch 64), "
                + "asks it for --snapshots snapshots while one caller keeps looking keys up, adds --wal-records more log records, kills it "
                + "(kill -9) and measures: snapshot write time and size, lookup p99 during the snapshot against idle p99, and "
                + "the time from starting a new master process to serving. Then offload-cycle throughput (8 callers, batch 64, "
                + "--keys keys) on fresh masters with --durability wal and with --durability snapshot, alternating, --rounds "
                + "times each; the medians are compared."})
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

    @Option(names = "--snapshots", paramLabel = "N", defaultValue = "3",
            description = "Snapshots taken while lookups are timed; the median p99 ratio is reported (default: ${DEFAULT-VALUE}).")
    int snapshots;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3",
            description = "Throughput runs per durability mode, alternating (default: ${DEFAULT-VALUE}).")
    int rounds;

    static final int CALLERS = 8;
    static final int BATCH = 64;
    static final long OBJECT_SIZE = 64 << 10;

    @Override
    public Integer call() throws Exception {
        if (mappings < 1000 || walRecords < 2 || keys < CALLERS * 640 || rounds < 1 || rounds > 20 || snapshots < 1 || snapshots > 20) {
            throw new CliException(ExitCodes.USAGE, "invalid sizes: allowed are --mappings >= 1000, --wal-records >= 2, --keys >= 5120, "
                    + "--rounds 1..20, --snapshots 1..20");
        }
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("benchmark", "restart");
        report.put("machine", MachineInfo.describe());
        Path root = Files.createTempDirectory("mcctl-bench-restart");
        try {
            try (MasterProcess master = startMaster(root, MasterSettings.Durability.wal);
                 MasterClient client = new MasterClient(master.address(), Duration.ofMinutes(10))) {
                List<List<String>> written = new ArrayList<>();
                new MasterBenchmark(client, CALLERS, OBJECT_SIZE, "base").offload(BATCH, perCaller(mappings), written);
                List<String> probe = written.get(0).subList(0, Math.min(1000, written.get(0).size()));
                // Several snapshots, each against an idle period measured just before it: the tail of one caller
                // moves a lot from second to second on a shared machine.
                List<Double> idleP99 = new ArrayList<>();
                List<Double> duringP99 = new ArrayList<>();
                List<Double> ratios = new ArrayList<>();
                List<Long> snapshotMillis = new ArrayList<>();
                CreateSnapshotResponse last = null;
                for (int i = 0; i < snapshots; i++) {
                    LatencyRecorder idle = MappingLoad.lookups(client, probe, Duration.ofSeconds(2), null);
                    AtomicBoolean snapshotDone = new AtomicBoolean();
                    CreateSnapshotResponse[] taken = new CreateSnapshotResponse[1];
                    Thread snapshotThread = new Thread(() -> {
                        try {
                            taken[0] = client.createSnapshot();
                        } finally {
                            snapshotDone.set(true);
                        }
                    });
                    LatencyRecorder during = MappingLoad.lookups(client, probe, null, () -> {
                        snapshotThread.start();
                        return snapshotDone;
                    });
                    snapshotThread.join();
                    if (taken[0] == null) {
                        throw new CliException(ExitCodes.FAILED, "the snapshot failed; see the master's log");
                    }
                    last = taken[0];
                    snapshotMillis.add(taken[0].getMillis());
                    idleP99.add(Rounding.round(idle.percentileMicros(0.99), 3));
                    duringP99.add(Rounding.round(during.percentileMicros(0.99), 3));
                    ratios.add(Rounding.round(during.percentileMicros(0.99) / idle.percentileMicros(0.99), 3));
                }
                report.put("snapshot_mappings", last.getMappings());
                report.put("snapshot_millis", snapshotMillis);
                report.put("snapshot_bytes", last.getBytes());
                report.put("lookup_p99_idle_us", idleP99);
                report.put("lookup_p99_during_snapshot_us", duringP99);
                report.put("lookup_p99_ratios", ratios);
                report.put("lookup_p99_ratio_median", FigureReport.median(ratios));
                CreateSnapshotResponse[] taken = {last};
                // Each offload cycle logs two records (allocated, committed).
                new MasterBenchmark(client, CALLERS, OBJECT_SIZE, "tail").offload(BATCH, perCaller(walRecords / 2), new ArrayList<>());
                report.put("restart_mappings", taken[0].getMappings() + (long) CALLERS * perCaller(walRecords / 2));
                report.put("restart_wal_records_replayed", 2L * CALLERS * perCaller(walRecords / 2));
                master.kill(); // every acknowledged notify is durable; nothing more to flush
            }
            try (MasterProcess restarted = startMaster(root, MasterSettings.Durability.wal)) {
                report.put("restart_millis_to_serving", restarted.startToServing().toMillis());
            }
        } finally {
            FileTrees.deleteTree(root);
        }
        Map<MasterSettings.Durability, List<Double>> throughput = new LinkedHashMap<>();
        offloadThroughput(MasterSettings.Durability.snapshot); // warms this JVM's client code, so the first measured round is not the slowest
        for (int round = 0; round < rounds; round++) {
            for (MasterSettings.Durability durability : List.of(MasterSettings.Durability.wal, MasterSettings.Durability.snapshot)) {
                throughput.computeIfAbsent(durability, d -> new ArrayList<>()).add(offloadThroughput(durability));
            }
        }
        double wal = FigureReport.median(throughput.get(MasterSettings.Durability.wal));
        double snapshot = FigureReport.median(throughput.get(MasterSettings.Durability.snapshot));
        report.put("offload_keys_per_s_wal", Math.round(wal));
        report.put("offload_keys_per_s_snapshot", Math.round(snapshot));
        report.put("offload_keys_per_s_wal_runs", throughput.get(MasterSettings.Durability.wal).stream().map(Math::round).toList());
        report.put("offload_keys_per_s_snapshot_runs", throughput.get(MasterSettings.Durability.snapshot).stream().map(Math::round).toList());
        report.put("wal_cost", Rounding.round(1 - wal / snapshot, 3));
        print(report);
        return ExitCodes.OK;
    }

    private static long perCaller(long total) {
        return Math.max(BATCH, total / CALLERS / BATCH * BATCH);
    }

    private static MasterProcess startMaster(Path root, MasterSettings.Durability durability) throws Exception {
        return MasterProcess.start(List.of(), Duration.ofMinutes(5), builder -> builder.redirectError(ProcessBuilder.Redirect.DISCARD),
                "--root", root.toString(), "--bucket-count", "256", "--bucket-size", "4GiB", "--page-size", "64KiB",
                "--allocation-deadline", "10m", "--durability", durability.name());
    }

    private double offloadThroughput(MasterSettings.Durability durability) throws Exception {
        Path root = Files.createTempDirectory("mcctl-bench-durability");
        try (MasterProcess master = startMaster(root, durability);
             MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(30))) {
            new MasterBenchmark(client, CALLERS, OBJECT_SIZE, "warm").offload(BATCH, perCaller(keys / 4), new ArrayList<>());
            return new MasterBenchmark(client, CALLERS, OBJECT_SIZE, "run").offload(BATCH, perCaller(keys), new ArrayList<>()).keysPerSecond();
        } finally {
            FileTrees.deleteTree(root);
        }
    }

    private void print(Map<String, Object> report) {
        FigureReport.print(spec, output, report);
    }
}
