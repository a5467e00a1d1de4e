package io.mcctl.storage.alloc;

/**
 * The design RFC's allocation algorithm, kept as the baseline that {@code mcctl bench allocator}
 * measures {@link BitmapPageAllocator} against: a bitmap scanned bit by bit from a hint, wrapping to
 * page 0, the hint moved past each allocation and back to the lowest freed page.
 *
 * <p>The scan after the wrap covers the whole bucket again, so a run that straddles the hint is found;
 * placement is therefore exactly that of {@link BitmapPageAllocator}, which lets one model test both.
 *
 * <p>Thread safety: the monitor of this allocator guards {@link #words}, {@link #allocated}, {@link #hint}.
 */
public final class LinearScanPageAllocator implements PageAllocator {

    private final long pageCount;
    private final long[] words;
    private long allocated;
    private long hint;

    public LinearScanPageAllocator(long pageCount) {
        if (pageCount < 1 || pageCount > BitmapPageAllocator.MAX_PAGES) {
            throw new IllegalArgumentException("page count " + pageCount + " is outside 1.." + BitmapPageAllocator.MAX_PAGES);
        }
        this.pageCount = pageCount;
        this.words = new long[(int) ((pageCount + 63) >>> 6)];
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
        long first = scanFrom(hint, count);
        if (first < 0 && hint > 0) {
            first = scanFrom(0, count);
        }
        if (first < 0) {
            return NO_RUN_FITS;
        }
        for (long page = first; page < first + count; page++) {
            set(page, true);
        }
        allocated += count;
        hint = first + count == pageCount ? 0 : first + count;
        return first;
    }

    private long scanFrom(long from, long count) {
        long run = 0;
        for (long page = from; page < pageCount; page++) {
            if (get(page)) {
                run = 0;
            } else if (++run == count) {
                return page - count + 1;
            }
        }
        return -1;
    }

    @Override
    public synchronized void free(long firstPage, long count) {
        PageRangeException.checkRange(firstPage, count, pageCount, "free");
        for (long page = firstPage; page < firstPage + count; page++) {
            if (!get(page)) {
                throw new PageRangeException("free of pages [" + firstPage + ", " + (firstPage + count) + "): page " + page
                        + " is not allocated (double free, or never allocated)", page);
            }
        }
        for (long page = firstPage; page < firstPage + count; page++) {
            set(page, false);
        }
        allocated -= count;
        if (firstPage < hint) {
            hint = firstPage;
        }
    }

    @Override
    public synchronized void markAllocated(long firstPage, long count) {
        PageRangeException.checkRange(firstPage, count, pageCount, "mark allocated");
        for (long page = firstPage; page < firstPage + count; page++) {
            if (get(page)) {
                throw new PageRangeException("mark allocated of pages [" + firstPage + ", " + (firstPage + count) + "): page "
                        + page + " is already allocated", page);
            }
        }
        for (long page = firstPage; page < firstPage + count; page++) {
            set(page, true);
        }
        allocated += count;
    }

    @Override
    public synchronized boolean isAllocated(long page) {
        if (page < 0 || page >= pageCount) {
            throw new PageRangeException("page " + page + " is outside the bucket's pages [0, " + pageCount + ")", -1);
        }
        return get(page);
    }

    @Override
    public synchronized long allocatedCount() {
        return allocated;
    }

    private boolean get(long page) {
        return (words[(int) (page >>> 6)] & (1L << page)) != 0;
    }

    private void set(long page, boolean value) {
        int w = (int) (page >>> 6);
        words[w] = value ? words[w] | (1L << page) : words[w] & ~(1L << page);
    }
}
