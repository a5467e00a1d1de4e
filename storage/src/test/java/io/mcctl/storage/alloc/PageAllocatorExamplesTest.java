package io.mcctl.storage.alloc;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

@Timeout(60)
class PageAllocatorExamplesTest {

    /** What every {@link PageAllocator} must do; run once per implementation below. */
    abstract static class Contract {

        abstract PageAllocator create(long pageCount);

        /** Everything a refused call must leave as it was. */
        String state(PageAllocator allocator) {
            StringBuilder bits = new StringBuilder();
            for (long page = 0; page < allocator.pageCount(); page++) {
                bits.append(allocator.isAllocated(page) ? '#' : '.');
            }
            return bits + " allocated=" + allocator.allocatedCount();
        }

        /** Runs {@code call}, expects a PageRangeException, and checks nothing changed. */
        PageRangeException refused(PageAllocator allocator, Executable call) {
            String before = state(allocator);
            PageRangeException e = assertThrows(PageRangeException.class, call);
            assertEquals(before, state(allocator), "a refused call changed the allocator");
            return e;
        }

        @Test
        void double_free_is_rejected_naming_the_range_and_page_and_changes_nothing() {
            PageAllocator allocator = create(100);
            assertEquals(0, allocator.allocate(10));
            allocator.free(0, 10);
            allocator.allocate(3); // [0, 3) again, so that the bucket is not empty
            PageRangeException e = refused(allocator, () -> allocator.free(4, 3));
            assertTrue(e.getMessage().contains("[4, 7)"), e.getMessage());
            assertTrue(e.getMessage().contains("page 4"), e.getMessage());
            assertTrue(e.getMessage().contains("double free"), e.getMessage());
            assertEquals(4, e.offendingPage());
            assertEquals(3, allocator.allocatedCount());
        }

        @Test
        void free_reaching_into_an_already_freed_part_names_the_first_free_page() {
            PageAllocator allocator = create(100);
            assertEquals(0, allocator.allocate(10));
            allocator.free(6, 2);
            PageRangeException e = refused(allocator, () -> allocator.free(0, 10));
            assertTrue(e.getMessage().contains("[0, 10)"), e.getMessage());
            assertTrue(e.getMessage().contains("page 6"), e.getMessage());
            assertEquals(6, e.offendingPage());
            assertEquals(8, allocator.allocatedCount());
        }

        @Test
        void free_of_never_allocated_pages_is_rejected_and_changes_nothing() {
            PageAllocator allocator = create(100);
            PageRangeException e = refused(allocator, () -> allocator.free(7, 1));
            assertTrue(e.getMessage().contains("page 7"), e.getMessage());
            assertTrue(e.getMessage().contains("never allocated"), e.getMessage());
            assertEquals(0, allocator.allocatedCount());
        }

        @Test
        void free_out_of_bounds_is_rejected_naming_the_range_and_the_bucket() {
            PageAllocator allocator = create(100);
            allocator.markAllocated(0, 100);
            PageRangeException tail = refused(allocator, () -> allocator.free(95, 10));
            assertTrue(tail.getMessage().contains("[95, 105)"), tail.getMessage());
            assertTrue(tail.getMessage().contains("[0, 100)"), tail.getMessage());
            assertEquals(-1, tail.offendingPage());
            PageRangeException negative = refused(allocator, () -> allocator.free(-1, 2));
            assertTrue(negative.getMessage().contains("[-1, 1)"), negative.getMessage());
            PageRangeException past = refused(allocator, () -> allocator.free(100, 1));
            assertTrue(past.getMessage().contains("[100, 101)"), past.getMessage());
            assertEquals(100, allocator.allocatedCount());
        }

