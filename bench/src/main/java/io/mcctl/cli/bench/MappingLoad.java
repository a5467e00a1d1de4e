package io.mcctl.cli.bench;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.server.MasterServer;
import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/** The mappings the restart and fsck benchmarks fill a master with, and the lookups they time against it. */
public final class MappingLoad {

    private MappingLoad() {
    }

    /** Commits {@code count} one-page mappings straight through the page service (and so through its log). */
    public static void fill(PageService pages, String prefix, int count) {
        for (int i = 0; i < count; i++) {
            String key = prefix + i;
            Placement placement = pages.allocate("bench", key, 64 << 10, false).value();
            if (!pages.notifySuccess("bench", key, placement.withCrc(i)).isOk()) {
                throw new IllegalStateException("notify failed for " + key);
            }
        }
    }

    /** Single-key lookups of base-0..base-999 (tenant bench) of an embedded master; see {@link #lookups(MasterClient, List, Duration, java.util.function.Supplier)}. */
    public static LatencyRecorder lookups(MasterServer master, Duration time, java.util.function.Supplier<AtomicBoolean> until) throws Exception {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            keys.add("base-" + i);
        }
        try (MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(30))) {
            return lookups(client, keys, time, until);
        }
    }

    /** Single-key lookups of {@code keys} (tenant bench) from one caller, for a fixed time or until {@code until} says stop. */
    public static LatencyRecorder lookups(MasterClient client, List<String> keys, Duration time, java.util.function.Supplier<AtomicBoolean> until) {
        LatencyRecorder latencies = new LatencyRecorder();
        for (int i = 0; i < 2000; i++) {
            client.getMapping("bench", keys.get(i % keys.size())); // warm-up, on the keys measured below
        }
        AtomicBoolean stop = until == null ? null : until.get();
        long end = time == null ? Long.MAX_VALUE : System.nanoTime() + time.toNanos();
        int i = 0;
        while (System.nanoTime() < end && (stop == null || !stop.get())) {
            long start = System.nanoTime();
            client.getMapping("bench", keys.get(i++ % keys.size()));
            latencies.record(System.nanoTime() - start);
        }
        return latencies;
    }
}
