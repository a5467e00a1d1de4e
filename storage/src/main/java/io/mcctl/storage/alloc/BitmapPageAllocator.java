package io.mcctl.storage.alloc;

/**
 * The page allocator of one bucket: a bitmap of 64-bit words (bit set = page allocated) with a summary
 * tree over it, so that the first run of {@code count} free pages at or after the hint is found in
 * O(log n) steps instead of a bit-by-bit scan.
 *
 * <p>The tree's leaves each summarise {@value #WORDS_PER_LEAF} words ({@value #PAGES_PER_LEAF} pages);
 * every node keeps three numbers over its pages: the free run at its start (prefix), the free run at its
 * end (suffix), and the longest free run anywhere inside it (max). A search walks the nodes left to
 * right from the hint, carrying the length of the free run that reaches the current position, skips
 * every node whose runs cannot complete a fit, and descends only into the node where the fit is. Inside
 * a leaf it goes word by word: the free bits at a word's ends come from {@link Long#numberOfTrailingZeros}
 * and {@link Long#numberOfLeadingZeros}, a fit inside a word from a few shift-and-mask steps; never bit by bit.
 *
 * <p>Memory: one bit per page, one byte per 64 pages, and 28 bytes per 512 pages (the tree is padded to a
 * power of two leaves; a change count per leaf): about 11.5 KiB for 65,536 pages.
 *
 * <p>Fences: an allocation that makes room by eviction fences the run it frees ({@link #fence}), so that the pages it
 * frees go to no other allocation before it takes the run ({@link #allocateFenced}); {@link #allocate} skips every
 * fit that touches a fence. A fence is not a page state: the bitmap shows its pages as they are.
 *
 * <p>Thread safety: every public method is {@code synchronized}; the monitor of this allocator guards
 * {@link #words}, the summary arrays, {@link #leafVersions}, {@link #allocated}, {@link #hint}, {@link #carry} and the
 * fences, and {@link #grow} replaces the arrays under it. There is one allocator, hence one lock, per bucket; no lock
 * spans buckets.
 */
public final class BitmapPageAllocator implements PageAllocator, FreeRunSource {

    static final int WORDS_PER_LEAF = 8;
    static final int PAGES_PER_LEAF = WORDS_PER_LEAF * 64;
    /** Summaries are ints; this keeps every run length and every node size representable. */
    public static final long MAX_PAGES = 1L << 30;

    /** Written under the monitor by {@link #grow}; volatile so that {@link #pageCount()} reads it without the lock. */
    private volatile int pageCount;
    private long[] words;
    /** Longest free run inside each word, so a leaf is summarised from eight bytes, not by walking its bits. */
    private byte[] wordMaxFree;
    private int leafCount;
    private int leafLevels;
    private int[] prefixFree;
    private int[] suffixFree;
    private int[] maxFree;
    private long allocated;
    private long hint;
    /** Scratch for a search: length of the free run that ends where the search has got to. */
    private long carry;
    /** True after a bulk restore until the summaries are rebuilt. */
    private boolean summariesStale;
    /**
     * Per leaf, how many times any of its pages changed state (wrapping): a checker that copied the bitmap earlier
     * can tell which leaves still hold what it copied without comparing them.
     */
    private int[] leafVersions;

    /** Most fences at once: the allocations making room in this bucket at the same moment. */
    public static final int MAX_FENCES = 8;
    /** Fenced runs: pages [fenceStart[i], fenceEnd[i]) for i below {@link #fenceCount}, none overlapping another. */
    private final long[] fenceStart = new long[MAX_FENCES];
    private final long[] fenceEnd = new long[MAX_FENCES];
    private int fenceCount;

    public BitmapPageAllocator(long pageCount) {
        checkPageCount(pageCount);
        size(pageCount, new long[0], new int[0]);
    }

    private static void checkPageCount(long pageCount) {
        if (pageCount < 1 || pageCount > MAX_PAGES) {
            throw new IllegalArgumentException("page count " + pageCount + " is outside 1.." + MAX_PAGES);
        }
    }

