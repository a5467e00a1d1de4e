package io.mcctl.master.service.eviction;

/**
 * Which objects eviction takes first: the policy half of eviction, in the spirit of a cache evictor. The master's tables
 * are sampled under their locks by the page service, which asks this order to rank what it sampled and to estimate how
 * far a watermark pass sweeps; the order itself sees only numbers and holds no state or lock.
 *
 * <p>Times are {@link System#nanoTime()} readings (of the service's clock), compared as differences so that a wrap of
 * the clock orders right.
 */
public interface VictimOrder {

    /** Rank of a sampled object: the smallest rank goes first. */
    long rank(long lastUsedNanos, boolean pinned, boolean beingPromoted);

    /**
     * Orders two sampled windows' anchors when making room for an allocation: negative when the first goes before the
     * second.
     */
    int compareAnchors(boolean firstLeased, long firstLastUsedNanos, boolean secondLeased, long secondLastUsedNanos);

    /**
     * The time of last use up to which a watermark pass evicts everything unpinned, from a sample of {@code sampled}
     * unpinned objects' last uses and pages, so that what it evicts adds up to about {@code pagesToFree} of the
     * {@code pagesInUse}, or to {@code maxEvictions} objects when those are fewer. The arrays are the sample's; at least one
     * object was sampled.
     */
    long passThreshold(long[] lastUsedNanos, long[] pages, int sampled, long pagesToFree, long pagesInUse, long maxEvictions);
}
