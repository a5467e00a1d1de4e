package io.mcctl.master.service;

import io.mcctl.storage.alloc.PageWords;
import java.util.function.LongBinaryOperator;

/**
 * The pages every claim covers, as one bitmap per bucket laid out like the allocators' (bit i of word i/64 is page
 * i), plus the pages claimed more than once. Word-at-a-time, so a check of a million claims costs a few million
 * word operations, not one per page.
 *
 * <p>The one overlap check of mcctl: a restore refuses state it finds here claimed twice, the live page check
 * confirms what it finds here, and the offline tools report it.
 *
 * <p>Not thread-safe: filled and read by the one thread running a check.
 */
public final class ClaimedPages {

    private final long pagesPerBucket;
    private final int words;
    private final long[][] claimed;
    /** Pages claimed at least twice; a bucket's array is made on its first overlap. */
    private final long[][] twice;
    private final long[] claimedPages;
    private final long[] claimedEndPage;

    public ClaimedPages(int buckets, long pagesPerBucket) {
        this.pagesPerBucket = pagesPerBucket;
        this.words = (int) ((pagesPerBucket + 63) >>> 6);
        this.claimed = new long[buckets][]; // a bucket's words are made on its first claim
        this.twice = new long[buckets][];
        this.claimedPages = new long[buckets];
        this.claimedEndPage = new long[buckets];
    }

    /**
     * Adds a claim on pages [firstPage, firstPage + pages) of a bucket; the range must lie inside the bucket.
     *
     * @return whether any of its pages was claimed before
     */
    public boolean add(int bucket, long firstPage, long pages) {
        if (bucket < 0 || bucket >= claimed.length || firstPage < 0 || pages <= 0 || firstPage + pages > pagesPerBucket) {
            throw new IllegalArgumentException("claim of pages [" + firstPage + ", " + (firstPage + pages) + ") of bucket " + bucket
                    + " is outside the layout");
        }
        long[] words = claimed(bucket);
        boolean[] overlapped = {false};
        PageWords.forEach(firstPage, pages, (w, mask) -> {
            long already = words[w] & mask;
            if (already != 0) {
                overlapped[0] = true;
                if (twice[bucket] == null) {
                    twice[bucket] = new long[words.length];
                }
                twice[bucket][w] |= already;
            }
            words[w] |= mask;
            return true;
        });
        claimedPages[bucket] += pages;
        claimedEndPage[bucket] = Math.max(claimedEndPage[bucket], firstPage + pages);
        return overlapped[0];
    }

    long[] claimed(int bucket) {
        if (claimed[bucket] == null) {
            claimed[bucket] = new long[words];
        }
        return claimed[bucket];
    }

    /** Pages claimed twice in a bucket, or null when there are none. */
    long[] twice(int bucket) {
        return twice[bucket];
    }

    /** Sum of the claims' lengths in pages (a page claimed twice counts twice). */
    long claimedPages(int bucket) {
        return claimedPages[bucket];
    }

    long claimedEndPage(int bucket) {
        return claimedEndPage[bucket];
    }

    /** Receives maximal runs of set bits. */
    interface RunConsumer {
        void run(long firstPage, long pages);
    }

    /**
     * Calls {@code consumer} for every maximal run of pages (below {@code pageCount}) whose bit is set in
     * {@code combine(a[w], b[w])}, in page order.
     */
    static void forEachRun(long[] a, long[] b, long pageCount, LongBinaryOperator combine, RunConsumer consumer) {
        long runStart = -1;
        int words = (int) ((pageCount + 63) >>> 6);
        for (int w = 0; w < words; w++) {
            long bitsOfWord = combine.applyAsLong(a[w], b == null ? 0 : b[w]);
            long base = (long) w << 6;
            if (base + 64 > pageCount) {
                int valid = (int) (pageCount - base);
                bitsOfWord &= valid == 64 ? -1L : (1L << valid) - 1;
            }
            if (bitsOfWord == -1L) {
                if (runStart < 0) {
                    runStart = base;
                }
                continue;
            }
            if (bitsOfWord == 0) {
                if (runStart >= 0) {
                    consumer.run(runStart, base - runStart);
                    runStart = -1;
                }
                continue;
            }
            for (int bit = 0; bit < 64; ) {
                boolean set = (bitsOfWord & (1L << bit)) != 0;
                // Skip to the next change of state within the word.
                long rest = set ? ~bitsOfWord >>> bit : bitsOfWord >>> bit;
                int len = rest == 0 ? 64 - bit : Long.numberOfTrailingZeros(rest);
                if (set && runStart < 0) {
                    runStart = base + bit;
                } else if (!set && runStart >= 0) {
                    consumer.run(runStart, base + bit - runStart);
                    runStart = -1;
                }
                bit += len;
            }
        }
        if (runStart >= 0) {
            consumer.run(runStart, pageCount - runStart);
        }
    }
}
