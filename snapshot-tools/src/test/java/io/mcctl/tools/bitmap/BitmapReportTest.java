package io.mcctl.tools.bitmap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.alloc.BitmapPageAllocator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link BitmapReport} and {@link ClusterSummary} on a known bitmap: 256 pages with [0,10), [20,25), [30,31),
 * [32,34) and [100,256) allocated, so free runs 10~10, 25~5, 31~1 and 34~66.
 */
@Timeout(30)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class BitmapReportTest {

    static final long PAGE = 4096;

    static BitmapPageAllocator known() {
        BitmapPageAllocator allocator = new BitmapPageAllocator(256);
        allocator.markAllocated(0, 10);
        allocator.markAllocated(20, 5);
        allocator.markAllocated(30, 1);
        allocator.markAllocated(32, 2);
        allocator.markAllocated(100, 156);
        return allocator;
    }

    static BitmapReport report(BitmapReport.Request request) {
        BitmapPageAllocator allocator = known();
        return BitmapReport.of(3, BucketBitmap.of(allocator), PAGE, allocator.allocatedCount(), allocator.hint(), request);
    }

    @Nested
    class One_bucket {

        @Test
        void counts_used_and_free_pages_and_the_counter_matches_the_bits() {
            BitmapReport r = report(BitmapReport.Request.BASIC);
            assertEquals(256, r.pageCount());
            assertEquals(174, r.usedPages());
            assertEquals(82, r.freePages());
            assertEquals(174, r.allocatedBits());
            assertTrue(r.counterMatches());
            assertEquals(4, r.space().freeRunCount());
        }

        @Test
        void a_counter_that_differs_from_the_bits_is_a_mismatch() {
            BitmapPageAllocator allocator = known();
            BitmapReport r = BitmapReport.of(0, BucketBitmap.of(allocator), PAGE, 170, -1, BitmapReport.Request.BASIC);
            assertFalse(r.counterMatches());
            assertEquals(false, r.json().get("counter_matches"));
            assertNull(r.json().get("hint"));
        }

        @Test
        void gives_the_largest_run_and_the_log2_histogram() {
            BitmapReport r = report(BitmapReport.Request.BASIC);
            assertEquals(66, r.space().largestFreeRun());
            // 1 -> class 0, 5 -> 4-7, 10 -> 8-15, 66 -> 64-127
            assertArrayEquals(new long[] {1, 0, 1, 1, 0, 0, 1}, r.space().runLengthHistogram());
            assertEquals(List.of("1", "2-3", "4-7", "8-15", "16-31", "32-63", "64-127"),
                    ((List<?>) r.json().get("free_run_histogram")).stream().map(row -> ((Map<?, ?>) row).get("class")).toList());
        }

        @Test
        void draws_the_region_map_full_partial_and_free() {
            BitmapReport r = report(new BitmapReport.Request(8, 0, false, 0));
            assertEquals(32, r.space().regionPages());
            assertEquals(List.of("++.+####"), r.regionMapLines());
            assertEquals(List.of("partial", "partial", "free", "partial", "full", "full", "full", "full"), r.json().get("regions"));
        }

        @Test
        void wraps_the_region_map_at_64_characters() {
            BitmapReport r = report(new BitmapReport.Request(128, 0, false, 0));
            assertEquals(2, r.regionMapLines().size());
            assertEquals(64, r.regionMapLines().get(0).length());
            assertEquals("#####" + "....." + "##+..+", r.regionMapLines().get(0).substring(0, 16));
        }

        @Test
        void more_regions_than_pages_gives_one_region_per_page() {
            BitmapReport r = BitmapReport.of(0, new BucketBitmap(3, new long[] {0b010}), PAGE, 1, -1, new BitmapReport.Request(64, 0, false, 0));
            assertEquals(List.of(".#."), r.regionMapLines());
        }

        @Test
        void can_alloc_names_the_first_page_of_the_first_fit() {
            assertEquals(10, report(new BitmapReport.Request(64, 6, false, 0)).canAllocFirst());
            assertEquals(34, report(new BitmapReport.Request(64, 11, false, 0)).canAllocFirst());
            BitmapReport none = report(new BitmapReport.Request(64, 67, false, 0));
            assertEquals(-1, none.canAllocFirst());
            assertEquals(Map.of("pages", 67L, "fits", false), withoutNulls((Map<?, ?>) none.json().get("can_alloc")));
        }

        @Test
        void lists_extents_up_to_the_limit_and_counts_the_rest() {
            BitmapReport all = report(new BitmapReport.Request(64, 0, true, 0));
            assertEquals(List.of("10~10", "25~5", "31~1", "34~66"), all.json().get("extents"));
            BitmapReport two = report(new BitmapReport.Request(64, 0, true, 2));
            assertEquals(List.of("10~10", "25~5"), two.json().get("extents"));
            assertEquals(4L, two.json().get("extents_total"));
            assertEquals(2L, two.json().get("extents_not_listed"));
            assertFalse(report(BitmapReport.Request.BASIC).json().containsKey("extents"));
        }

        @Test
        void scores_one_free_run_as_zero_and_scattered_single_pages_higher() {
            BitmapPageAllocator oneRun = new BitmapPageAllocator(128);
            oneRun.markAllocated(0, 64);
            assertEquals(0.0, BitmapReport.of(0, BucketBitmap.of(oneRun), PAGE, 64, 0, BitmapReport.Request.BASIC).space().fragmentationScore());
            BitmapPageAllocator scattered = new BitmapPageAllocator(128);
            for (int p = 0; p < 128; p += 2) {
                scattered.markAllocated(p, 1);
            }
            double score = BitmapReport.of(0, BucketBitmap.of(scattered), PAGE, 64, 0, BitmapReport.Request.BASIC).space().fragmentationScore();
            assertTrue(score > 0.9, "score " + score);
        }

        @Test
        void rejects_bad_requests() {
            assertThrows(IllegalArgumentException.class, () -> new BitmapReport.Request(0, 0, false, 0));
            assertThrows(IllegalArgumentException.class, () -> new BitmapReport.Request(64, -1, false, 0));
            assertThrows(IllegalArgumentException.class, () -> new BitmapReport.Request(64, 0, true, -1));
        }
    }

    @Nested
    class Cluster_summary {

        @Test
        void lists_the_fullest_bucket_first_and_totals_every_bucket() {
            BitmapPageAllocator empty = new BitmapPageAllocator(256);
            BitmapPageAllocator half = new BitmapPageAllocator(256);
            half.markAllocated(0, 128);
            List<BitmapReport> reports = List.of(
                    BitmapReport.of(0, BucketBitmap.of(empty), PAGE, 0, 0, BitmapReport.Request.BASIC),
                    BitmapReport.of(1, BucketBitmap.of(known()), PAGE, 174, 0, BitmapReport.Request.BASIC),
                    BitmapReport.of(2, BucketBitmap.of(half), PAGE, 128, 0, BitmapReport.Request.BASIC));
            ClusterSummary s = ClusterSummary.of(reports, 0);
            assertEquals(768, s.totalPages());
            assertEquals(174 + 128, s.usedPages());
            assertEquals(768 - 302, s.freePages());
            assertEquals(List.of(1, 2, 0), s.fullest().stream().map(BitmapReport::bucket).toList());
            assertEquals(1, s.mostFragmented().get(0).bucket());
            assertEquals(256, s.largestFreeRun());
            assertEquals(0, s.largestBucket());
            assertEquals(0, s.counterMismatches());
        }

        @Test
        void can_alloc_names_the_first_bucket_that_fits() {
            BitmapPageAllocator full = new BitmapPageAllocator(64);
            full.markAllocated(0, 64);
            BitmapPageAllocator tail = new BitmapPageAllocator(64);
            tail.markAllocated(0, 40);
            BitmapReport.Request ask = new BitmapReport.Request(64, 20, false, 0);
            ClusterSummary s = ClusterSummary.of(List.of(BitmapReport.of(0, BucketBitmap.of(full), PAGE, 64, 0, ask),
                    BitmapReport.of(1, BucketBitmap.of(tail), PAGE, 40, 40, ask)), 20);
            assertEquals(1, s.canAllocBucket());
            assertEquals(40, s.canAllocFirst());
            assertEquals(1, s.canAllocBuckets());
            assertTrue(s.mostFragmented().stream().noneMatch(r -> r.bucket() == 0), "a full bucket is not fragmented");
        }

        @Test
        void keeps_at_most_five_buckets_in_each_list() {
            List<BitmapReport> reports = new java.util.ArrayList<>();
            for (int b = 0; b < 8; b++) {
                BitmapPageAllocator a = new BitmapPageAllocator(64);
                a.markAllocated(0, b + 1);
                reports.add(BitmapReport.of(b, BucketBitmap.of(a), PAGE, b + 1, 0, BitmapReport.Request.BASIC));
            }
            ClusterSummary s = ClusterSummary.of(reports, 0);
            assertEquals(List.of(7, 6, 5, 4, 3), s.fullest().stream().map(BitmapReport::bucket).toList());
            assertEquals(5, s.mostFragmented().size());
        }
    }

    static Map<Object, Object> withoutNulls(Map<?, ?> map) {
        Map<Object, Object> out = new java.util.HashMap<>();
        map.forEach((k, v) -> {
            if (v != null) {
                out.put(k, v);
            }
        });
        return out;
    }
}
