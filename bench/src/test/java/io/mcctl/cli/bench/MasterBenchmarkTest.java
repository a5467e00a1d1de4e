package io.mcctl.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The benchmark's phases offload new keys every time, so that none is measured on allocations refused as existing. */
@Timeout(120)
class MasterBenchmarkTest {

    @TempDir
    Path dir;

    @Test
    void offload_phases_run_again_on_one_benchmark_offload_new_keys_and_none_fails() throws Exception {
        // 4 sparse buckets of 4 GiB: room for every phase, so a failure can only be a key offloaded before.
        try (MasterServer master = MasterServer.start(MasterServer.Options.builder(new BucketLayout(dir, 4, 64 << 10, 4L << 30))
                .build());
             MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(30), ClientSecurity.NONE,
                     MasterClient.Transport.STREAM)) {
            MasterBenchmark bench = new MasterBenchmark(client, 2, 4096, "run");
            List<List<String>> written = new ArrayList<>();
            for (int phase = 0; phase < 4; phase++) {
                MasterBenchmark.Phase timed = bench.offloadFor(8, 0.2, written, 1_000, phase % 2 == 1);
                assertTrue(timed.keys() > 0, timed::toString);
                assertEquals(0, timed.failures(), "phase " + phase + " offloaded keys that already existed: " + timed);
            }
            for (int phase = 0; phase < 2; phase++) {
                MasterBenchmark.Phase counted = bench.offload(8, 64, new ArrayList<>());
                assertEquals(0, counted.failures(), "phase " + phase + " offloaded keys that already existed: " + counted);
            }
            MasterBenchmark.Phase lookups = bench.lookupFor(8, written, 0.2, true);
            assertEquals(0, lookups.failures(), "a key the offload phases (packed or not) said committed was not found: " + lookups);
            long distinct = written.stream().flatMap(List::stream).distinct().count();
            assertEquals(written.stream().mapToLong(List::size).sum(), distinct, "a key kept twice");
        }
    }
}