    /**
     * Sizes every array for {@code pageCount} pages, keeping the first pages' bits from {@code oldWords} (whose pages
     * past {@code pageCount} were padding) and the change counts of the old leaves.
     */
    private void size(long pageCount, long[] oldWords, int[] oldVersions) {
        int oldPages = oldWords.length == 0 ? 0 : this.pageCount;
        int realLeaves = (int) ((pageCount + PAGES_PER_LEAF - 1) / PAGES_PER_LEAF);
        long[] grown = java.util.Arrays.copyOf(oldWords, realLeaves * WORDS_PER_LEAF);
        // The old padding (pages past the old end, marked allocated) becomes free pages of the bucket.
        for (long page = oldPages; page < (long) oldWords.length * 64; page++) {
            grown[(int) (page >>> 6)] &= ~(1L << page);
        }
        // Pages past the end of the bucket are permanently "allocated" so no run can reach them.
        for (long page = pageCount; page < (long) grown.length * 64; page++) {
            grown[(int) (page >>> 6)] |= 1L << page;
        }
        this.words = grown;
        this.wordMaxFree = new byte[grown.length];
        this.leafCount = Integer.highestOneBit(realLeaves) == realLeaves ? realLeaves : Integer.highestOneBit(realLeaves) << 1;
        this.leafLevels = Integer.numberOfTrailingZeros(leafCount);
        this.prefixFree = new int[2 * leafCount];
        this.suffixFree = new int[2 * leafCount];
        this.maxFree = new int[2 * leafCount];
        this.leafVersions = java.util.Arrays.copyOf(oldVersions, realLeaves);
        for (int leaf = 0; leaf < realLeaves; leaf++) {
            leafVersions[leaf]++; // every leaf may have changed: a checker's copy of any of them is stale
        }
        this.pageCount = (int) pageCount;
        rebuildSummaryState();
    }

    /**
     * Grows the bucket to {@code newPageCount} pages while it serves: the pages added are free, every allocated page
     * stays allocated. A count at or below the current one changes nothing (a grow replayed twice is a grow once).
     *
     * @return true when the bucket grew
     */
    public synchronized boolean grow(long newPageCount) {
        checkPageCount(newPageCount);
        if (newPageCount <= pageCount) {
            return false;
        }
        ensureSummaries();
        size(newPageCount, words, leafVersions);
        return true;
    }

    /** Recomputes every word's longest free run and the whole tree from the bitmap words. */
    private void rebuildSummaryState() {
        for (int w = 0; w < words.length; w++) {
            wordMaxFree[w] = (byte) longestFreeRun(words[w]);
        }
        for (int leaf = 0; leaf < words.length / WORDS_PER_LEAF; leaf++) {
            summariseLeaf(leaf);
        }
        for (int node = leafCount - 1; node >= 1; node--) {
            combine(node);
        }
        summariesStale = false;
    }

    /**
     * {@link #markAllocated} for a bulk restore: the same checks, but the search summaries are rebuilt once,
     * by {@link #rebuildSummaries} or lazily by the next search, instead of after every range.
     */
    public synchronized void markAllocatedForRestore(long firstPage, long count) {
        checkAllFree(firstPage, count);
        PageWords.set(words, firstPage, count);
        bumpVersions(firstPage, firstPage + count);
        allocated += count;
        summariesStale = true;
    }

    /**
     * Sets the bitmap of an allocator that nothing has allocated from yet to {@code claimed} (bit i of word i/64 =
     * page i allocated), as a restore derives it from every claim at once; bits past the last page are ignored. The
     * search summaries are rebuilt once, by {@link #rebuildSummaries} or lazily by the next search.
     *
     * @throws IllegalStateException when pages are already allocated
     */
    public synchronized void restoreAllocated(long[] claimed) {
        if (allocated != 0) {
            throw new IllegalStateException("restore into an allocator with " + allocated + " pages allocated");
        }
        long count = 0;
        for (int w = 0; w < words.length; w++) {
            long base = (long) w << 6;
            long valid = base + 64 <= pageCount ? -1L : base >= pageCount ? 0 : (1L << (pageCount - base)) - 1;
            long bits = w < claimed.length ? claimed[w] & valid : 0;
            words[w] = bits | ~valid;
            count += Long.bitCount(bits);
        }
        allocated = count;
        for (int leaf = 0; leaf < leafVersions.length; leaf++) {
            leafVersions[leaf]++;
        }
        summariesStale = true;
    }

