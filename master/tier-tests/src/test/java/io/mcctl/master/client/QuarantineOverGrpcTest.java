package io.mcctl.master.client;

import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.GetStatsResponse;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Delete, then re-allocate: pages of a removed key that a reader was given stay out of reach until the
 * read lease has run out (the master's reaper releases them), so a reader never sees them reused under it.
 */
@Timeout(60)
class QuarantineOverGrpcTest {

    static final Duration LEASE = Duration.ofSeconds(3); // generous, so a slow machine never outlives it between two calls
    static final int HOME = 3;
    static final int SIZE = 4 * 4096;
    static final String TENANT = "t";

    @TempDir
    Path root;
    TierCluster cluster;
    TierCluster.Node a;
    TierCluster.Node b;
    List<String> keys;
    /** Where the first key was written: known to its writer without any lookup. */
    DistributedDiskDescriptor written;

    @BeforeEach
    void start() throws IOException {
        cluster = TierCluster.start(TierCluster.smallLayout(root, 8), Duration.ofSeconds(60), LEASE, 2);
        a = cluster.node(0);
        b = cluster.node(1);
        keys = TestObjects.keysWithHome(cluster.layout(), HOME, "q-", 3);
        TierWriter.Outcome outcome = a.writer().offload(TENANT, List.of(object(keys.get(0), SIZE)), false).get(0);
        assertTrue(outcome.ok(), outcome.toString());
        written = outcome.descriptor();
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    static boolean overlap(DistributedDiskDescriptor x, DistributedDiskDescriptor y) {
        return x.getFilePath().equals(y.getFilePath())
                && x.getOffset() < y.getOffset() + y.getObjectSize() && y.getOffset() < x.getOffset() + x.getObjectSize();
    }

    @Test
    void pages_of_a_removed_key_that_was_read_are_reused_only_after_the_read_lease() throws InterruptedException {
        TierReader.Outcome read = b.reader().get(TENANT, List.of(keys.get(0))).get(0); // grants a read lease
        assertTrue(read.ok(), read.toString());
        DistributedDiskDescriptor removed = read.descriptor();
        a.client().remove(TENANT, keys.get(0));

        GetStatsResponse during = a.client().stats();
        assertEquals(0, during.getMappings());
        assertEquals(4, during.getQuarantinedPages(), "the removed pages wait for the lease");
        assertEquals(4, during.getBuckets(HOME).getPagesAllocated());

        DistributedDiskDescriptor meanwhile = a.client().allocate(TENANT, keys.get(1), SIZE, false).getDistributedDisk();
        assertEquals(removed.getFilePath(), meanwhile.getFilePath(), "same home bucket");
        assertTrue(!overlap(removed, meanwhile), "an allocation during the lease gets other pages: " + meanwhile + " vs " + removed);
        a.client().free(TENANT, keys.get(1), meanwhile);

        assertTrue(TierCluster.await(Duration.ofSeconds(20), () -> a.client().stats().getQuarantinedPages() == 0),
                "the reaper releases the quarantine once the lease has run out");
        GetStatsResponse after = a.client().stats();
        assertEquals(0, after.getPagesAllocated());
        assertEquals(0, after.getBuckets(HOME).getPagesAllocated());

        DistributedDiskDescriptor reused = a.client().allocate(TENANT, keys.get(2), SIZE, false).getDistributedDisk();
        assertEquals(removed.getFilePath(), reused.getFilePath());
        assertEquals(removed.getOffset(), reused.getOffset(), "the released pages are allocatable again (first fit from the lowest freed page)");
    }

    @Test
    void pages_of_a_removed_key_nobody_read_are_reusable_at_once() {
        DistributedDiskDescriptor before = written; // no lookup: every call that hands out a descriptor leases it
        a.client().remove(TENANT, keys.get(0));
        assertEquals(0, a.client().stats().getQuarantinedPages());
        DistributedDiskDescriptor next = a.client().allocate(TENANT, keys.get(1), SIZE, false).getDistributedDisk();
        assertEquals(before.getFilePath(), next.getFilePath());
        assertEquals(before.getOffset(), next.getOffset());
    }

    @Test
    void an_overwrite_of_a_key_being_read_keeps_the_old_bytes_readable_during_the_lease() throws IOException {
        TierReader.Outcome read = b.reader().get(TENANT, List.of(keys.get(0))).get(0);
        assertTrue(read.ok());
        TierWriter.Outcome overwritten = a.writer().offload(TENANT,
                List.of(new TierWriter.ObjectSource(keys.get(0), object("v2-" + keys.get(0), SIZE).parts())), true).get(0);
        assertTrue(overwritten.ok(), overwritten.toString());
        assertTrue(!overlap(read.descriptor(), overwritten.descriptor()), "the new version gets other pages");
        assertEquals(4, a.client().stats().getQuarantinedPages());
        assertEquals(1, a.client().stats().getMappings());
        // The reader holding the old descriptor still finds the old bytes where it was told to look.
        ByteBuffer again = b.tier().io().read(Path.of(read.descriptor().getFilePath()), read.descriptor().getOffset(), SIZE,
                read.descriptor().getCrc32C());
        assertArrayEquals(TestObjects.content(keys.get(0), SIZE), TestObjects.bytesOf(again));
        // New readers get the new version.
        assertArrayEquals(TestObjects.content("v2-" + keys.get(0), SIZE),
                TestObjects.bytesOf(b.reader().get(TENANT, List.of(keys.get(0))).get(0).data()));
    }
}
