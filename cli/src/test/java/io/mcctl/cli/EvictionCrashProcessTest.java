package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.CheckPagesResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.KeyInfo;
import io.mcctl.master.proto.v1.ListKeysResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 of a real master while it evicts: a tier offloaded far past its capacity, killed while the evictor and the
 * allocations' own evictions run, then restarted on the same root, round after round. What the restarted master holds
 * reads back byte-exact, no key a client saw evicted comes back, no two objects share a page and nothing leaks.
 */
@Timeout(180)
@Tag("process")
class EvictionCrashProcessTest {

    static final String TENANT = "t";
    static final int SIZE = 3 * 4096 + 100; // four pages: 64 objects fill the one 1 MiB bucket

    @TempDir
    Path dir;

    McctlProcess.Master start() throws Exception {
        return McctlProcess.Master.start(dir, Map.of(), "--root", dir.resolve("root").toString(), "--bucket-count", "1",
                "--bucket-size", "1MiB", "--page-size", "4KiB", "--read-lease", "200ms",
                // Short: every restart waits out the deadline and grace of the allocations the kill left in flight.
                "--allocation-deadline", "2s", "--allocation-grace", "1s");
    }

    @Test
    void a_master_killed_while_it_evicts_restarts_with_every_object_it_holds_intact_and_nothing_evicted_back() throws Exception {
        SplittableRandom random = new SplittableRandom(7);
        Set<String> seenEvicted = new HashSet<>();
        int next = 0;
        for (int round = 0; round < 3; round++) {
            McctlProcess.Master master = start();
            try (CrashRestartProcessTest.Node node = CrashRestartProcessTest.Node.connect(master)) {
                verify(node, seenEvicted);
                // Four times the tier's capacity, so that eviction runs all along; a random number more before the kill.
                int offloads = 256 + random.nextInt(64);
                List<String> written = new ArrayList<>();
                for (int i = 0; i < offloads; i++) {
                    String key = "k" + next++;
                    TierWriter.Outcome stored = node.writer().offload(TENANT, List.of(source(key)), false).get(0);
                    assertTrue(stored.ok(), "offload of " + key + " into a full tier: " + stored);
                    written.add(key);
                }
                for (String key : written) {
                    if (!node.client().exists(TENANT, key)) {
                        seenEvicted.add(key);
                    }
                }
                // One more durable change after those lookups: the evictions they saw are in the log before it.
                assertTrue(node.writer().offload(TENANT, List.of(source("k" + next)), false).get(0).ok());
                next++;
                // Then more offloads, killed in the middle of them (the evictor and the allocations' evictions at work).
                Thread writer = new Thread(() -> {
                    try (CrashRestartProcessTest.Node busy = CrashRestartProcessTest.Node.connect(master)) {
                        for (int i = 0; i < 10_000; i++) {
                            busy.writer().offload(TENANT, List.of(source("late" + i)), true);
                        }
                    } catch (Exception | AssertionError e) {
                        // the master is killed under it: expected
                    }
                }, "offloads-at-the-kill");
                writer.start();
                Thread.sleep(200 + random.nextInt(400)); // the kill's moment varies; what is checked is the state after it
                CrashRestartProcessTest.kill9(master);
                writer.join(60_000);
                assertFalse(writer.isAlive(), "the writer did not notice the master's death");
            }
        }
        McctlProcess.Master last = start();
        try (CrashRestartProcessTest.Node node = CrashRestartProcessTest.Node.connect(last)) {
            verify(node, seenEvicted);
            assertFalse(seenEvicted.isEmpty(), "the rounds evicted nothing, so they tested nothing");
        } finally {
            last.process().destroy();
            last.process().waitFor();
        }
    }

    /** Every mapping reads back its own bytes, no key seen evicted is there, no overlap, no leak, no false free page. */
    static void verify(CrashRestartProcessTest.Node node, Set<String> seenEvicted) throws Exception {
        MasterClient client = node.client();
        List<DistributedDiskDescriptor> mappings = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        String token = "";
        do {
            ListKeysResponse page = client.listKeys(TENANT, "", 500, token);
            for (KeyInfo info : page.getKeysList()) {
                keys.add(info.getKey());
                mappings.add(info.getDistributedDisk());
            }
            token = page.getNextPageToken();
        } while (!token.isEmpty());
        for (String key : keys) {
            assertFalse(seenEvicted.contains(key), key + " was evicted before the crash and came back after the restart");
        }
        CrashRestartProcessTest.assertNoOverlap(mappings);
        if (!keys.isEmpty()) {
            List<TierReader.Outcome> read = node.reader().get(TENANT, keys);
            for (TierReader.Outcome outcome : read) {
                if (outcome.status() == TierReader.Status.NOT_FOUND) {
                    continue; // evicted since the listing: the restarted tier is above its high watermark and evicts
                }
                assertTrue(outcome.ok(), outcome.key() + ": " + outcome.status() + " " + outcome.message());
                assertArrayEquals(content(outcome.key()), CrashRestartProcessTest.bytes(outcome.data()), outcome.key());
            }
        }
        assertTrue(CrashRestartProcessTest.await(Duration.ofSeconds(30), () -> {
            GetStatsResponse stats = client.stats();
            return stats.getInFlightAllocations() == 0 && stats.getQuarantinedPages() == 0;
        }), "allocations from before the crash expire, quarantine drains: " + client.stats());
        CheckPagesResponse check = client.checkPages(false, 0, 100);
        assertEquals(0, check.getLeakedPages() + check.getOverlapPages() + check.getFalseFreePages(), check.toString());
    }

    static TierWriter.ObjectSource source(String key) {
        return new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(content(key))));
    }

    /** Bytes that follow from the key alone, different for every key. */
    static byte[] content(String key) {
        return CrashRestartProcessTest.content(TENANT, key, SIZE);
    }
}