    /** Brings the search summaries up to date after {@link #markAllocatedForRestore}. */
    public synchronized void rebuildSummaries() {
        if (summariesStale) {
            rebuildSummaryState();
        }
    }

    private void ensureSummaries() {
        if (summariesStale) {
            rebuildSummaryState();
        }
    }

    /** Builds an allocator for a bucket of {@code bucketSize} bytes cut into pages of {@code pageSize}. */
    public static BitmapPageAllocator forBucket(long pageSize, long bucketSize) {
        if (pageSize <= 0 || bucketSize <= 0 || bucketSize % pageSize != 0) {
            throw new IllegalArgumentException("bucket size " + bucketSize + " is not a positive multiple of page size " + pageSize);
        }
        return new BitmapPageAllocator(bucketSize / pageSize);
    }

    @Override
    public long pageCount() {
        return pageCount;
    }

    @Override
    public synchronized long allocate(long count) {
        if (count < 1) {
            throw new IllegalArgumentException("cannot allocate " + count + " pages: count must be at least 1");
        }
        ensureSummaries();
        if (count > maxFree[1]) {
            return NO_RUN_FITS;
        }
        int k = (int) count;
        long first = findOutsideFences((int) hint, k);
        if (first < 0 && hint > 0) {
            first = findOutsideFences(0, k);
        }
        if (first < 0) {
            return NO_RUN_FITS; // a fit touches a fence, or (unreachable while maxFree[1] >= count) none
        }
        setRange(first, k, true);
        allocated += k;
        hint = first + k == pageCount ? 0 : first + k;
        return first;
    }

    @Override
    public synchronized void free(long firstPage, long count) {
        PageRangeException.checkRange(firstPage, count, pageCount, "free");
        long bad = firstPageInState(firstPage, count, false);
        if (bad >= 0) {
            throw new PageRangeException("free of pages [" + firstPage + ", " + (firstPage + count) + "): page " + bad
                    + " is not allocated (double free, or never allocated)", bad);
        }
        ensureSummaries();
        setRange(firstPage, (int) count, false);
        allocated -= count;
        if (firstPage < hint) {
            hint = firstPage;
        }
    }

    @Override
    public synchronized void markAllocated(long firstPage, long count) {
        checkAllFree(firstPage, count);
        ensureSummaries();
        setRange(firstPage, (int) count, true);
        allocated += count;
    }

    @Override
    public synchronized boolean isAllocated(long page) {
        if (page < 0 || page >= pageCount) {
            throw new PageRangeException("page " + page + " is outside the bucket's pages [0, " + pageCount + ")", -1);
        }
        return (words[(int) (page >>> 6)] & (1L << page)) != 0;
    }

    /**
     * True when every page of the range is allocated: the check a repair makes under the bucket lock
     * before freeing a range it believes leaked.
     */
    public synchronized boolean isRangeAllocated(long firstPage, long count) {
        PageRangeException.checkRange(firstPage, count, pageCount, "check");
        return firstPageInState(firstPage, count, false) < 0;
    }

    @Override
    public synchronized long allocatedCount() {
        return allocated;
    }

    /** Whether {@link #allocate} of {@code count} pages would find a run now (outside every fence), without taking it. */
    public synchronized boolean fits(long count) {
        if (count < 1) {
            throw new IllegalArgumentException("cannot allocate " + count + " pages: count must be at least 1");
        }
        ensureSummaries();
        return count <= maxFree[1] && findOutsideFences(0, (int) count) >= 0;
    }

    // ---- fences ----

    /**
     * Fences pages [firstPage, firstPage + count), free or not, so that no {@link #allocate} takes any of them until
     * {@link #allocateFenced} or {@link #unfence}. False, and nothing fenced, when the run touches another fence or
     * {@value #MAX_FENCES} are up already.
     */
    public synchronized boolean fence(long firstPage, long count) {
        PageRangeException.checkRange(firstPage, count, pageCount, "fence");
        if (fenceCount == MAX_FENCES || fencedUntil(firstPage, firstPage + count) >= 0) {
            return false;
        }
        fenceStart[fenceCount] = firstPage;
        fenceEnd[fenceCount] = firstPage + count;
        fenceCount++;
        return true;
    }

