package io.mcctl.tools.bitmap;

import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Free space across every bucket: totals, the fullest and the most fragmented buckets, the largest free
 * run anywhere and, when asked, the first bucket a run of N pages fits in.
 *
 * @param fullest        at most {@link #TOP} buckets, highest used fraction first (ties: lower bucket first)
 * @param mostFragmented at most {@link #TOP} buckets with free space, highest score first (ties: lower bucket first)
 * @param largestBucket  the bucket holding the largest free run (the lowest, on a tie), or -1 when no page is free
 */
public record ClusterSummary(int buckets, long totalPages, long usedPages, long freePages, long largestFreeRun, int largestBucket,
                             long counterMismatches, List<BitmapReport> fullest, List<BitmapReport> mostFragmented,
                             long canAllocPages, long canAllocBuckets, int canAllocBucket, long canAllocFirst) {

    public static final int TOP = 5;

    /** Summarises {@code reports}, one per bucket; {@code canAllocPages} 0 when not asked. */
    public static ClusterSummary of(List<BitmapReport> reports, long canAllocPages) {
        long total = 0;
        long used = 0;
        long largest = 0;
        int largestBucket = -1;
        long mismatches = 0;
        long fitting = 0;
        BitmapReport firstFit = null;
        for (BitmapReport r : reports) {
            total += r.pageCount();
            used += r.usedPages();
            if (r.space().largestFreeRun() > largest) {
                largest = r.space().largestFreeRun();
                largestBucket = r.bucket();
            }
            if (!r.counterMatches()) {
                mismatches++;
            }
            if (canAllocPages > 0 && r.canAllocFirst() >= 0) {
                fitting++;
                if (firstFit == null) {
                    firstFit = r;
                }
            }
        }
        List<BitmapReport> fullest = reports.stream()
                .sorted(Comparator.comparingDouble(BitmapReport::usedFraction).reversed().thenComparingInt(BitmapReport::bucket))
                .limit(TOP).toList();
        List<BitmapReport> fragmented = reports.stream().filter(r -> r.freePages() > 0)
                .sorted(Comparator.comparingDouble((BitmapReport r) -> r.space().fragmentationScore()).reversed()
                        .thenComparingInt(BitmapReport::bucket))
                .limit(TOP).toList();
        return new ClusterSummary(reports.size(), total, used, total - used, largest, largestBucket, mismatches, fullest,
                fragmented, canAllocPages, fitting, firstFit == null ? -1 : firstFit.bucket(), firstFit == null ? -1 : firstFit.canAllocFirst());
    }

    public double usedFraction() {
        return totalPages == 0 ? 0 : (double) usedPages / totalPages;
    }

    public Map<String, Object> json() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("buckets", buckets);
        out.put("total_pages", totalPages);
        out.put("used_pages", usedPages);
        out.put("free_pages", freePages);
        out.put("used_fraction", BitmapReport.round(usedFraction()));
        out.put("largest_free_run", largestFreeRun);
        out.put("largest_free_run_bucket", largestBucket >= 0 ? largestBucket : null);
        out.put("counter_mismatches", counterMismatches);
        out.put("fullest", fullest.stream().map(ClusterSummary::brief).toList());
        out.put("most_fragmented", mostFragmented.stream().map(ClusterSummary::brief).toList());
        if (canAllocPages > 0) {
            Map<String, Object> can = new LinkedHashMap<>();
            can.put("pages", canAllocPages);
            can.put("fits", canAllocBucket >= 0);
            can.put("buckets_that_fit", canAllocBuckets);
            can.put("first_bucket", canAllocBucket >= 0 ? canAllocBucket : null);
            can.put("first_page", canAllocBucket >= 0 ? canAllocFirst : null);
            out.put("can_alloc", can);
        }
        return out;
    }

    /** One bucket's line in the top lists. */
    static Map<String, Object> brief(BitmapReport r) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("bucket", r.bucket());
        out.put("used_pages", r.usedPages());
        out.put("capacity_pages", r.pageCount());
        out.put("used_fraction", BitmapReport.round(r.usedFraction()));
        out.put("free_runs", r.space().freeRunCount());
        out.put("largest_free_run", r.space().largestFreeRun());
        out.put("fragmentation_score", BitmapReport.round(r.space().fragmentationScore()));
        return out;
    }
}
