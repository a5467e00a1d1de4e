package io.mcctl.storage.alloc;

/**
 * Page ranges on bitmaps laid out as the allocators lay theirs (bit i of word i/64 is page i), a word at a time:
 * a range of n pages costs about n/64 steps, never one per page.
 *
 * <p>Stateless; the arrays passed in are the caller's to guard.
 */
public final class PageWords {

    /** Told each word a range touches, with the mask of the range's bits in it; returns false to stop. */
    @FunctionalInterface
    public interface Visitor {
        boolean visit(int word, long mask);
    }

    private PageWords() {
    }

    /** Visits the words of pages [firstPage, firstPage + count) in order; false when the visitor stopped early. */
    public static boolean forEach(long firstPage, long count, Visitor visitor) {
        long end = firstPage + count;
        for (long page = firstPage; page < end; ) {
            int low = (int) (page & 63);
            int bits = (int) Math.min(64 - low, end - page);
            if (!visitor.visit((int) (page >>> 6), (bits == 64 ? -1L : (1L << bits) - 1) << low)) {
                return false;
            }
            page += bits;
        }
        return true;
    }

    /** Sets the bits of pages [firstPage, firstPage + count). */
    public static void set(long[] words, long firstPage, long count) {
        forEach(firstPage, count, (w, mask) -> {
            words[w] |= mask;
            return true;
        });
    }

    /** Whether every page of [firstPage, firstPage + count) is set. */
    public static boolean allSet(long[] words, long firstPage, long count) {
        return forEach(firstPage, count, (w, mask) -> (words[w] & mask) == mask);
    }

    /** Whether any page of [firstPage, firstPage + count) is set. */
    public static boolean anySet(long[] words, long firstPage, long count) {
        return !forEach(firstPage, count, (w, mask) -> (words[w] & mask) == 0);
    }

    /**
     * The first page of [firstPage, firstPage + count) whose bit is {@code set}, or -1. Written out rather than
     * through {@link #forEach}: every free of an allocator runs it, and it must not allocate.
     */
    public static long first(long[] words, long firstPage, long count, boolean set) {
        long end = firstPage + count;
        for (long page = firstPage; page < end; ) {
            int w = (int) (page >>> 6);
            int low = (int) (page & 63);
            int bits = (int) Math.min(64 - low, end - page);
            long hits = (set ? words[w] : ~words[w]) & ((bits == 64 ? -1L : (1L << bits) - 1) << low);
            if (hits != 0) {
                return (long) w * 64 + Long.numberOfTrailingZeros(hits);
            }
            page += bits;
        }
        return -1;
    }
}
