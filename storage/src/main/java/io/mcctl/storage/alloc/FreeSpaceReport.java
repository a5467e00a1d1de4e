package io.mcctl.storage.alloc;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Read-only picture of one bucket's free space, built from its free runs: counts, a log2 histogram of
 * run lengths, the largest run, a fragmentation score and a region map. What {@code mcctl bitmap
 * inspect} and fsck report.
 */
public final class FreeSpaceReport {

    /** State of one region of the bucket. */
    public enum RegionState { FREE, PARTIAL, FULL }

    private final long pageCount;
    private final long freePages;
    private final long freeRunCount;
    private final long largestFreeRun;
    private final long[] runLengthHistogram;
    private final double fragmentationScore;
    private final long regionPages;
    private final RegionState[] regions;

    private FreeSpaceReport(long pageCount, long freePages, long freeRunCount, long largestFreeRun,
                            long[] runLengthHistogram, double fragmentationScore, long regionPages, RegionState[] regions) {
        this.pageCount = pageCount;
        this.freePages = freePages;
        this.freeRunCount = freeRunCount;
        this.largestFreeRun = largestFreeRun;
        this.runLengthHistogram = runLengthHistogram;
        this.fragmentationScore = fragmentationScore;
        this.regionPages = regionPages;
        this.regions = regions;
    }

    /**
     * Builds the report with run lengths scored as if a page were one byte (all runs "small" in
     * {@link FragmentationScore}'s terms).
     */
    public static FreeSpaceReport of(FreeRunSource source, long regionPages) {
        return of(source, regionPages, 1);
    }

    /**
     * Builds the report in one pass over the free runs, scoring fragmentation by bytes.
     *
     * @param regionPages pages per region of the region map (the last region may be shorter)
     * @param pageSize    bytes per page, for the fragmentation score
     */
    public static FreeSpaceReport of(FreeRunSource source, long regionPages, long pageSize) {
        if (regionPages < 1) {
            throw new IllegalArgumentException("region size " + regionPages + " pages: must be at least 1");
        }
        long pageCount = source.pageCount();
        int regionCount = (int) (pageCount / regionPages + (pageCount % regionPages == 0 ? 0 : 1));
        long[] freeInRegion = new long[regionCount];
        long[] histogram = new long[64];
        FragmentationScore score = new FragmentationScore(pageSize);
        long[] totals = new long[3]; // free pages, runs, largest
        source.forEachFreeRun((first, length) -> {
            totals[0] += length;
            totals[1]++;
            totals[2] = Math.max(totals[2], length);
            histogram[63 - Long.numberOfLeadingZeros(length)]++;
            score.addFreeRun(length);
            for (long page = first; page < first + length; ) {
                int region = (int) (page / regionPages);
                long regionEnd = Math.min((region + 1) * regionPages, first + length);
                freeInRegion[region] += regionEnd - page;
                page = regionEnd;
            }
        });
        RegionState[] regions = new RegionState[regionCount];
        for (int r = 0; r < regionCount; r++) {
            long size = Math.min(regionPages, pageCount - (long) r * regionPages);
            regions[r] = freeInRegion[r] == 0 ? RegionState.FULL : freeInRegion[r] == size ? RegionState.FREE : RegionState.PARTIAL;
        }
        int classes = 64;
        while (classes > 0 && histogram[classes - 1] == 0) {
            classes--;
        }
        return new FreeSpaceReport(pageCount, totals[0], totals[1], totals[2], Arrays.copyOf(histogram, classes),
                score.score(), regionPages, regions);
    }

    public long pageCount() { return pageCount; }

    public long freePages() { return freePages; }

    public long usedPages() { return pageCount - freePages; }

    public long freeRunCount() { return freeRunCount; }

    public long largestFreeRun() { return largestFreeRun; }

    /** Entry c counts the free runs whose length is in [2^c, 2^(c+1)); trailing empty classes are cut. */
    public long[] runLengthHistogram() { return runLengthHistogram.clone(); }

    /** 0 when all free space is one run, towards 1 as it breaks into single pages; see {@link FragmentationScore}. */
    public double fragmentationScore() { return fragmentationScore; }

    public long regionPages() { return regionPages; }

    public List<RegionState> regions() { return new ArrayList<>(Arrays.asList(regions)); }

    /** Would a run of {@code pages} fit anywhere. */
    public boolean canAllocate(long pages) { return pages <= largestFreeRun; }
}
