package io.mcctl.master.service;

import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.eviction.EvictionPolicy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The evictor's pass above the high watermark takes the least recently used objects down to the low watermark, passes
 * over pinned ones, and falls back to sampling one victim at a time when the tier holds too few objects to estimate
 * the age it should stop at; on a clock the test moves.
 */
@Timeout(60)
class WatermarkPassTest {

    static final long PAGE = 4096;
    static final long MILLI = 1_000_000L;

    long now = 1_000 * MILLI;

    PageService service(long pages) {
        BucketLayout layout = new BucketLayout(Path.of("/nonexistent/mcctl-watermark-pass"), 2, PAGE, pages / 2 * PAGE);
        PageService service = PageService.builder(layout).allocationDeadline(Duration.ofSeconds(10)).readLease(Duration.ofMillis(1)).allocationGrace(Duration.ofSeconds(3)).nanoClock(() -> now).eviction(new EvictionPolicy(true, 0.90, 0.70)).build();
        return service;
    }

    void commit(PageService service, String key, long pages, boolean pin) {
        Result<Placement> allocated = service.allocate("t", key, pages * PAGE, false, pin);
        assertTrue(allocated.isOk(), allocated::toString);
        assertTrue(service.notifySuccess("t", key, allocated.value().withCrc(1)).isOk());
        now += MILLI; // the next commit or use is more recent, and every lease (1 ms) has ended by then
    }

    void use(PageService service, String key) {
        assertTrue(service.getMapping("t", key).isOk());
        now += MILLI;
    }

    long usedPages(PageService service) {
        long used = 0;
        for (int b = 0; b < 2; b++) {
            used += service.allocator(b).allocatedCount();
        }
        return used;
    }

    @Test
    void a_pass_evicts_the_least_recently_used_down_to_the_low_watermark_and_no_object_used_since() {
        PageService service = service(4096);
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 4000; i++) {
            keys.add("k" + i);
            commit(service, keys.get(i), 1, false);
        }
        // The first thousand are read after all were written: the most recently used. The next thousand are the oldest.
        for (int i = 0; i < 1000; i++) {
            use(service, keys.get(i));
        }
        long evicted = service.evictToWatermark(100_000);

        assertTrue(usedPages(service) <= 0.70 * 4096, "down to the low watermark: " + usedPages(service) + " pages used");
        assertTrue(usedPages(service) >= 0.70 * 4096 - 1, "and no further: " + usedPages(service) + " pages used");
        assertEquals(evicted, service.evictedTotal(Change.RemoveReason.EVICTED_WATERMARK));
        for (int i = 0; i < 1000; i++) {
            assertTrue(service.exists("t", keys.get(i)).value(), keys.get(i) + " was read after every other was written, and stays");
        }
        // Exact LRU would take the oldest 1,133 (keys 1000-2132). The pass's threshold is a sample's estimate, and what
        // it leaves is evicted as the oldest of 32 sampled each: allow for both, but nothing among the newest written.
        for (int i = 3300; i < 4000; i++) {
            assertTrue(service.exists("t", keys.get(i)).value(), keys.get(i) + " is among the more recently written, and stays");
        }
        assertEquals(0, service.evictToWatermark(100_000), "below the high watermark a pass evicts nothing");
    }

    @Test
    void a_pass_cut_short_by_its_cap_takes_the_oldest_objects_only() {
        PageService service = service(4096);
        for (int i = 0; i < 4000; i++) {
            commit(service, "k" + i, 1, false);
        }
        assertEquals(100, service.evictToWatermark(100));

        // The oldest 100 are k0-k99. Allow for the threshold's estimate and for the sampled victims taken after it, each
        // the oldest of 32 (one beyond k399 about one time in 13): most among the oldest tenth, none among the newest half.
        int oldestTenth = 0;
        for (int i = 0; i < 4000; i++) {
            boolean evicted = !service.exists("t", "k" + i).value();
            if (evicted && i < 400) {
                oldestTenth++;
            }
            assertTrue(!evicted || i < 2000, "k" + i + " is among the newest half, and stays");
        }
        assertTrue(oldestTenth >= 85, oldestTenth + " of 100 evicted among the oldest tenth");
    }

    @Test
    void a_pass_passes_over_pinned_objects_while_unpinned_ones_are_left() {
        PageService service = service(2048);
        for (int i = 0; i < 2000; i++) {
            commit(service, "k" + i, 1, i % 2 == 0); // every other one pinned, the oldest included
        }
        service.evictToWatermark(100_000);

        assertTrue(usedPages(service) <= 0.70 * 2048, usedPages(service) + " pages used");
        for (int i = 0; i < 2000; i += 2) {
            assertTrue(service.exists("t", "k" + i).value(), "pinned k" + i + " stays while unpinned objects are left");
        }
    }

    @Test
    void a_tier_of_a_few_large_objects_is_brought_down_one_sampled_victim_at_a_time_oldest_first() {
        PageService service = service(1024);
        for (int i = 0; i < 10; i++) {
            commit(service, "big" + i, 100, false); // 1000 of 1024 pages in 10 objects: too few for an estimate
        }
        long evicted = service.evictToWatermark(100_000);

        assertEquals(3, evicted, "three of 100 pages bring 1000 used pages to 700, the low watermark");
        for (int i = 0; i < 3; i++) {
            assertFalse(service.exists("t", "big" + i).value(), "big" + i + " is among the three oldest");
        }
        for (int i = 3; i < 10; i++) {
            assertTrue(service.exists("t", "big" + i).value(), "big" + i + " is more recent");
        }
    }
}
