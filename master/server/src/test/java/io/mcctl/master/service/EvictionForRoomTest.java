package io.mcctl.master.service;

import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.eviction.EvictionPolicy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An allocation that finds no run evicts the objects of a window it then takes, on a clock the test moves, and nothing
 * when no window exists; allocations racing to make room on real threads leave no page and no fence behind.
 */
@Timeout(60)
class EvictionForRoomTest {

    static final long PAGE = 4096;
    static final long SECOND = 1_000_000_000L;

    /** One bucket of eight pages. */
    final BucketLayout layout = new BucketLayout(Path.of("/nonexistent/mcctl-eviction-for-room"), 1, PAGE, 8 * PAGE);
    long now = 7 * SECOND;
    PageService service = PageService.builder(layout).allocationDeadline(Duration.ofSeconds(10)).readLease(Duration.ofSeconds(5)).allocationGrace(Duration.ofSeconds(3)).nanoClock(() -> now).build();

    Placement commit(String key, long pages) {
        Result<Placement> allocated = service.allocate("t", key, pages * PAGE, false);
        assertTrue(allocated.isOk(), allocated::toString);
        assertTrue(service.notifySuccess("t", key, allocated.value().withCrc(1)).isOk());
        now += SECOND; // the next commit is more recent
        return allocated.value();
    }

    @Test
    void an_object_whose_pages_join_free_ones_into_a_long_enough_run_goes_before_an_older_one_that_does_not() {
        service = service.withEviction(new EvictionPolicy(true, 1.0, 1.0)); // no watermark eviction: only for room
        // Pages: A A A B C C C D, committed in the order A, D, C, B (A the least recently used); then C is removed, so
        // pages 4-6 are free and no run of four exists.
        Placement a = commit("a", 3);
        Placement b = service.allocate("t", "b", PAGE, false).value();
        Placement c = service.allocate("t", "c", 3 * PAGE, false).value();
        Placement d = service.allocate("t", "d", PAGE, false).value();
        assertEquals(0, a.offset());
        assertEquals(3 * PAGE, b.offset());
        assertEquals(4 * PAGE, c.offset());
        assertEquals(7 * PAGE, d.offset());
        assertTrue(service.notifySuccess("t", "d", d.withCrc(1)).isOk());
        now += SECOND;
        assertTrue(service.notifySuccess("t", "c", c.withCrc(1)).isOk());
        now += SECOND;
        assertTrue(service.notifySuccess("t", "b", b.withCrc(1)).isOk());
        now += SECOND;
        assertTrue(service.remove("t", "c").isOk());
        service.reap();
        assertEquals(3, service.allocator(0).largestFreeRun());

        // Four pages: evicting A (the oldest) frees a run of three only; D with pages 4-6 makes four, B too. D is the
        // older of those two.
        Result<Placement> e = service.allocate("t", "e", 4 * PAGE, false);
        assertTrue(e.isOk(), e::toString);
        assertEquals(4 * PAGE, e.value().offset());
        assertEquals(1, service.evictedTotal(Change.RemoveReason.EVICTED_ALLOCATION), "one object made the room");
        assertTrue(service.exists("t", "a").value(), "the oldest object stays: evicting it would not have made the room");
        assertTrue(service.exists("t", "b").value());
        assertTrue(!service.exists("t", "d").value(), "d made the room");
    }

    @Test
    void an_allocation_that_no_eviction_can_make_room_for_evicts_nothing_and_one_that_can_evicts_only_its_window() {
        service = service.withEviction(new EvictionPolicy(true, 1.0, 1.0));
        // Pages: A A A W C C C C, W an allocation in flight: no five pages in a row can be freed, four can (C's).
        commit("a", 3);
        Placement writing = service.allocate("t", "w", PAGE, false).value();
        assertEquals(3 * PAGE, writing.offset());
        commit("c", 4);
        Result<Placement> five = service.allocate("t", "five", 5 * PAGE, false);
        assertEquals(io.mcctl.master.proto.v1.ErrorCode.NO_AVAILABLE_HANDLE, five.error(), five::toString);
        assertEquals(0, service.evictedTotal(), "nothing is evicted for an allocation no eviction can place");
        assertEquals(2, service.mappingCount());

        Result<Placement> four = service.allocate("t", "four", 4 * PAGE, false);
        assertTrue(four.isOk(), four::toString);
        assertEquals(4 * PAGE, four.value().offset(), "placed where its room was made");
        assertEquals(1, service.evictedTotal(Change.RemoveReason.EVICTED_ALLOCATION));
        assertTrue(service.exists("t", "a").value(), "a is older, but evicting it would not have made the room");
        assertTrue(!service.exists("t", "c").value());
    }

    @Test
    void allocations_making_room_at_once_on_several_threads_leave_no_page_leaked_or_shared_and_no_fence_up() throws Exception {
        BucketLayout two = new BucketLayout(Path.of("/nonexistent/mcctl-eviction-for-room-threads"), 2, PAGE, 64 * PAGE);
        PageService shared = PageService.builder(two).allocationDeadline(Duration.ofSeconds(10)).readLease(Duration.ofMillis(2)).allocationGrace(Duration.ofSeconds(3)).eviction(new EvictionPolicy(true, 1.0, 1.0)).build();
        int threads = 4;
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
        try {
            List<java.util.concurrent.Future<Integer>> done = new java.util.ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    java.util.Random random = new java.util.Random(thread);
                    int placed = 0;
                    for (int i = 0; i < 400; i++) {
                        String key = "t" + thread + "-" + random.nextInt(60);
                        Result<Placement> allocated = shared.allocate("tenant-" + thread, key, (1 + random.nextInt(12)) * PAGE - 7, true);
                        if (allocated.isOk()) {
                            placed++;
                            shared.notifySuccess("tenant-" + thread, key, allocated.value().withCrc(3));
                        }
                        if (random.nextInt(4) == 0) {
                            shared.getMapping("tenant-" + thread, "t" + thread + "-" + random.nextInt(60));
                        }
                    }
                    return placed;
                }));
            }
            int placed = 0;
            for (java.util.concurrent.Future<Integer> f : done) {
                placed += f.get(50, java.util.concurrent.TimeUnit.SECONDS);
            }
            assertTrue(placed > 0);
            assertTrue(shared.evictedTotal(Change.RemoveReason.EVICTED_ALLOCATION) > 0, "the tier filled and allocations made room");
        } finally {
            pool.shutdownNow();
        }
        for (int b = 0; b < 2; b++) {
            assertEquals(0, shared.allocator(b).fences().length, "bucket " + b + " has a fence up with no allocation making room");
        }
        PageCheck check = shared.checkPages(0, false, 8);
        assertTrue(check.clean(), check.toString());
    }
}
