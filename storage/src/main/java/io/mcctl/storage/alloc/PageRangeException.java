package io.mcctl.storage.alloc;

/**
 * A page range that an allocator refused: out of the bucket, or in the wrong state for the operation
 * (double free, free of never-allocated pages, restore over allocated pages). The allocator is unchanged.
 */
public final class PageRangeException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final long offendingPage;

    public PageRangeException(String message, long offendingPage) {
        super(message);
        this.offendingPage = offendingPage;
    }

    /** The first page that broke the rule, or -1 when the range itself was invalid. */
    public long offendingPage() {
        return offendingPage;
    }

    static void checkRange(long firstPage, long count, long pageCount, String operation) {
        if (count < 1) {
            throw new PageRangeException(operation + " of " + count + " pages at page " + firstPage
                    + ": count must be at least 1", -1);
        }
        if (firstPage < 0 || firstPage > pageCount - count) {
            throw new PageRangeException(operation + " of pages [" + firstPage + ", " + (firstPage + count)
                    + "): outside the bucket's pages [0, " + pageCount + ")", -1);
        }
    }
}