        @Test
        void mark_allocated_out_of_bounds_is_rejected_and_changes_nothing() {
            PageAllocator allocator = create(64);
            PageRangeException e = refused(allocator, () -> allocator.markAllocated(60, 5));
            assertTrue(e.getMessage().contains("mark allocated"), e.getMessage());
            assertTrue(e.getMessage().contains("[60, 65)"), e.getMessage());
            assertTrue(e.getMessage().contains("[0, 64)"), e.getMessage());
            refused(allocator, () -> allocator.markAllocated(-3, 1));
            refused(allocator, () -> allocator.markAllocated(0, Long.MAX_VALUE));
            assertEquals(0, allocator.allocatedCount());
        }

        @Test
        void free_and_mark_of_zero_or_negative_counts_are_rejected_naming_count_and_page() {
            PageAllocator allocator = create(64);
            allocator.markAllocated(0, 10);
            PageRangeException zeroFree = refused(allocator, () -> allocator.free(5, 0));
            assertTrue(zeroFree.getMessage().contains("0 pages at page 5"), zeroFree.getMessage());
            PageRangeException negativeFree = refused(allocator, () -> allocator.free(5, -3));
            assertTrue(negativeFree.getMessage().contains("-3 pages at page 5"), negativeFree.getMessage());
            PageRangeException zeroMark = refused(allocator, () -> allocator.markAllocated(20, 0));
            assertTrue(zeroMark.getMessage().contains("0 pages at page 20"), zeroMark.getMessage());
            assertEquals(-1, zeroMark.offendingPage());
            assertEquals(10, allocator.allocatedCount());
        }

