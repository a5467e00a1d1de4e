package io.mcctl.storage.alloc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * {@link BitmapPageAllocator#grow}: a bucket grown from N to M pages holds exactly what an allocator of M pages with the
 * same pages allocated holds (bitmap, counts, longest free run), every added page is free and can be allocated, and
 * no page allocated before the grow is handed out again.
 */
class AllocatorGrowPropertiesTest {

    @Property(tries = 400)
    void a_grown_allocator_equals_a_fresh_one_of_the_new_size_with_the_same_pages_allocated(
            @ForAll @IntRange(min = 1, max = 3000) int before, @ForAll @IntRange(min = 0, max = 5000) int added,
            @ForAll @IntRange(min = 0, max = 200) int steps, @ForAll long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        BitmapPageAllocator grown = new BitmapPageAllocator(before);
        List<long[]> live = new ArrayList<>();
        for (int i = 0; i < steps; i++) {
            if (live.isEmpty() || random.nextInt(3) > 0) {
                long count = 1 + random.nextInt(Math.max(1, before / 4));
                long first = grown.allocate(count);
                if (first != PageAllocator.NO_RUN_FITS) {
                    live.add(new long[] {first, count});
                }
            } else {
                long[] run = live.remove(random.nextInt(live.size()));
                grown.free(run[0], run[1]);
            }
        }
        long allocated = grown.allocatedCount();
        long[] wordsBefore = grown.bitmapWords();

        long after = before + added;
        assertEquals(added > 0, grown.grow(after));
        assertFalse(grown.grow(before), "a smaller count changes nothing");
        assertEquals(after, grown.pageCount());
        assertEquals(allocated, grown.allocatedCount());

        BitmapPageAllocator fresh = new BitmapPageAllocator(after);
        fresh.restoreAllocated(wordsBefore); // bits past the old end were padding: restoreAllocated takes them as claims
        for (long page = before; page < Math.min(after, (long) wordsBefore.length * 64); page++) {
            if (fresh.isAllocated(page)) {
                fresh.free(page, 1);
            }
        }
        assertArrayEquals(fresh.bitmapWords(), grown.bitmapWords());
        assertEquals(fresh.allocatedCount(), grown.allocatedCount());
        assertEquals(fresh.largestFreeRun(), grown.largestFreeRun());
        for (long page = before; page < after; page++) {
            assertFalse(grown.isAllocated(page), "added page " + page + " is free");
        }

        // Everything free can be handed out, and nothing that was live before the grow.
        long handedOut = 0;
        for (long first; (first = grown.allocate(1)) != PageAllocator.NO_RUN_FITS; handedOut++) {
            for (long[] run : live) {
                assertTrue(first < run[0] || first >= run[0] + run[1], "page " + first + " was live before the grow");
            }
        }
        assertEquals(after - allocated, handedOut);
    }
}
