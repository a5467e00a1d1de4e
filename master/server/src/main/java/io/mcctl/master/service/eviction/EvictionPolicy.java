package io.mcctl.master.service.eviction;

/**
 * When the tier evicts. The watermarks are fractions of all pages of all buckets, counted as the pages that stay
 * used once quarantine drains (allocated minus quarantined): allocations spill to any bucket with room, so a
 * bucket-local watermark would evict from a full home bucket while others have space.
 */
public record EvictionPolicy(boolean enabled, double highWatermark, double lowWatermark) {
    public static final EvictionPolicy OFF = new EvictionPolicy(false, 1, 1);

    public EvictionPolicy {
        if (!(lowWatermark > 0 && lowWatermark <= highWatermark && highWatermark <= 1)) {
            throw new IllegalArgumentException("eviction watermarks must satisfy 0 < low <= high <= 1, not low " + lowWatermark
                    + " and high " + highWatermark);
        }
    }

    /** Pages in use above which a watermark pass evicts, of {@code totalPages}. */
    public boolean above(long pagesInUse, long totalPages) {
        return pagesInUse > highWatermark * totalPages;
    }

    /** Pages in use a watermark pass evicts down to, of {@code totalPages}. */
    public long target(long totalPages) {
        return (long) (lowWatermark * totalPages);
    }
}
