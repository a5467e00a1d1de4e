package io.mcctl.master.service.eviction;

/**
 * Approximate LRU over samples: the least recently used unpinned object goes first; an object being promoted counts as
 * used just now (its task pins it while anything else can go), and a pinned one comes after every unpinned one. When
 * making room, windows around unleased objects come first, whose pages free at once.
 */
public final class LeastRecentlyUsed implements VictimOrder {

    public static final LeastRecentlyUsed INSTANCE = new LeastRecentlyUsed();

    private LeastRecentlyUsed() {
    }

    @Override
    public long rank(long lastUsedNanos, boolean pinned, boolean beingPromoted) {
        // Older is smaller; a pinned object comes after every unpinned one, and an object being promoted counts
        // as used just now: its task pins it while anything else can go.
        return pinned ? Long.MAX_VALUE : beingPromoted ? Long.MAX_VALUE - 1 : lastUsedNanos;
    }

    @Override
    public int compareAnchors(boolean firstLeased, long firstLastUsedNanos, boolean secondLeased, long secondLastUsedNanos) {
        // Unleased ones first, whose pages free at once; then the least recently used.
        return firstLeased != secondLeased ? (firstLeased ? 1 : -1) : Long.signum(firstLastUsedNanos - secondLastUsedNanos);
    }

    /**
     * The time at which the oldest of the sample hold the share of the sample's pages that is to be freed (a pass cut
     * short by its cap then takes only the oldest). A pass evicts a fifth of the tier at the default watermarks; taking
     * all of it by one threshold is closer to exact LRU than the oldest of a small sample per victim, and it reads the
     * shards' records in order rather than at random.
     */
    @Override
    public long passThreshold(long[] used, long[] pages, int sampled, long pagesToFree, long pagesInUse, long maxEvictions) {
        Integer[] order = new Integer[sampled];
        long samplePages = 0;
        for (int i = 0; i < sampled; i++) {
            order[i] = i;
            samplePages += pages[i];
        }
        // Times of System.nanoTime(), compared as differences from one of them so that a wrap of the clock sorts right.
        java.util.Arrays.sort(order, (a, b) -> Long.compare(used[a] - used[0], used[b] - used[0]));
        double pagesPerObject = (double) samplePages / sampled;
        double share = Math.min(1.0, Math.min(pagesToFree, maxEvictions * pagesPerObject) / pagesInUse);
        long covered = 0;
        for (Integer i : order) {
            covered += pages[i];
            if (covered >= share * samplePages) {
                return used[i];
            }
        }
        return used[order[sampled - 1]];
    }
}