        @Test
        void allocate_of_zero_or_negative_count_is_an_illegal_argument_naming_the_count() {
            PageAllocator allocator = create(64);
            allocator.allocate(5);
            String before = state(allocator);
            IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> allocator.allocate(0));
            assertTrue(zero.getMessage().contains("allocate 0 pages"), zero.getMessage());
            IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> allocator.allocate(-7));
            assertTrue(negative.getMessage().contains("allocate -7 pages"), negative.getMessage());
            assertEquals(before, state(allocator));
        }

        @Test
        void mark_allocated_over_allocated_pages_is_rejected_naming_the_first_such_page() {
            PageAllocator allocator = create(100);
            assertEquals(0, allocator.allocate(10));
            PageRangeException e = refused(allocator, () -> allocator.markAllocated(8, 4));
            assertTrue(e.getMessage().contains("[8, 12)"), e.getMessage());
            assertTrue(e.getMessage().contains("page 8 is already allocated"), e.getMessage());
            assertEquals(8, e.offendingPage());
            assertFalse(allocator.isAllocated(10));
            assertFalse(allocator.isAllocated(11));
            assertEquals(10, allocator.allocatedCount());
        }

        @Test
        void allocating_more_pages_than_the_bucket_has_returns_no_run_fits() {
            PageAllocator allocator = create(100);
            String before = state(allocator);
            assertEquals(PageAllocator.NO_RUN_FITS, allocator.allocate(101));
            assertEquals(PageAllocator.NO_RUN_FITS, allocator.allocate(Long.MAX_VALUE));
            assertEquals(before, state(allocator));
            assertEquals(0, allocator.allocate(100));
            assertEquals(PageAllocator.NO_RUN_FITS, allocator.allocate(1));
            assertEquals(100, allocator.allocatedCount());
        }

        @Test
        void allocations_follow_each_other_and_a_free_moves_the_next_one_back() {
            PageAllocator allocator = create(100);
            assertEquals(0, allocator.allocate(10));
            assertEquals(10, allocator.allocate(20));
            assertEquals(30, allocator.allocate(5));
            allocator.free(10, 20);
            assertEquals(10, allocator.allocate(4), "the hint moved back to the freed page");
            assertEquals(14, allocator.allocate(4));
            allocator.markAllocated(50, 10);
            assertEquals(18, allocator.allocate(12), "markAllocated did not move the hint");
            assertEquals(35, allocator.allocate(1), "first free page at or after the hint 30");
            assertEquals(60, allocator.allocate(15), "[36, 50) is one page short; the marked pages are skipped");
        }

        @Test
        void once_the_tail_is_full_allocation_comes_from_the_front() {
            PageAllocator allocator = create(100);
            assertEquals(0, allocator.allocate(90));
            allocator.free(10, 5);
            // [10, 15) is too short for 8 pages: the run goes to the tail and leaves 2 pages there.
            assertEquals(90, allocator.allocate(8));
            // Nothing at or after page 98 holds 4 pages: the search wraps to the front.
            assertEquals(10, allocator.allocate(4));
            assertEquals(14, allocator.allocate(1));
            assertEquals(98, allocator.allocate(2));
            assertEquals(PageAllocator.NO_RUN_FITS, allocator.allocate(1));
            assertEquals(100, allocator.allocatedCount());
        }

        @Test
        void a_free_run_straddling_the_hint_is_found_after_the_wrap() {
            PageAllocator allocator = create(11);
            assertEquals(0, allocator.allocate(7));
            allocator.free(0, 2);
            assertEquals(7, allocator.allocate(3), "[0, 2) is too short");
            allocator.free(2, 1); // free run [0, 3), hint 2
            assertEquals(0, allocator.allocate(3));
        }

        @Test
        void a_hint_of_one_still_wraps_to_page_zero() {
            PageAllocator allocator = create(5);
            allocator.markAllocated(1, 1);
            assertEquals(2, allocator.allocate(2));
            allocator.free(1, 1); // free: [0, 2) and [4, 5); hint 1
            assertEquals(0, allocator.allocate(2));
        }

        @Test
        void filling_to_the_last_page_sends_the_next_search_to_page_zero() {
            PageAllocator allocator = create(64);
            assertEquals(0, allocator.allocate(32));
            assertEquals(32, allocator.allocate(32));
            allocator.free(0, 8);
            allocator.free(40, 8);
            // hint is 0 after the free of page 0, so the lowest fitting run wins.
            assertEquals(0, allocator.allocate(8));
            assertEquals(40, allocator.allocate(8));
        }

        @Test
        void a_bucket_of_a_million_pages_allocates_and_frees_runs_spanning_many_leaves() {
            long pages = 1_048_576;
            PageAllocator allocator = create(pages);
            allocator.markAllocated(0, 511);
            assertEquals(511, allocator.allocate(300_001));
            assertEquals(300_512, allocator.allocate(1));
            assertAll(
                    () -> assertTrue(allocator.isAllocated(511)),
                    () -> assertTrue(allocator.isAllocated(300_511)),
                    () -> assertTrue(allocator.isAllocated(300_512)),
                    () -> assertFalse(allocator.isAllocated(300_513)),
                    () -> assertEquals(300_513, allocator.allocatedCount()));
            allocator.free(511, 300_001);
            assertEquals(512, allocator.allocatedCount());
            // The hint is back at 511; the whole free space after page 300512 fits exactly.
            assertEquals(511, allocator.allocate(300_001));
            assertEquals(300_513, allocator.allocate(pages - 300_513));
            assertEquals(pages, allocator.allocatedCount());
            assertEquals(PageAllocator.NO_RUN_FITS, allocator.allocate(1));
            allocator.free(0, pages);
            assertEquals(0, allocator.allocatedCount());
            assertEquals(0, allocator.allocate(pages));
        }

        @Test
        void is_allocated_outside_the_bucket_is_a_page_range_error() {
            PageAllocator allocator = create(10);
            assertThrows(PageRangeException.class, () -> allocator.isAllocated(-1));
            PageRangeException e = assertThrows(PageRangeException.class, () -> allocator.isAllocated(10));
            assertTrue(e.getMessage().contains("page 10"), e.getMessage());
        }
    }

    @Nested
    class BitmapPageAllocator_ extends Contract {

        @Override
        PageAllocator create(long pageCount) {
            return new BitmapPageAllocator(pageCount);
        }

        /** For the bitmap the refused-call check also compares the raw words and the hint. */
        @Override
        String state(PageAllocator allocator) {
            BitmapPageAllocator bitmap = (BitmapPageAllocator) allocator;
            StringBuilder s = new StringBuilder(super.state(allocator));
            for (long word : bitmap.bitmapWords()) {
                s.append(' ').append(Long.toHexString(word));
            }
            return s + " hint=" + bitmap.hint() + " largest=" + bitmap.largestFreeRun();
        }

        @Test
        void a_refused_double_free_leaves_bitmap_words_identical() {
            BitmapPageAllocator allocator = new BitmapPageAllocator(1000);
            allocator.allocate(700);
            allocator.free(100, 50);
            long[] words = allocator.bitmapWords();
            long count = allocator.allocatedCount();
            assertThrows(PageRangeException.class, () -> allocator.free(90, 20));
            assertArrayEquals(words, allocator.bitmapWords());
            assertEquals(count, allocator.allocatedCount());
        }

        @Test
        void bits_past_the_last_page_read_as_allocated_and_never_get_handed_out() {
            BitmapPageAllocator allocator = new BitmapPageAllocator(65);
            long[] words = allocator.bitmapWords();
            assertEquals(8, words.length, "one leaf of 8 words");
            assertEquals(0L, words[0]);
            assertEquals(-1L << 1, words[1]);
            assertEquals(-1L, words[7]);
            assertEquals(65, allocator.largestFreeRun());
            assertEquals(PageAllocator.NO_RUN_FITS, allocator.allocate(66));
            assertEquals(0, allocator.allocate(65));
            assertEquals(0, allocator.largestFreeRun());
        }

        @Test
        void is_range_allocated_is_true_only_when_every_page_is() {
            BitmapPageAllocator allocator = new BitmapPageAllocator(200);
            allocator.markAllocated(10, 100);
            assertTrue(allocator.isRangeAllocated(10, 100));
            assertTrue(allocator.isRangeAllocated(50, 1));
            assertFalse(allocator.isRangeAllocated(9, 2));
            assertFalse(allocator.isRangeAllocated(100, 11));
            assertThrows(PageRangeException.class, () -> allocator.isRangeAllocated(190, 11));
        }

        @Test
        void the_hint_follows_allocations_and_drops_to_freed_pages_but_not_to_marked_ones() {
            BitmapPageAllocator allocator = new BitmapPageAllocator(100);
            assertEquals(0, allocator.hint());
            allocator.allocate(30);
            assertEquals(30, allocator.hint());
            allocator.markAllocated(40, 5);
            assertEquals(30, allocator.hint());
            allocator.free(10, 5);
            assertEquals(10, allocator.hint());
            allocator.free(20, 5);
            assertEquals(10, allocator.hint(), "a free above the hint leaves it");
            allocator.allocate(5);
            assertEquals(15, allocator.hint());
            allocator.allocate(55);
            assertEquals(0, allocator.hint(), "an allocation ending on the last page sends the hint to 0");
        }

        @Test
        void page_counts_outside_one_to_max_pages_are_rejected() {
            assertThrows(IllegalArgumentException.class, () -> new BitmapPageAllocator(0));
            assertThrows(IllegalArgumentException.class, () -> new BitmapPageAllocator(BitmapPageAllocator.MAX_PAGES + 1));
            assertEquals(256, BitmapPageAllocator.forBucket(4096, 1 << 20).pageCount());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> BitmapPageAllocator.forBucket(4096, 5000));
            assertTrue(e.getMessage().contains("5000") && e.getMessage().contains("4096"), e.getMessage());
        }
    }

    @Nested
    class LinearScanPageAllocator_ extends Contract {

        @Override
        PageAllocator create(long pageCount) {
            return new LinearScanPageAllocator(pageCount);
        }

        @Test
        void page_counts_outside_one_to_max_pages_are_rejected() {
            assertThrows(IllegalArgumentException.class, () -> new LinearScanPageAllocator(0));
            assertThrows(IllegalArgumentException.class, () -> new LinearScanPageAllocator(BitmapPageAllocator.MAX_PAGES + 1));
        }
    }
}
