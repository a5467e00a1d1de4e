package io.mcctl.storage.alloc;

import static io.mcctl.storage.alloc.FreeSpaceReport.RegionState.FREE;
import static io.mcctl.storage.alloc.FreeSpaceReport.RegionState.FULL;
import static io.mcctl.storage.alloc.FreeSpaceReport.RegionState.PARTIAL;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class FreeSpaceReportTest {

    /** A bitmap written as text, '#' allocated and '.' free, as a bitmap read from disk would be. */
    record PatternSource(String pattern) implements FreeRunSource {
        @Override
        public long pageCount() {
            return pattern.length();
        }

        @Override
        public void forEachFreeRun(FreeRunConsumer consumer) {
            int p = 0;
            while (p < pattern.length()) {
                if (pattern.charAt(p) == '#') {
                    p++;
                    continue;
                }
                int start = p;
                while (p < pattern.length() && pattern.charAt(p) == '.') {
                    p++;
                }
                consumer.accept(start, p - start);
            }
        }
    }

    @Nested
    class From_a_hand_built_bitmap {

        //                                            region 0  region 1  region 2
        private final FreeRunSource source = new PatternSource("........" + "#..##.#." + "####");

        @Test
        void counts_free_pages_runs_and_the_largest_run() {
            FreeSpaceReport report = FreeSpaceReport.of(source, 8);
            assertEquals(20, report.pageCount());
            assertEquals(12, report.freePages());
            assertEquals(8, report.usedPages());
            assertEquals(4, report.freeRunCount(), "runs [0,8) [9,11) [13,14) [15,16)");
            assertEquals(8, report.largestFreeRun());
            assertTrue(report.canAllocate(8));
            assertFalse(report.canAllocate(9));
        }

        @Test
        void the_histogram_counts_runs_by_power_of_two_class() {
            // lengths 8, 2, 1, 1: class 0 (1) twice, class 1 (2..3) once, class 2 (4..7) none, class 3 (8..15) once
            assertArrayEquals(new long[] {2, 1, 0, 1}, FreeSpaceReport.of(source, 8).runLengthHistogram());
        }

        @Test
        void regions_are_free_partial_or_full_and_the_last_one_may_be_shorter() {
            FreeSpaceReport report = FreeSpaceReport.of(source, 8);
            assertEquals(8, report.regionPages());
            assertEquals(List.of(FREE, PARTIAL, FULL), report.regions());
            // regions of 3 pages: ... ... ..# ..# #.# .## ##
            assertEquals(List.of(FREE, FREE, PARTIAL, PARTIAL, PARTIAL, PARTIAL, FULL), FreeSpaceReport.of(source, 3).regions());
        }

        @Test
        void the_fragmentation_score_is_that_of_its_runs() {
            assertEquals(FragmentationScoreTest.scoreOf(8, 2, 1, 1), FreeSpaceReport.of(source, 8).fragmentationScore(), 1e-12);
        }
    }

    @Nested
    class From_a_bitmap_allocator {

        @Test
        void runs_crossing_word_and_leaf_boundaries_are_reported_whole() {
            BitmapPageAllocator allocator = new BitmapPageAllocator(1000);
            allocator.markAllocated(60, 10);
            allocator.markAllocated(500, 20);
            allocator.markAllocated(999, 1);
            List<long[]> runs = new ArrayList<>();
            allocator.forEachFreeRun((first, length) -> runs.add(new long[] {first, length}));
            assertEquals(3, runs.size());
            assertArrayEquals(new long[] {0, 60}, runs.get(0));
            assertArrayEquals(new long[] {70, 430}, runs.get(1));
            assertArrayEquals(new long[] {520, 479}, runs.get(2));

            FreeSpaceReport report = FreeSpaceReport.of(allocator, 512);
            assertEquals(969, report.freePages());
            assertEquals(479, report.largestFreeRun());
            assertArrayEquals(new long[] {0, 0, 0, 0, 0, 1, 0, 0, 2}, report.runLengthHistogram());
            assertEquals(List.of(PARTIAL, PARTIAL), report.regions());
        }

        @Test
        void an_empty_bucket_is_one_run_with_zero_fragmentation() {
            FreeSpaceReport report = FreeSpaceReport.of(new BitmapPageAllocator(1024), 512);
            assertEquals(1024, report.freePages());
            assertEquals(1, report.freeRunCount());
            assertEquals(1024, report.largestFreeRun());
            long[] histogram = new long[11];
            histogram[10] = 1;
            assertArrayEquals(histogram, report.runLengthHistogram());
            assertEquals(0.0, report.fragmentationScore(), 1e-12);
            assertEquals(List.of(FREE, FREE), report.regions());
        }

        @Test
        void a_full_bucket_has_no_runs_an_empty_histogram_and_full_regions() {
            BitmapPageAllocator allocator = new BitmapPageAllocator(700);
            allocator.allocate(700);
            FreeSpaceReport report = FreeSpaceReport.of(allocator, 256);
            assertEquals(0, report.freePages());
            assertEquals(700, report.usedPages());
            assertEquals(0, report.freeRunCount());
            assertEquals(0, report.largestFreeRun());
            assertArrayEquals(new long[0], report.runLengthHistogram());
            assertEquals(0.0, report.fragmentationScore());
            assertEquals(List.of(FULL, FULL, FULL), report.regions());
            assertFalse(report.canAllocate(1));
        }

        @Test
        void alternating_pages_score_as_fully_fragmented() {
            BitmapPageAllocator allocator = new BitmapPageAllocator(4096);
            for (int page = 1; page < 4096; page += 2) {
                allocator.markAllocated(page, 1);
            }
            FreeSpaceReport report = FreeSpaceReport.of(allocator, 4096);
            assertEquals(2048, report.freeRunCount());
            assertArrayEquals(new long[] {2048}, report.runLengthHistogram());
            assertTrue(report.fragmentationScore() >= 0.99, "score " + report.fragmentationScore());
            assertEquals(List.of(PARTIAL), report.regions());
        }
    }

    @Test
    void a_region_size_below_one_page_is_rejected() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> FreeSpaceReport.of(new BitmapPageAllocator(10), 0));
        assertTrue(e.getMessage().contains("region size 0"), e.getMessage());
    }

    @Test
    void a_region_larger_than_the_bucket_gives_one_region_even_at_the_largest_long() {
        FreeSpaceReport report = FreeSpaceReport.of(new PatternSource("..#."), 1000);
        assertEquals(List.of(PARTIAL), report.regions());
        assertEquals(List.of(PARTIAL), FreeSpaceReport.of(new PatternSource("..#."), Long.MAX_VALUE).regions());
        assertEquals(List.of(FREE), FreeSpaceReport.of(new BitmapPageAllocator(1000), Long.MAX_VALUE).regions());
    }

    @Test
    void the_returned_histogram_and_region_list_are_copies() {
        FreeSpaceReport report = FreeSpaceReport.of(new PatternSource("..#."), 2);
        report.runLengthHistogram()[0] = 99;
        report.regions().clear();
        assertArrayEquals(new long[] {1, 1}, report.runLengthHistogram());
        assertEquals(List.of(FREE, PARTIAL), report.regions());
    }
}