    /**
     * Allocates the fenced run [firstPage, firstPage + count) and takes its fence down, when every page of it is free;
     * false, and the fence left up, when not (or when no such fence is up).
     */
    public synchronized boolean allocateFenced(long firstPage, long count) {
        int fence = fenceIndex(firstPage, count);
        if (fence < 0 || firstPageInState(firstPage, count, true) >= 0) {
            return false;
        }
        ensureSummaries();
        setRange(firstPage, (int) count, true);
        allocated += count;
        removeFence(fence);
        return true;
    }

    /** Takes the fence of [firstPage, firstPage + count) down; false when none is up (taken by {@link #allocateFenced}). */
    public synchronized boolean unfence(long firstPage, long count) {
        int fence = fenceIndex(firstPage, count);
        if (fence < 0) {
            return false;
        }
        removeFence(fence);
        return true;
    }

    /** The fenced runs, as {first page, end page} pairs. */
    public synchronized long[] fences() {
        long[] runs = new long[2 * fenceCount];
        for (int i = 0; i < fenceCount; i++) {
            runs[2 * i] = fenceStart[i];
            runs[2 * i + 1] = fenceEnd[i];
        }
        return runs;
    }

    /**
     * Whether every page of [firstPage, firstPage + count) is free: the check that eviction has made a fenced run free
     * before the allocation comes back for it.
     */
    public synchronized boolean isRangeFree(long firstPage, long count) {
        PageRangeException.checkRange(firstPage, count, pageCount, "check");
        return firstPageInState(firstPage, count, true) < 0;
    }

    /** A copy of the bitmap words that hold pages [fromPage, toPage), word {@code fromPage / 64} first; bits past {@link #pageCount()} are set. */
    public synchronized long[] words(long fromPage, long toPage) {
        PageRangeException.checkRange(fromPage, toPage - fromPage, pageCount, "read");
        return java.util.Arrays.copyOfRange(words, (int) (fromPage >>> 6), (int) ((toPage + 63) >>> 6));
    }

    private int fenceIndex(long firstPage, long count) {
        for (int i = 0; i < fenceCount; i++) {
            if (fenceStart[i] == firstPage && fenceEnd[i] == firstPage + count) {
                return i;
            }
        }
        return -1;
    }

    private void removeFence(int i) {
        fenceCount--;
        fenceStart[i] = fenceStart[fenceCount];
        fenceEnd[i] = fenceEnd[fenceCount];
    }

    /** The end of a fence that pages [from, to) touch, or -1. */
    private long fencedUntil(long from, long to) {
        for (int i = 0; i < fenceCount; i++) {
            if (fenceStart[i] < to && from < fenceEnd[i]) {
                return fenceEnd[i];
            }
        }
        return -1;
    }

    /** Length of the longest run of free pages. */
    public synchronized long largestFreeRun() {
        ensureSummaries();
        return maxFree[1];
    }

    /** Where the next search starts. */
    public synchronized long hint() {
        return hint;
    }

    /** Bytes of heap this allocator's state holds (arrays and their headers), for sizing. */
    public synchronized long footprintBytes() {
        long arrayHeader = 16;
        return 64 + arrayHeader + 8L * words.length + arrayHeader + wordMaxFree.length + 3 * (arrayHeader + 4L * prefixFree.length)
                + arrayHeader + 4L * leafVersions.length;
    }

    private void bumpVersions(long firstPage, long end) {
        for (int leaf = (int) (firstPage / PAGES_PER_LEAF); leaf <= (int) ((end - 1) / PAGES_PER_LEAF); leaf++) {
            leafVersions[leaf]++;
        }
    }

    /** Pages per change-counted region: see {@link #copy()}. */
    public static final int PAGES_PER_VERSION = PAGES_PER_LEAF;

    /**
     * The bitmap words (bits past {@link #pageCount()} set) and, per region of {@value #PAGES_PER_LEAF} pages, a count
     * of the changes made to it, copied together under this allocator's lock.
     */
    public record Copy(long[] words, int[] versions) {
    }

    public synchronized Copy copy() {
        return new Copy(words.clone(), leafVersions.clone());
    }

