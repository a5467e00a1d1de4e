package io.mcctl.master.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** An allocation that finds no run evicts objects whose pages make one, on a clock the test moves. */
@Timeout(60)
class EvictionForRoomTest {

    static final long PAGE = 4096;
    static final long SECOND = 1_000_000_000L;

    /** One bucket of eight pages. */
    final BucketLayout layout = new BucketLayout(Path.of("/nonexistent/mcctl-eviction-for-room"), 1, PAGE, 8 * PAGE);
    long now = 7 * SECOND;
    final PageService service = new PageService(layout, Duration.ofSeconds(10), Duration.ofSeconds(5), Duration.ofSeconds(3), () -> now);

    Placement commit(String key, long pages) {
        Result<Placement> allocated = service.allocate("t", key, pages * PAGE, false);
        assertTrue(allocated.isOk(), allocated::toString);
        assertTrue(service.notifySuccess("t", key, allocated.value().withCrc(1)).isOk());
        now += SECOND; // the next commit is more recent
        return allocated.value();
    }

    @Test
    void an_object_whose_pages_join_free_ones_into_a_long_enough_run_goes_before_an_older_one_that_does_not() {
        service.setEviction(new PageService.EvictionPolicy(true, 1.0, 1.0)); // no watermark eviction: only for room
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
}
