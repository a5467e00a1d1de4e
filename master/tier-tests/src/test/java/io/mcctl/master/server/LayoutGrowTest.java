package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GrowLayoutResponse;
import io.mcctl.master.service.PageCheck;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** mcctl layout grow against a real master on loopback over a real root: while serving, across restarts, and its refusals. */
@Timeout(120)
class LayoutGrowTest {

    static final long PAGE = TierCluster.PAGE;
    static final long MIB = TierCluster.MIB;

    @TempDir
    Path root;

    private final Map<String, byte[]> acknowledged = new LinkedHashMap<>();

    private BucketLayout small() {
        return new BucketLayout(root, 4, PAGE, MIB);
    }

    /** Offloads objects of 60 KiB under {@code prefix} until the tier refuses one; returns how many were stored. */
    private int fill(TierWriter writer, String prefix, int most) {
        int stored = 0;
        for (int i = 0; i < most; i++) {
            String key = prefix + i;
            TierWriter.Outcome outcome = writer.offload("t", List.of(TestObjects.object(key, 60 * 1024)), false).get(0);
            if (!outcome.ok()) {
                assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, outcome.code(), outcome.toString());
                return stored;
            }
            acknowledged.put(key, TestObjects.content(key, 60 * 1024));
            stored++;
        }
        return stored;
    }

    private void assertEverythingReadsBack(TierReader reader) {
        List<String> keys = new ArrayList<>(acknowledged.keySet());
        List<TierReader.Outcome> read = reader.get("t", keys);
        for (int i = 0; i < keys.size(); i++) {
            assertTrue(read.get(i).ok(), read.get(i).toString());
            assertArrayEquals(acknowledged.get(keys.get(i)), TestObjects.bytesOf(read.get(i).data()), keys.get(i));
        }
    }

    private static void assertClean(MasterServer master) {
        PageCheck check = master.pages().checkPages(0, false, 100);
        assertTrue(check.clean(), check.toString());
    }

    private void assertFilesAre(BucketLayout layout, long size) throws IOException {
        for (int b = 0; b < layout.bucketCount(); b++) {
            assertEquals(size, Files.size(layout.bucketPath(b)), layout.bucketPath(b).toString());
        }
    }

    @Test
    void a_full_tier_grows_while_serving_and_a_node_with_the_old_size_writes_and_reads_in_the_new_space() throws Exception {
        try (RestartTest.Tier tier = RestartTest.Tier.start(RestartTest.walOptions(small(), Duration.ofSeconds(30)))) {
            int before = fill(tier.writer(), "before-", 1000);
            assertTrue(before > 0 && before < 1000, "the tier filled: " + before);
            assertEquals(MIB, tier.node().layout().getBucketSize());

            try (MasterClient admin = new MasterClient("127.0.0.1:" + tier.master().port(), Duration.ofSeconds(10))) {
                GrowLayoutResponse grown = admin.growLayout(2 * MIB, false);
                assertEquals(MIB, grown.getPreviousBucketSize());
                assertEquals(2 * MIB, grown.getBucketSize());
                assertEquals(4, grown.getFilesExtended());
                assertEquals(2 * MIB, admin.layout().getBucketSize());
            }
            assertFilesAre(small(), 2 * MIB);
            assertEquals(2 * MIB, LayoutFile.read(small().layoutFile()).bucketSize());

            // The node still holds the layout it asked for before the grow: its writes land past its known size.
            assertEquals(MIB, tier.node().layout().getBucketSize());
            int after = fill(tier.writer(), "after-", 1000);
            assertTrue(after >= before - 4, "the grown half took about as many again: " + before + " then " + after);
            assertEquals(2 * MIB, tier.node().layout().getBucketSize(), "the node learnt the new size from the master");
            assertEverythingReadsBack(tier.reader());
            assertClean(tier.master());
        }
        // A restart with the settings of before the grow: the root's record says the buckets grew.
        try (RestartTest.Tier tier = RestartTest.Tier.start(RestartTest.walOptions(small(), Duration.ofSeconds(30)))) {
            assertEquals(2 * MIB, tier.master().pages().layout().bucketSize());
            assertEverythingReadsBack(tier.reader());
            assertClean(tier.master());
        }
    }

    @Test
    void a_snapshot_carries_the_grown_size_and_a_restart_from_it_reads_everything() throws Exception {
        try (RestartTest.Tier tier = RestartTest.Tier.start(RestartTest.walOptions(small(), Duration.ofSeconds(30)))) {
            fill(tier.writer(), "a-", 20);
            tier.client().growLayout(3 * MIB, false);
            fill(tier.writer(), "b-", 1000);
            tier.client().createSnapshot();
            fill(tier.writer(), "c-", 3);
        }
        Path newest = SnapshotFile.list(root.resolve("master")).get(0).path();
        assertEquals(3 * MIB, SnapshotFile.open(newest).meta().getBucketSize());
        try (RestartTest.Tier tier = RestartTest.Tier.start(RestartTest.walOptions(small(), Duration.ofSeconds(30)))) {
            assertEquals(3 * MIB, tier.master().pages().layout().bucketSize());
            assertEverythingReadsBack(tier.reader());
            assertClean(tier.master());
        }
    }

    @Test
    void a_log_that_holds_a_grow_the_record_lacks_is_reconciled_at_start() throws Exception {
        try (RestartTest.Tier tier = RestartTest.Tier.start(RestartTest.walOptions(small(), Duration.ofSeconds(30)))) {
            tier.client().growLayout(2 * MIB, false);
            fill(tier.writer(), "k-", 1000);
        }
        // As after a crash between logging the grow and rewriting the record.
        LayoutFile.Record record = LayoutFile.read(small().layoutFile());
        LayoutFile.rewrite(small().layoutFile(), LayoutFile.withBucketSize(record, MIB));
        try (RestartTest.Tier tier = RestartTest.Tier.start(RestartTest.walOptions(small(), Duration.ofSeconds(30)))) {
            assertEquals(2 * MIB, tier.master().pages().layout().bucketSize());
            assertEquals(2 * MIB, LayoutFile.read(small().layoutFile()).bucketSize());
            assertEquals(record.clusterId(), LayoutFile.read(small().layoutFile()).clusterId());
            assertEverythingReadsBack(tier.reader());
            assertClean(tier.master());
        }
    }

    @Test
    void shrinking_a_size_off_the_page_grid_and_a_size_the_filesystem_cannot_hold_are_refused_and_change_nothing() throws Exception {
        try (RestartTest.Tier tier = RestartTest.Tier.start(RestartTest.walOptions(small(), Duration.ofSeconds(30)))) {
            fill(tier.writer(), "k-", 5);
            byte[] recordBefore = Files.readAllBytes(small().layoutFile());
            long logged = tier.master().wal().lastAppended();
            MasterClient admin = tier.client();

            MasterException shrink = assertThrows(MasterException.class, () -> admin.growLayout(MIB / 2, false));
            assertEquals(ErrorCode.INVALID_PARAMS, shrink.code());
            assertEquals(1, shrink.getMessage().lines().count(), shrink.getMessage());
            assertTrue(shrink.getMessage().contains("bucket size 524288 is smaller than the current 1048576")
                    && shrink.getMessage().contains("allowed is"), shrink.getMessage());

            MasterException offGrid = assertThrows(MasterException.class, () -> admin.growLayout(MIB + 100, false));
            assertEquals(ErrorCode.INVALID_PARAMS, offGrid.code());
            assertTrue(offGrid.getMessage().contains("not a multiple of the page size 4096"), offGrid.getMessage());

            long huge = (1L << 30) * PAGE; // the largest a bucket may be: 4 buckets of it are far beyond this machine's disk
            assertTrue(Files.getFileStore(root).getUsableSpace() < 4 * (huge - MIB), "the test needs a filesystem below 16 TiB");
            MasterException noSpace = assertThrows(MasterException.class, () -> admin.growLayout(huge, false));
            assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, noSpace.code());
            assertEquals(1, noSpace.getMessage().lines().count(), noSpace.getMessage());
            assertTrue(noSpace.getMessage().contains("free"), noSpace.getMessage());

            assertFilesAre(small(), MIB);
            assertArrayEquals(recordBefore, Files.readAllBytes(small().layoutFile()));
            assertEquals(logged, tier.master().wal().lastAppended(), "nothing logged");
            assertEquals(MIB, admin.layout().getBucketSize());

            GrowLayoutResponse same = admin.growLayout(MIB, false);
            assertEquals(MIB, same.getPreviousBucketSize());
            assertEquals(MIB, same.getBucketSize());
            assertEquals(logged, tier.master().wal().lastAppended(), "growing to the size in force logs nothing");
            assertEverythingReadsBack(tier.reader());
        }
    }

    @Test
    void a_node_that_connected_before_the_grow_reads_objects_placed_past_its_known_size() throws Exception {
        try (RestartTest.Tier tier = RestartTest.Tier.start(RestartTest.walOptions(small(), Duration.ofSeconds(30)));
             MasterClient other = new MasterClient("127.0.0.1:" + tier.master().port(), Duration.ofSeconds(10));
             TierNode old = TierNode.connect(other, false, new ClientMetrics())) {
            fill(tier.writer(), "a-", 1000);
            tier.client().growLayout(2 * MIB, false);
            fill(tier.writer(), "b-", 1000);
            assertEquals(MIB, old.layout().getBucketSize());
            assertEverythingReadsBack(new TierReader(old));
            assertEquals(2 * MIB, old.layout().getBucketSize());
        }
    }
}