    /** A copy of the bitmap words; bits past {@link #pageCount()} are set. */
    public synchronized long[] bitmapWords() {
        return words.clone();
    }

    @Override
    public synchronized void forEachFreeRun(FreeRunConsumer consumer) {
        long runStart = -1;
        for (int w = 0; w < words.length; w++) {
            long free = ~words[w];
            int bit = 0;
            while (bit < 64) {
                long rest = free >>> bit;
                int allocatedBits = Long.numberOfTrailingZeros(rest);
                if (allocatedBits > 0) {
                    if (runStart >= 0) {
                        consumer.accept(runStart, (long) w * 64 + bit - runStart);
                        runStart = -1;
                    }
                    if (rest == 0) {
                        break;
                    }
                    bit += allocatedBits;
                    rest >>>= allocatedBits;
                }
                if (runStart < 0) {
                    runStart = (long) w * 64 + bit;
                }
                bit += Long.numberOfTrailingZeros(~rest);
            }
        }
        if (runStart >= 0) {
            consumer.accept(runStart, pageCount - runStart);
        }
    }

    // ---- search ----

    /**
     * The first run of {@code k} free pages at or after {@code from} that touches no fence, or -1. A fit that touches a
     * fence is the first fit, so no other starts before the fence's end: the search goes on from there.
     */
    private long findOutsideFences(int from, int k) {
        while (true) {
            long first = findFrom(from, k);
            long fencedUntil = first < 0 || fenceCount == 0 ? -1 : fencedUntil(first, first + k);
            if (fencedUntil < 0) {
                return first;
            }
            if (fencedUntil + k > pageCount) {
                return -1;
            }
            from = (int) fencedUntil;
        }
    }

    private long findFrom(int from, int k) {
        int fromLeaf = from / PAGES_PER_LEAF;
        carry = 0;
        long found = scanPages(from, (fromLeaf + 1) * PAGES_PER_LEAF, k);
        if (found >= 0 || fromLeaf + 1 >= leafCount) {
            return found;
        }
        return searchTree(1, 0, leafCount, fromLeaf + 1, k);
    }

    /** Visits the leaves [fromLeaf, leafCount) under {@code node} (which spans leaves [lo, hi)) in order. */
    private long searchTree(int node, int lo, int hi, int fromLeaf, int k) {
        if (hi <= fromLeaf) {
            return -1;
        }
        if (lo >= fromLeaf) {
            if (carry + prefixFree[node] >= k) {
                return (long) lo * PAGES_PER_LEAF - carry;
            }
            if (maxFree[node] < k) {
                long nodePages = (long) (hi - lo) * PAGES_PER_LEAF;
                carry = prefixFree[node] == nodePages ? carry + nodePages : suffixFree[node];
                return -1;
            }
            if (hi - lo == 1) {
                return scanPages(lo * PAGES_PER_LEAF, hi * PAGES_PER_LEAF, k);
            }
        }
        int mid = (lo + hi) >>> 1;
        long found = searchTree(2 * node, lo, mid, fromLeaf, k);
        return found >= 0 ? found : searchTree(2 * node + 1, mid, hi, fromLeaf, k);
    }

    /**
     * Looks for the fit word by word over pages [from, to) (word-aligned end), continuing {@link #carry}:
     * a word either extends the carried run, completes the fit with its low free bits, holds the fit
     * inside it, or restarts the carry with its high free bits.
     */
    private long scanPages(int from, int to, int k) {
        int firstWord = from >>> 6;
        int endWord = Math.min(to >>> 6, words.length);
        for (int w = firstWord; w < endWord; w++) {
            long word = words[w];
            if (w == firstWord) {
                word |= (1L << (from & 63)) - 1; // pages before 'from' do not count
            }
            if (word == 0) {
                if (carry + 64 >= k) {
                    return (long) w * 64 - carry;
                }
                carry += 64;
                continue;
            }
            if (carry + Long.numberOfTrailingZeros(word) >= k) {
                return (long) w * 64 - carry;
            }
            if (k <= 64) {
                int inside = firstRunInWord(word, k);
                if (inside >= 0) {
                    return (long) w * 64 + inside;
                }
            }
            carry = Long.numberOfLeadingZeros(word);
        }
        return -1;
    }

