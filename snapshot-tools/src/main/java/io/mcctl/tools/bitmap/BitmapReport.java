package io.mcctl.tools.bitmap;

import io.mcctl.storage.alloc.FreeSpaceReport;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What {@code mcctl bitmap inspect} says of one bucket: pages used and free, whether the allocator's own
 * count agrees with its bits, the largest free run, a log2 histogram of free runs, the fragmentation score,
 * a region map and, when asked, where a run of N pages would go and the free extents.
 *
 * @param counter       what the owner counts as allocated: a live allocator's counter, or the pages saved state claims
 * @param hint          where a live allocator's next search starts, or -1 when not known (offline)
 * @param canAllocPages the run asked about with {@code --can-alloc}, or 0
 * @param canAllocFirst first page of the first fit of {@code canAllocPages}, or -1
 * @param extents       free extents up to the limit, or null when not asked for
 * @param extentCount   every free extent, listed or not
 */
public record BitmapReport(int bucket, long pageSize, FreeSpaceReport space, long allocatedBits, long counter, long hint,
                           long canAllocPages, long canAllocFirst, List<Extent> extents, long extentCount) {

    /** A run of free pages. */
    public record Extent(long firstPage, long pages) {
        @Override
        public String toString() {
            return firstPage + "~" + pages;
        }
    }

    /** Characters of the text region map: full, partial, free. */
    public static final char FULL = '#';
    public static final char PARTIAL = '+';
    public static final char FREE = '.';
    /** Region map characters per line. */
    public static final int MAP_WIDTH = 64;

    /** What to compute beyond the basics. */
    public record Request(int regions, long canAllocPages, boolean extents, long extentLimit) {
        public Request {
            if (regions < 1) {
                throw new IllegalArgumentException("--regions " + regions + ": allowed is 1 or more");
            }
            if (canAllocPages < 0) {
                throw new IllegalArgumentException("--can-alloc " + canAllocPages + ": allowed is 1 or more");
            }
            if (extentLimit < 0) {
                throw new IllegalArgumentException("--limit " + extentLimit + ": allowed is 0 (all) or more");
            }
        }

        public static final Request BASIC = new Request(64, 0, false, 0);
    }

    /** Builds the report of {@code bitmap}; {@code request.regions()} regions at most (fewer when the bucket has fewer pages). */
    public static BitmapReport of(int bucket, BucketBitmap bitmap, long pageSize, long counter, long hint, Request request) {
        long pages = bitmap.pageCount();
        long regionPages = Math.max(1, (pages + request.regions() - 1) / request.regions());
        FreeSpaceReport space = FreeSpaceReport.of(bitmap, regionPages, pageSize);
        long first = request.canAllocPages() > 0 ? bitmap.firstFit(request.canAllocPages()) : -1;
        List<Extent> extents = null;
        long[] count = {space.freeRunCount()};
        if (request.extents()) {
            List<Extent> listed = new ArrayList<>();
            long limit = request.extentLimit() == 0 ? Long.MAX_VALUE : request.extentLimit();
            bitmap.forEachFreeRun((start, length) -> {
                if (listed.size() < limit) {
                    listed.add(new Extent(start, length));
                }
            });
            extents = listed;
        }
        return new BitmapReport(bucket, pageSize, space, bitmap.allocatedPages(), counter, hint, request.canAllocPages(), first, extents, count[0]);
    }

    public long pageCount() {
        return space.pageCount();
    }

    public long usedPages() {
        return space.usedPages();
    }

    public long freePages() {
        return space.freePages();
    }

    /** Used pages over capacity, in [0, 1]. */
    public double usedFraction() {
        return space.pageCount() == 0 ? 0 : (double) space.usedPages() / space.pageCount();
    }

    public boolean counterMatches() {
        return counter == allocatedBits;
    }

    /** Label of histogram class {@code c}: "1", "2-3", "4-7", ... */
    public static String classLabel(int c) {
        long low = 1L << c;
        return c == 0 ? "1" : low + "-" + (2 * low - 1);
    }

    /** The region map as lines of {@link #MAP_WIDTH} characters. */
    public List<String> regionMapLines() {
        StringBuilder all = new StringBuilder();
        for (FreeSpaceReport.RegionState state : space.regions()) {
            all.append(switch (state) {
                case FULL -> FULL;
                case PARTIAL -> PARTIAL;
                case FREE -> FREE;
            });
        }
        List<String> lines = new ArrayList<>();
        for (int at = 0; at < all.length(); at += MAP_WIDTH) {
            lines.add(all.substring(at, Math.min(all.length(), at + MAP_WIDTH)));
        }
        return lines;
    }

    public Map<String, Object> json() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("bucket", bucket);
        out.put("page_size", pageSize);
        out.put("capacity_pages", pageCount());
        out.put("used_pages", usedPages());
        out.put("free_pages", freePages());
        out.put("used_fraction", round(usedFraction()));
        out.put("allocated_bits", allocatedBits);
        out.put("counter", counter);
        out.put("counter_matches", counterMatches());
        out.put("hint", hint >= 0 ? hint : null);
        out.put("free_runs", space.freeRunCount());
        out.put("largest_free_run", space.largestFreeRun());
        List<Map<String, Object>> histogram = new ArrayList<>();
        long[] classes = space.runLengthHistogram();
        for (int c = 0; c < classes.length; c++) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("class", classLabel(c));
            row.put("min_pages", 1L << c);
            row.put("max_pages", (2L << c) - 1);
            row.put("runs", classes[c]);
            histogram.add(row);
        }
        out.put("free_run_histogram", histogram);
        out.put("fragmentation_score", round(space.fragmentationScore()));
        out.put("region_pages", space.regionPages());
        out.put("regions", space.regions().stream().map(r -> r.name().toLowerCase(Locale.ROOT)).toList());
        out.put("region_map", regionMapLines());
        if (canAllocPages > 0) {
            Map<String, Object> can = new LinkedHashMap<>();
            can.put("pages", canAllocPages);
            can.put("fits", canAllocFirst >= 0);
            can.put("first_page", canAllocFirst >= 0 ? canAllocFirst : null);
            out.put("can_alloc", can);
        }
        if (extents != null) {
            out.put("extents", extents.stream().map(Extent::toString).toList());
            out.put("extents_total", extentCount);
            out.put("extents_not_listed", extentCount - extents.size());
        }
        return out;
    }

    static double round(double value) {
        return Math.round(value * 1e6) / 1e6;
    }
}
