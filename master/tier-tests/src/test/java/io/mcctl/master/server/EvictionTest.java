package io.mcctl.master.server;

import io.mcctl.master.service.eviction.EvictionPolicy;
import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.CheckPagesResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.service.Change;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The tier as a cache: a real master over gRPC with eviction on, filled far past its capacity. */
@Timeout(120)
class EvictionTest {

    static final int SIZE = 3 * 4096 + 100; // four pages
    /** 4 buckets of 1 MiB in 4 KiB pages: 1,024 pages, 256 objects of four pages. */
    static final int CAPACITY_OBJECTS = 256;

    @TempDir
    Path root;

    static MasterServer.Options options(BucketLayout layout, Duration lease) {
        return MasterServer.Options.builder(layout).fsType("test").readLease(lease).snapshotInterval(null)
                .allocationGrace(Duration.ofSeconds(10)).eviction(new EvictionPolicy(true, 0.9, 0.7)).build();
    }

    @Test
    void four_times_the_capacity_of_offloads_all_succeed_and_the_most_recent_read_back() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 4);
        List<String> keys = new ArrayList<>();
        try (TierCluster cluster = TierCluster.start(options(layout, Duration.ofMillis(200)), 1)) {
            TierCluster.Node node = cluster.node(0);
            for (int i = 0; i < 4 * CAPACITY_OBJECTS; i++) {
                String key = "obj-" + i;
                TierWriter.Outcome outcome = node.writer().offload("t", List.of(object(key, SIZE)), false).get(0);
                assertTrue(outcome.ok(), key + ": " + outcome);
                keys.add(key);
            }
            PageService pages = cluster.master().pages();
            long evicted = pages.evictedTotal(Change.RemoveReason.EVICTED_WATERMARK) + pages.evictedTotal(Change.RemoveReason.EVICTED_ALLOCATION);
            assertTrue(evicted >= 3 * CAPACITY_OBJECTS - 10, "evicted " + evicted);
            // The last tenth of the capacity was written after every eviction that could take it: it is all there.
            List<String> recent = keys.subList(keys.size() - CAPACITY_OBJECTS / 10, keys.size());
            List<TierReader.Outcome> read = node.reader().get("t", recent);
            for (int i = 0; i < recent.size(); i++) {
                assertTrue(read.get(i).ok(), recent.get(i) + ": " + read.get(i));
                assertArrayEquals(TestObjects.content(recent.get(i), SIZE), TestObjects.bytesOf(read.get(i).data()));
            }
            // Whatever is left reads back byte-exact or is a clean miss; nothing overlaps, nothing leaked. The evictor may
            // still be bringing the tier down meanwhile: the mappings only go down while nothing is written.
            long before = pages.mappingCount();
            List<TierReader.Outcome> all = node.reader().get("t", keys);
            int present = 0;
            for (int i = 0; i < keys.size(); i++) {
                TierReader.Outcome o = all.get(i);
                if (o.ok()) {
                    present++;
                    assertArrayEquals(TestObjects.content(keys.get(i), SIZE), TestObjects.bytesOf(o.data()), keys.get(i));
                } else {
                    assertEquals(TierReader.Status.NOT_FOUND, o.status(), keys.get(i) + ": " + o);
                }
            }
            long after = pages.mappingCount();
            assertTrue(after <= present && present <= before, "read " + present + " objects while the tier held " + before + " then " + after);
            CheckPagesResponse check = node.client().checkPages(false, 0, 100);
            assertEquals(0, check.getLeakedPages() + check.getOverlapPages() + check.getFalseFreePages(), check.toString());
        }
    }

    @Test
    void a_key_read_in_a_loop_survives_while_others_are_evicted() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 4);
        try (TierCluster cluster = TierCluster.start(options(layout, Duration.ofMillis(100)), 1)) {
            TierCluster.Node node = cluster.node(0);
            assertTrue(node.writer().offload("t", List.of(object("hot", SIZE)), false).get(0).ok());
            for (int i = 0; i < 3 * CAPACITY_OBJECTS; i++) {
                assertTrue(node.writer().offload("t", List.of(object("cold-" + i, SIZE)), false).get(0).ok());
                if (i % 8 == 0) {
                    TierReader.Outcome hot = node.reader().get("t", List.of("hot")).get(0);
                    assertTrue(hot.ok(), "after " + i + " cold offloads: " + hot);
                    assertArrayEquals(TestObjects.content("hot", SIZE), TestObjects.bytesOf(hot.data()));
                }
            }
            assertTrue(cluster.master().pages().evictedTotal(Change.RemoveReason.EVICTED_ALLOCATION)
                    + cluster.master().pages().evictedTotal(Change.RemoveReason.EVICTED_WATERMARK) > CAPACITY_OBJECTS);
        }
    }

    @Test
    void in_flight_allocations_are_never_evicted_and_a_tier_of_only_those_answers_NO_AVAILABLE_HANDLE() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 1); // 256 pages: 64 objects
        try (TierCluster cluster = TierCluster.start(options(layout, Duration.ofMillis(100)), 1)) {
            TierCluster.Node node = cluster.node(0);
            List<DistributedDiskDescriptor> held = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                held.add(node.client().allocate("t", "writing-" + i, SIZE, false).getDistributedDisk());
            }
            io.mcctl.master.client.MasterException full = org.junit.jupiter.api.Assertions.assertThrows(io.mcctl.master.client.MasterException.class,
                    () -> node.client().allocate("t", "one-more", SIZE, false));
            assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, full.code(), "nothing committed, nothing to evict");
            GetStatsResponse stats = node.client().stats();
            assertEquals(64, stats.getInFlightAllocations());
            for (int i = 0; i < 64; i++) {
                assertEquals(0, node.client().notifySuccess(List.of("writing-" + i), List.of("t"),
                        List.of(held.get(i).toBuilder().setCrc32C(1).build())).getResults(0).getErrorValue(), "writing-" + i);
            }
        }
    }

    @Test
    void an_evicted_object_being_read_keeps_its_bytes_for_the_lease_and_stays_evicted_after_a_restart() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 1); // 64 objects
        MasterServer.Options options = options(layout, Duration.ofSeconds(30));
        List<String> evicted = new ArrayList<>();
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            TierCluster.Node node = cluster.node(0);
            assertTrue(node.writer().offload("t", List.of(object("first", SIZE)), false).get(0).ok());
            TierReader.Outcome read = node.reader().get("t", List.of("first")).get(0); // a lease of 30 s
            assertTrue(read.ok());
            for (int i = 0; i < 200; i++) {
                node.writer().offload("t", List.of(object("later-" + i, SIZE)), false); // the leased ones are evicted last
            }
            assertTrue(cluster.master().pages().evictedTotal(Change.RemoveReason.EVICTED_ALLOCATION)
                    + cluster.master().pages().evictedTotal(Change.RemoveReason.EVICTED_WATERMARK) > 0);
            for (int i = 0; i < 200; i++) {
                if (!node.client().exists("t", "later-" + i)) {
                    evicted.add("later-" + i);
                }
            }
            // Whether or not "first" was evicted, its reader still finds its bytes where it was told: no page under a lease
            // is reused.
            ByteBuffer again = node.tier().io().read(Path.of(read.descriptor().getFilePath()), read.descriptor().getOffset(), SIZE,
                    read.descriptor().getCrc32C());
            assertArrayEquals(TestObjects.content("first", SIZE), TestObjects.bytesOf(again));
        }
        assertTrue(!evicted.isEmpty());
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            for (String key : evicted) {
                assertTrue(!cluster.node(0).client().exists("t", key), key + " came back after the restart");
            }
            CheckPagesResponse check = cluster.node(0).client().checkPages(false, 0, 100);
            assertEquals(0, check.getLeakedPages() + check.getOverlapPages() + check.getFalseFreePages(), check.toString());
        }
    }

    @Test
    void pinned_objects_are_evicted_only_when_nothing_unpinned_is_left_and_the_pin_survives_a_restart() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 1); // 64 objects of four pages
        MasterServer.Options options = options(layout, Duration.ofMillis(50));
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            TierCluster.Node node = cluster.node(0);
            for (int i = 0; i < 16; i++) {
                assertTrue(node.writer().offload("t", List.of(object("pinned-" + i, SIZE)), false, true).get(0).ok());
            }
            for (int i = 0; i < 200; i++) {
                assertTrue(node.writer().offload("t", List.of(object("plain-" + i, SIZE)), false).get(0).ok(), "plain-" + i);
            }
            for (int i = 0; i < 16; i++) {
                assertTrue(node.client().exists("t", "pinned-" + i), "pinned-" + i + " was evicted while unpinned objects were left");
            }
            assertEquals(16, node.client().stats().getPinnedKeys());
            cluster.master().snapshot();
            assertTrue(node.writer().offload("t", List.of(object("pinned-after-snapshot", SIZE)), false, true).get(0).ok());
        }
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            TierCluster.Node node = cluster.node(0);
            assertEquals(17, node.client().stats().getPinnedKeys(), "pins from the snapshot and from the log after it");
            // A tier of only pinned objects still takes new ones: the oldest pinned make room.
            for (int i = 0; i < 80; i++) {
                assertTrue(node.writer().offload("t", List.of(object("more-pinned-" + i, SIZE)), false, true).get(0).ok(), "more-pinned-" + i);
            }
        }
    }

    @Test
    void a_full_tier_read_in_a_loop_gives_up_only_the_room_an_offload_needs_and_the_writer_waits_for_it() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 1); // 64 objects of four pages
        // No background eviction (the high watermark is the whole tier): only the allocation makes room here.
        MasterServer.Options options = MasterServer.Options.builder(layout).fsType("test").readLease(Duration.ofSeconds(2))
                .snapshotInterval(null).allocationGrace(Duration.ofSeconds(10)).eviction(new EvictionPolicy(true, 1.0, 1.0))
                .build();
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            TierCluster.Node node = cluster.node(0);
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                keys.add("resident-" + i);
                assertTrue(node.writer().offload("t", List.of(object("resident-" + i, SIZE)), false).get(0).ok(), "resident-" + i);
            }
            for (TierReader.Outcome read : node.reader().get("t", keys)) {
                assertTrue(read.ok(), read.key()); // every resident object is now under a read lease
            }
            TierWriter.Outcome stored = node.writer().offload("t", List.of(object("newcomer", SIZE)), false).get(0);
            assertTrue(stored.ok(), "the offload waits for the room its eviction freed: " + stored);
            long evicted = cluster.master().pages().evictedTotal(Change.RemoveReason.EVICTED_ALLOCATION);
            assertEquals(1, evicted, "one leased object makes room for one object of its size; the rest of the cache stays");
            assertEquals(64, node.client().stats().getMappings());
            TierReader.Outcome back = node.reader().get("t", List.of("newcomer")).get(0);
            assertArrayEquals(TestObjects.content("newcomer", SIZE), TestObjects.bytesOf(back.data()));
        }
    }

    @Test
    void an_allocation_no_eviction_can_make_room_for_is_refused_without_evicting_anything() throws Exception {
        // 4 buckets of 64 MiB in 4 KiB pages: tenant A's 2,000 objects of 20 KB fill 15% of the tier; then tenant B holds a
        // one-page allocation in flight in each bucket, after A's objects, so that no run of 60 or 64 MiB can exist in any
        // bucket whatever is evicted.
        BucketLayout layout = new BucketLayout(root, 4, TierCluster.PAGE, 64 * TierCluster.MIB);
        try (TierCluster cluster = TierCluster.start(options(layout, Duration.ofSeconds(5)), 1)) {
            TierCluster.Node node = cluster.node(0);
            for (int batch = 0; batch < 20; batch++) {
                List<TierWriter.ObjectSource> objects = new ArrayList<>();
                for (int i = 0; i < 100; i++) {
                    objects.add(object("a-" + (batch * 100 + i), 20_000));
                }
                for (TierWriter.Outcome outcome : node.writer().offload("tenant-a", objects, false)) {
                    assertTrue(outcome.ok(), outcome.toString());
                }
            }
            boolean[] held = new boolean[layout.bucketCount()];
            for (int i = 0, holding = 0; holding < held.length; i++) {
                int home = layout.homeBucket("writing-" + i);
                if (!held[home]) {
                    DistributedDiskDescriptor writing = node.client().allocate("tenant-b", "writing-" + i, 4096, false).getDistributedDisk();
                    assertEquals(layout.bucketPath(home).toString(), writing.getFilePath(), "writing-" + i + " is in its home bucket");
                    held[home] = true;
                    holding++;
                }
            }
            for (long size : new long[] {64 * TierCluster.MIB, 60 * TierCluster.MIB}) {
                for (int i = 0; i < 8; i++) {
                    String key = "large-" + size + "-" + i;
                    MasterException refused = assertThrows(MasterException.class, () -> node.client().allocate("tenant-b", key, size, false));
                    assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, refused.code(), key + ": " + refused.getMessage());
                }
            }
            PageService pages = cluster.master().pages();
            assertEquals(2000, pages.mappingCount(), "no object of tenant A was evicted for allocations that could not succeed");
            HttpResponse<String> metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + cluster.metricsPort() + "/metrics")).timeout(Duration.ofSeconds(10)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertTrue(metrics.body().contains("mooncake_master_evicted_keys_total{reason=\"allocation\"} 0.0\n"),
                    metrics.body().lines().filter(l -> l.startsWith("mooncake_master_evicted")).toList().toString());
        }
    }
}