    /** Lowest bit at which {@code k} (1..64) free pages start inside {@code word}, or -1. */
    static int firstRunInWord(long word, int k) {
        long starts = ~word; // bit i set: a run of at least 'covered' free pages starts at i
        int covered = 1;
        while (covered < k && starts != 0) {
            int shift = Math.min(covered, k - covered);
            starts &= starts >>> shift;
            covered += shift;
        }
        return starts == 0 ? -1 : Long.numberOfTrailingZeros(starts);
    }

    /** Longest run of free (zero) bits in {@code word}. */
    static int longestFreeRun(long word) {
        long free = ~word;
        int best = 0;
        int bit = 0;
        while (bit < 64) {
            long rest = free >>> bit;
            if (rest == 0) {
                break;
            }
            int allocatedBits = Long.numberOfTrailingZeros(rest);
            bit += allocatedBits;
            int run = Long.numberOfTrailingZeros(~(rest >>> allocatedBits));
            best = Math.max(best, run);
            bit += run;
        }
        return best;
    }

    // ---- updates ----

    /** Refuses a restore of pages [firstPage, firstPage+count) unless they are inside the bucket and all free. */
    private void checkAllFree(long firstPage, long count) {
        PageRangeException.checkRange(firstPage, count, pageCount, "mark allocated");
        long bad = firstPageInState(firstPage, count, true);
        if (bad >= 0) {
            throw new PageRangeException("mark allocated of pages [" + firstPage + ", " + (firstPage + count) + "): page "
                    + bad + " is already allocated", bad);
        }
    }

    /** Index of the first page in [first, first+count) whose bit equals {@code allocatedState}, or -1. */
    private long firstPageInState(long first, long count, boolean allocatedState) {
        return PageWords.first(words, first, count, allocatedState);
    }

    private void setRange(long first, int count, boolean allocate) {
        long end = first + count;
        for (long page = first; page < end; ) {
            int w = (int) (page >>> 6);
            int lowBit = (int) (page & 63);
            int bits = (int) Math.min(64 - lowBit, end - page);
            long mask = (bits == 64 ? -1L : (1L << bits) - 1) << lowBit;
            words[w] = allocate ? words[w] | mask : words[w] & ~mask;
            wordMaxFree[w] = (byte) longestFreeRun(words[w]);
            page += bits;
        }
        int firstLeaf = (int) (first / PAGES_PER_LEAF);
        int lastLeaf = (int) ((end - 1) / PAGES_PER_LEAF);
        for (int leaf = firstLeaf; leaf <= lastLeaf; leaf++) {
            summariseLeaf(leaf);
            leafVersions[leaf]++;
        }
        int lo = (firstLeaf + leafCount) >>> 1;
        int hi = (lastLeaf + leafCount) >>> 1;
        while (lo >= 1) {
            for (int node = lo; node <= hi; node++) {
                combine(node);
            }
            lo >>>= 1;
            hi >>>= 1;
        }
    }

    private void summariseLeaf(int leaf) {
        int prefix = -1;
        int best = 0;
        int run = 0;
        int base = leaf * WORDS_PER_LEAF;
        for (int w = base; w < base + WORDS_PER_LEAF; w++) {
            long word = words[w];
            if (word == 0) {
                run += 64;
                continue;
            }
            run += Long.numberOfTrailingZeros(word);
            if (prefix < 0) {
                prefix = run;
            }
            best = Math.max(best, Math.max(run, wordMaxFree[w]));
            run = Long.numberOfLeadingZeros(word);
        }
        int node = leafCount + leaf;
        prefixFree[node] = prefix < 0 ? run : prefix;
        suffixFree[node] = run;
        maxFree[node] = Math.max(best, run);
    }

    private void combine(int node) {
        int left = 2 * node;
        int right = left + 1;
        int childPages = PAGES_PER_LEAF << (leafLevels - (31 - Integer.numberOfLeadingZeros(left)));
        prefixFree[node] = prefixFree[left] == childPages ? childPages + prefixFree[right] : prefixFree[left];
        suffixFree[node] = suffixFree[right] == childPages ? childPages + suffixFree[left] : suffixFree[right];
        maxFree[node] = Math.max(Math.max(maxFree[left], maxFree[right]), suffixFree[left] + prefixFree[right]);
    }
}
