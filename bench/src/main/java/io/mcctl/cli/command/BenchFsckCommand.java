package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.bench.FigureReport;
import io.mcctl.cli.bench.LatencyRecorder;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.bench.MappingLoad;
import io.mcctl.cli.util.FileTrees;
import io.mcctl.cli.util.Rounding;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.tools.fsck.Fsck;
import io.mcctl.tools.fsck.LiveFsck;
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

/** {@code mcctl bench fsck}: how long a full fsck takes, live and offline, and what the live one costs serving. */
@Command(name = "fsck", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Builds a master state of --mappings one-page mappings on a temporary root (256 x 4GiB sparse buckets of "
                + "64KiB pages: 65,536 pages each) and measures, as the median of --runs runs: a full live fsck (the master's page "
                + "check plus this node's bucket file checks), the longest the master's check held any one lock, lookup p99 while "
                + "live checks run back to back against idle p99, and a full offline fsck of the state directory (recovery "
                + "included). The snapshot write time of the same state is reported as a yardstick of the machine's speed."})
public final class BenchFsckCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--mappings", paramLabel = "N", defaultValue = "1000000", description = "Mappings in the state (default: ${DEFAULT-VALUE}).")
    int mappings;

    @Option(names = "--runs", paramLabel = "N", defaultValue = "3", description = "Runs of each fsck; the median is reported (default: ${DEFAULT-VALUE}).")
    int runs;

    @Override
    public Integer call() throws Exception {
        if (mappings < 1000 || runs < 1 || runs > 50) {
            throw new CliException(ExitCodes.USAGE, "invalid sizes: allowed are --mappings >= 1000 and --runs 1..50");
        }
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("benchmark", "fsck");
        report.put("machine", MachineInfo.describe());
        report.put("mappings", mappings);
        Path root = Files.createTempDirectory("mcctl-bench-fsck");
        try {
            BucketLayout layout = new BucketLayout(root, 256, 64 << 10, 4L << 30);
            MasterServer.Options options = MasterServer.Options.builder(layout).allocationDeadline(Duration.ofMinutes(10))
                    .snapshotInterval(null).build();
            Path stateDir;
            try (MasterServer master = MasterServer.start(options);
                 MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofMinutes(2))) {
                MappingLoad.fill(master.pages(), "base-", mappings);
                master.wal().whenDurable().get();
                report.put("snapshot_millis", master.snapshot().millis());
                stateDir = master.options().resolvedStateDir();

                List<Double> liveMillis = new ArrayList<>();
                List<Double> pauseMillis = new ArrayList<>();
                for (int i = 0; i < runs; i++) {
                    long start = System.nanoTime();
                    Fsck.Report live = LiveFsck.run(client, new LiveFsck.Options(false, -1, false, 0), Fsck.DeepProgress.NONE);
                    liveMillis.add((System.nanoTime() - start) / 1e6);
                    pauseMillis.add(live.live().longestHoldMicros() / 1000.0);
                    if (live.exitCode() != Fsck.EXIT_CLEAN) {
                        throw new CliException(ExitCodes.FAILED, "the live fsck found errors in a clean state: " + live.errors());
                    }
                }
                report.put("live_fsck_millis", Rounding.round(FigureReport.median(liveMillis), 3));
                report.put("live_longest_lock_hold_millis", Rounding.round(FigureReport.median(pauseMillis), 3));

                LatencyRecorder idle = MappingLoad.lookups(master, Duration.ofSeconds(3), null);
                AtomicBoolean checksDone = new AtomicBoolean();
                Thread checks = new Thread(() -> {
                    try {
                        for (int i = 0; i < runs; i++) {
                            client.checkPages(false, -1, 1000);
                        }
                    } finally {
                        checksDone.set(true);
                    }
                });
                LatencyRecorder during = MappingLoad.lookups(master, null, () -> {
                    checks.start();
                    return checksDone;
                });
                checks.join();
                report.put("lookup_p99_idle_us", Rounding.round(idle.percentileMicros(0.99), 3));
                report.put("lookup_p99_during_live_fsck_us", Rounding.round(during.percentileMicros(0.99), 3));
                report.put("lookup_p99_ratio", Rounding.round(during.percentileMicros(0.99) / idle.percentileMicros(0.99), 3));
            }
            List<Double> offlineMillis = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                long start = System.nanoTime();
                Fsck.Report offline = Fsck.run(new Fsck.Options(stateDir, null, null, false, 0), Fsck.DeepProgress.NONE);
                offlineMillis.add((System.nanoTime() - start) / 1e6);
                if (offline.exitCode() != Fsck.EXIT_CLEAN) {
                    throw new CliException(ExitCodes.FAILED, "the offline fsck found errors in a clean state: " + offline.errors());
                }
            }
            report.put("offline_fsck_millis", Rounding.round(FigureReport.median(offlineMillis), 3));
        } finally {
            FileTrees.deleteTree(root);
        }
        FigureReport.print(spec, output, report);
        return ExitCodes.OK;
    }
}
