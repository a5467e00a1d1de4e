package io.mcctl.master.service;

import io.mcctl.master.protocol.Quoted;
import java.util.List;

/**
 * What {@link PageService#checkPages} found: every bucket's bitmap against the pages that mappings, in-flight
 * allocations and quarantined ranges claim.
 *
 * <ul>
 *   <li><b>leaked</b>: allocated, claimed by nothing, and old enough to count (the pages cannot be allocated again
 *       until freed);</li>
 *   <li><b>young</b>: allocated and claimed by nothing, but in a region allocated from less than the minimum age ago,
 *       so not counted as leaked;</li>
 *   <li><b>unsettled</b>: allocated and claimed by nothing as read, in a region that changed while the check ran, so
 *       not judged (counted only);</li>
 *   <li><b>false free</b>: claimed, yet free in the bitmap, so the next allocation may hand them out and overwrite
 *       live data: the dangerous kind;</li>
 *   <li><b>overlap</b>: claimed twice; never repaired automatically.</li>
 * </ul>
 *
 * @param maxRangesPerKind at most this many ranges are listed per kind; the page totals count them all
 * @param longestHoldNanos the longest the check held any one lock (a shard's, the quarantine's or a bucket's): the
 *                         most it delayed any call
 * @param minAgeNanos      the minimum age a leaked range must have to count
 */
public record PageCheck(long mappings, long inFlight, long quarantinedRanges,
                        List<PageRun> leaked, List<PageRun> young, List<PageRun> falseFree, List<PageRun> overlaps,
                        long leakedPages, long youngPages, long unsettledPages, long falseFreePages, long overlapPages,
                        long repairedLeakedPages, long repairedFalseFreePages,
                        List<BucketCounters> buckets, int maxRangesPerKind, long longestHoldNanos, long minAgeNanos) {

    /** Whose claim a page range is. {@code kind} is {@code mapping}, {@code in_flight} or {@code quarantine}. */
    public record Claimant(String kind, String tenant, String key) {

        public static final String MAPPING = "mapping";
        public static final String IN_FLIGHT = "in_flight";
        public static final String QUARANTINE = "quarantine";

        public String describe() {
            return switch (kind) {
                case QUARANTINE -> "a quarantined range";
                case IN_FLIGHT -> "the in-flight allocation of key " + Quoted.of(key) + " of tenant " + Quoted.of(tenant);
                default -> "the mapping of key " + Quoted.of(key) + " of tenant " + Quoted.of(tenant);
            };
        }
    }

    /**
     * A maximal run of pages of one kind in one bucket.
     *
     * @param claimants who claims pages of the run (false free and overlap only; at most a few named)
     * @param repaired  whether this check repaired it
     */
    public record PageRun(int bucket, long firstPage, long pages, List<Claimant> claimants, boolean repaired) {
    }

    /**
     * One bucket's counters: the allocator's own count of allocated pages, the popcount of its bitmap, the pages
     * claimed, and the end (in bytes) of the furthest claim, which must lie inside the bucket file's real length.
     */
    public record BucketCounters(int bucket, long allocatedCounter, long allocatedPopcount, long claimedPages, long claimedEndBytes) {

        public boolean counterMatches() {
            return allocatedCounter == allocatedPopcount;
        }
    }

    public boolean clean() {
        return leakedPages == 0 && falseFreePages == 0 && overlapPages == 0 && buckets.stream().allMatch(BucketCounters::counterMatches);
    }
}
