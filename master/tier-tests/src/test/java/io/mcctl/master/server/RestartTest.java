package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.proto.v1.KeyInfo;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A master stopped and started again on the same root, in this JVM: what was acknowledged is there, byte for byte. */
@Timeout(90)
class RestartTest {

    static final long PAGE = TierCluster.PAGE;

    @TempDir
    Path root;

    /** A master and one node (client, fd pool, writer, reader). */
    record Tier(MasterServer master, MasterClient client, TierNode node, TierWriter writer, TierReader reader) implements AutoCloseable {

        static Tier start(MasterServer.Options options) throws IOException {
            MasterServer master = MasterServer.start(options);
            MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(10));
            try {
                TierNode node = TierNode.connect(client, true, new ClientMetrics());
                return new Tier(master, client, node, new TierWriter(node), new TierReader(node));
            } catch (IOException | RuntimeException e) {
                client.close();
                master.close();
                throw e;
            }
        }

        @Override
        public void close() throws IOException {
            try {
                node.close();
            } finally {
                client.close();
                master.close();
            }
        }
    }

    static MasterServer.Options walOptions(BucketLayout layout, Duration deadline) {
        return MasterServer.Options.builder(layout).fsType("test").allocationDeadline(deadline).build();
    }

    static MasterServer.Options snapshotOptions(BucketLayout layout) {
        return MasterServer.Options.builder(layout).fsType("test").durability(MasterSettings.Durability.snapshot)
                .snapshotInterval(null).build();
    }

    /** What the test expects the tier to hold: tenant, then key, then bytes. */
    final Map<String, Map<String, byte[]>> expected = new TreeMap<>();

    /** Offloads {@code keys} (size from the index) and records each acknowledged one. */
    void offload(Tier tier, String tenant, List<String> keys, int sizeSeed, boolean overwrite) {
        List<TierWriter.ObjectSource> objects = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            objects.add(TestObjects.object(keys.get(i), size(i + sizeSeed)));
        }
        for (TierWriter.Outcome outcome : tier.writer().offload(tenant, objects, overwrite)) {
            assertTrue(outcome.ok(), outcome.toString());
            int i = keys.indexOf(outcome.key());
            expected.computeIfAbsent(tenant, t -> new LinkedHashMap<>()).put(outcome.key(), TestObjects.content(outcome.key(), size(i + sizeSeed)));
        }
    }

    static int size(int n) {
        return 1 + (n * 7919) % 40_000;
    }

    void remove(Tier tier, String tenant, String key) {
        tier.client().remove(tenant, key);
        expected.get(tenant).remove(key);
    }

    /** Every expected key reads back byte-exact, the removed ones are misses, and the stats account for every page. */
    void assertHoldsExactlyWhatWasAcknowledged(Tier tier, Set<String> removedKeys) {
        long mappings = 0;
        long pages = 0;
        for (Map.Entry<String, Map<String, byte[]>> tenant : expected.entrySet()) {
            List<String> keys = new ArrayList<>(tenant.getValue().keySet());
            List<TierReader.Outcome> read = tier.reader().get(tenant.getKey(), keys);
            for (int i = 0; i < keys.size(); i++) {
                TierReader.Outcome outcome = read.get(i);
                assertTrue(outcome.ok(), tenant.getKey() + "/" + keys.get(i) + ": " + outcome.status() + " " + outcome.message());
                assertArrayEquals(tenant.getValue().get(keys.get(i)), TestObjects.bytesOf(outcome.data()), tenant.getKey() + "/" + keys.get(i));
                pages += tier.node().pagesFor(outcome.descriptor().getObjectSize());
            }
            mappings += keys.size();
            if (!removedKeys.isEmpty()) {
                List<String> removed = new ArrayList<>(removedKeys);
                for (TierReader.Outcome outcome : tier.reader().get(tenant.getKey(), removed)) {
                    if (!tenant.getValue().containsKey(outcome.key())) {
                        assertEquals(TierReader.Status.NOT_FOUND, outcome.status(), tenant.getKey() + "/" + outcome.key() + " was removed");
                    }
                }
            }
        }
        GetStatsResponse stats = tier.client().stats();
        assertEquals(mappings, stats.getMappings());
        assertEquals(0, stats.getInFlightAllocations());
        assertEquals(pages + stats.getQuarantinedPages(), stats.getPagesAllocated(), "every allocated page is a mapping's or quarantined");
    }

    static List<String> keys(String prefix, int count) {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            keys.add(prefix + i);
        }
        return keys;
    }

    @Test
    void every_acknowledged_key_reads_back_byte_exact_after_restarts_without_a_snapshot() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 8);
        try (Tier tier = Tier.start(walOptions(layout, Duration.ofSeconds(60)))) {
            for (int batch = 0; batch < 6; batch++) {
                offload(tier, "alpha", keys("layer-" + batch + "/block-", 10), batch * 10, false);
            }
            offload(tier, "beta", keys("layer-0/block-", 10), 1000, false); // same names, another tenant, other bytes
            offload(tier, "alpha", keys("layer-1/block-", 4), 2000, true); // overwrites
            for (int i = 0; i < 3; i++) {
                remove(tier, "alpha", "layer-2/block-" + i);
            }
            remove(tier, "beta", "layer-0/block-9");
        }
        Set<String> removed = Set.of("layer-2/block-0", "layer-2/block-1", "layer-2/block-2", "layer-0/block-9");
        assertEquals(List.of(), SnapshotFile.list(layout.root().resolve("master")), "the master stopped without a snapshot");

        try (Tier tier = Tier.start(walOptions(layout, Duration.ofSeconds(60)))) {
            assertNull(tier.master().recovered().snapshot);
            assertTrue(tier.master().recovered().replayed > 0);
            assertHoldsExactlyWhatWasAcknowledged(tier, removed);
            offload(tier, "beta", keys("after-restart/", 5), 3000, false);
        }
        try (Tier tier = Tier.start(walOptions(layout, Duration.ofSeconds(60)))) { // a second restart: the log of both runs
            assertHoldsExactlyWhatWasAcknowledged(tier, removed);
            assertEquals(3, WalSegments.list(layout.root().resolve("master")).size(), "one segment per run");
        }
    }

    @Test
    void a_restart_after_a_snapshot_loads_it_and_replays_only_the_log_after_it() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 8);
        long covered;
        try (Tier tier = Tier.start(walOptions(layout, Duration.ofSeconds(60)))) {
            offload(tier, "alpha", keys("before/", 20), 0, false);
            covered = tier.master().snapshot().walSequence();
            offload(tier, "alpha", keys("after/", 20), 100, false);
            for (int i = 0; i < 5; i++) {
                remove(tier, "alpha", "before/" + i);
            }
        }
        try (Tier tier = Tier.start(walOptions(layout, Duration.ofSeconds(60)))) {
            assertNotNull(tier.master().recovered().snapshot);
            assertEquals(covered, tier.master().recovered().snapshotSequence);
            // Every record after the snapshot and none before it: 20 keys (allocated + committed each), 5 removes, and the
            // reservations their allocations opened and closed.
            assertEquals(tier.master().recovered().lastSequence - covered, tier.master().recovered().replayed);
            assertTrue(tier.master().recovered().replayed >= 45, "replayed " + tier.master().recovered().replayed);
            assertHoldsExactlyWhatWasAcknowledged(tier, Set.of("before/0", "before/1", "before/2", "before/3", "before/4"));
        }
    }

    @Test
    void the_next_snapshot_deletes_the_temp_files_of_snapshots_that_a_killed_master_left_unfinished() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 8);
        MasterServer.Options options = walOptions(layout, Duration.ofSeconds(60));
        Path stateDir = options.resolvedStateDir();
        Path finished;
        try (Tier tier = Tier.start(options)) {
            offload(tier, "alpha", keys("before/", 20), 0, false);
            finished = tier.master().snapshot().path();
        }
        // What a master killed while it wrote snapshots leaves: their temp files, cut short (no footer), never renamed.
        byte[] whole = Files.readAllBytes(finished);
        List<Path> unfinished = List.of(stateDir.resolve(SnapshotFile.fileName(1) + ".tmp"), stateDir.resolve(SnapshotFile.fileName(1L << 40) + ".tmp"));
        for (Path temp : unfinished) {
            Files.write(temp, Arrays.copyOf(whole, whole.length / 2));
        }
        Path notASnapshot = Files.writeString(stateDir.resolve("notes.snap.tmp.txt"), "an operator's file");
        try (Tier tier = Tier.start(options)) {
            assertEquals(finished, tier.master().recovered().snapshot, "recovery reads finished snapshots only");
            offload(tier, "alpha", keys("after/", 20), 100, false);
            for (Path temp : unfinished) {
                assertTrue(Files.exists(temp), "nothing is deleted before a snapshot: " + temp);
            }
            tier.master().snapshot();
            for (Path temp : unfinished) {
                assertTrue(Files.notExists(temp), "left behind: " + temp);
            }
            assertTrue(Files.exists(notASnapshot), "only snapshots' temp files are deleted");
        }
        try (Tier tier = Tier.start(options)) {
            assertHoldsExactlyWhatWasAcknowledged(tier, Set.of());
        }
    }

    @Test
    void an_allocation_in_flight_at_the_restart_keeps_its_pages_until_its_deadline_and_a_notify_within_it_commits() throws Exception {
        Duration deadline = Duration.ofSeconds(4);
        BucketLayout layout = TierCluster.smallLayout(root, 2); // 512 pages in all
        long allocatedAt = System.currentTimeMillis();
        DistributedDiskDescriptor abandoned;
        DistributedDiskDescriptor writing;
        byte[] content = TestObjects.content("writing", 50 * (int) PAGE);
        int crc;
        try (Tier tier = Tier.start(walOptions(layout, deadline))) {
            abandoned = tier.client().allocate("alpha", "abandoned", 100 * PAGE, false).getDistributedDisk();
            writing = tier.client().allocate("alpha", "writing", content.length, false).getDistributedDisk();
            crc = tier.node().io().write(Path.of(writing.getFilePath()), writing.getOffset(), ByteBuffer.wrap(content));
        } // the writer is still writing (or about to notify) when the master goes down

        try (Tier tier = Tier.start(TierCluster.options(layout, deadline, Duration.ofSeconds(5), Duration.ofSeconds(1)))) {
            GetStatsResponse stats = tier.client().stats();
            // New allocations take every free page, and none of the in-flight ones.
            List<String> fill = keys("fill-", 400);
            List<AllocationResult> results = tier.client().batchAllocate(fill, Collections.nCopies(fill.size(), "beta"),
                    Collections.nCopies(fill.size(), PAGE), false).getResultsList();
            // All of the above ran before the deadline of the allocations made before the restart, or nothing can be said.
            assumeTrue(System.currentTimeMillis() < allocatedAt + deadline.toMillis(),
                    "the restart outlasted the allocation deadline: the in-flight pages could not be checked before it");
            assertEquals(2, stats.getInFlightAllocations());
            assertEquals(150, stats.getPagesAllocated());
            List<String> granted = new ArrayList<>();
            List<DistributedDiskDescriptor> grantedPlaces = new ArrayList<>();
            for (int i = 0; i < results.size(); i++) {
                AllocationResult r = results.get(i);
                if (r.getStatus().getError() == ErrorCode.OK) {
                    assertDisjoint(r.getDistributedDisk(), abandoned);
                    assertDisjoint(r.getDistributedDisk(), writing);
                    granted.add(fill.get(i));
                    grantedPlaces.add(r.getDistributedDisk());
                } else {
                    assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, r.getStatus().getError(), r.toString());
                }
            }
            assertEquals(512 - 150, granted.size(), "every page but the in-flight ones was handed out");

            List<KeyError> notified = tier.client().notifySuccess(List.of("writing"), List.of("alpha"),
                    List.of(writing.toBuilder().setCrc32C(crc).build())).getResultsList();
            assumeTrue(System.currentTimeMillis() < allocatedAt + deadline.toMillis(), "the notify came after the deadline");
            assertEquals(ErrorCode.OK, notified.get(0).getError(), notified.toString());
            TierReader.Outcome read = tier.reader().get("alpha", List.of("writing")).get(0);
            assertTrue(read.ok(), read.toString());
            assertArrayEquals(content, TestObjects.bytesOf(read.data()));

            tier.client().batchFree(granted, Collections.nCopies(granted.size(), "beta"), grantedPlaces);
            assertTrue(TierCluster.await(Duration.ofSeconds(20), () -> tier.client().stats().getInFlightAllocations() == 0),
                    "the abandoned allocation expires at its deadline");
            // Its writer might still be writing: the pages wait out the grace in quarantine, then are free.
            assertTrue(TierCluster.await(Duration.ofSeconds(20), () -> tier.client().stats().getPagesAllocated() == 50),
                    "its pages are free again after the grace; only the committed object's remain");
            List<KeyError> late = tier.client().notifySuccess(List.of("abandoned"), List.of("alpha"),
                    List.of(abandoned.toBuilder().setCrc32C(1).build())).getResultsList();
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, late.get(0).getError());
            List<String> again = keys("again-", 500);
            long grantedAgain = tier.client().batchAllocate(again, Collections.nCopies(again.size(), "beta"),
                    Collections.nCopies(again.size(), PAGE), false).getResultsList().stream()
                    .filter(r -> r.getStatus().getError() == ErrorCode.OK).count();
            assertEquals(512 - 50, grantedAgain, "the reclaimed pages are handed out again");
        }
    }

    static void assertDisjoint(DistributedDiskDescriptor a, DistributedDiskDescriptor b) {
        if (!a.getFilePath().equals(b.getFilePath())) {
            return;
        }
        long aEnd = a.getOffset() + (a.getObjectSize() + PAGE - 1) / PAGE * PAGE;
        long bEnd = b.getOffset() + (b.getObjectSize() + PAGE - 1) / PAGE * PAGE;
        assertTrue(aEnd <= b.getOffset() || bEnd <= a.getOffset(), "overlap: " + a + " and " + b);
    }

    @Test
    void snapshot_durability_loses_the_changes_after_the_last_snapshot_and_keeps_everything_before_it() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 8);
        Map<String, byte[]> atSnapshot;
        try (Tier tier = Tier.start(snapshotOptions(layout))) {
            offload(tier, "alpha", keys("kept/", 20), 0, false);
            offload(tier, "beta", keys("kept/", 5), 50, false);
            tier.master().snapshot();
            atSnapshot = new HashMap<>(expected.get("alpha"));
            offload(tier, "alpha", keys("lost/", 10), 100, false);
            tier.client().remove("alpha", "kept/0"); // after the snapshot: lost as well, so the key comes back
        }
        assertEquals(List.of(), WalSegments.list(layout.root().resolve("master")), "no log under snapshot durability");
        try (Tier tier = Tier.start(snapshotOptions(layout))) {
            assertNotNull(tier.master().recovered().snapshot);
            expected.put("alpha", new LinkedHashMap<>(atSnapshot));
            assertHoldsExactlyWhatWasAcknowledged(tier, Set.of());
            List<TierReader.Outcome> lost = tier.reader().get("alpha", keys("lost/", 10));
            for (TierReader.Outcome outcome : lost) {
                assertEquals(TierReader.Status.NOT_FOUND, outcome.status(), outcome.key() + " came after the snapshot");
            }
            List<KeyInfo> listed = tier.client().listKeys("alpha", "", 1000, "").getKeysList();
            assertEquals(20, listed.size());
        }
    }
}
