package io.mcctl.storage.alloc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class BulkRestoreTest {

    @Test
    void a_bulk_restore_then_allocations_behave_exactly_like_range_by_range_restore() {
        for (long seed = 1; seed <= 20; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            int pages = 1 + random.nextInt(5000);
            BitmapPageAllocator oneByOne = new BitmapPageAllocator(pages);
            BitmapPageAllocator bulk = new BitmapPageAllocator(pages);
            for (int page = 0; page < pages; ) {
                int length = 1 + random.nextInt(40);
                if (page + length > pages) {
                    break;
                }
                if (random.nextBoolean()) {
                    oneByOne.markAllocated(page, length);
                    bulk.markAllocatedForRestore(page, length);
                }
                page += length + random.nextInt(3);
            }
            assertEquals(oneByOne.allocatedCount(), bulk.allocatedCount());
            assertEquals(oneByOne.largestFreeRun(), bulk.largestFreeRun(), "summaries are rebuilt before they are read");
            for (int i = 0; i < 200; i++) {
                long count = 1 + random.nextInt(20);
                assertEquals(oneByOne.allocate(count), bulk.allocate(count), "seed " + seed + " allocation " + i);
            }
            assertArrayEquals(oneByOne.bitmapWords(), bulk.bitmapWords());
        }
    }

    @Test
    void a_bulk_restore_over_allocated_pages_is_refused_and_changes_nothing() {
        BitmapPageAllocator allocator = new BitmapPageAllocator(1024);
        allocator.markAllocatedForRestore(10, 10);
        long[] before = allocator.bitmapWords();
        PageRangeException e = assertThrows(PageRangeException.class, () -> allocator.markAllocatedForRestore(15, 10));
        assertEquals(15, e.offendingPage());
        assertArrayEquals(before, allocator.bitmapWords());
        assertEquals(10, allocator.allocatedCount());
        allocator.rebuildSummaries();
        assertEquals(1004, allocator.largestFreeRun());
    }
}
