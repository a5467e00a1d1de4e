package io.mcctl.storage.alloc;

/**
 * Page allocation inside one bucket file: the contract of the design's BitmapPageAllocator.
 *
 * <p>Pages are numbered from 0 to {@link #pageCount()} - 1. {@link #allocate} returns the first page of
 * a run of free pages that it has marked allocated, or {@link #NO_RUN_FITS}. Placement is first fit at
 * or after a hint that follows the last allocation and moves back to the lowest freed page, wrapping
 * to page 0 when nothing at or after the hint fits.
 *
 * <p>Freeing pages that are not allocated, marking pages that are already allocated, and ranges
 * outside the bucket throw {@link PageRangeException} and change nothing. Implementations are safe
 * for concurrent use.
 */
public interface PageAllocator {

    /** The result of {@link #allocate} when no run of free pages of the requested length exists. */
    long NO_RUN_FITS = -1;

    /** Number of pages the bucket holds. */
    long pageCount();

    /**
     * Allocates a run of {@code count} consecutive pages.
     *
     * @return the first page of the run, or {@link #NO_RUN_FITS}
     * @throws IllegalArgumentException when {@code count < 1}
     */
    long allocate(long count);

    /** Frees {@code count} pages from {@code firstPage}; every one of them must be allocated. */
    void free(long firstPage, long count);

    /** Marks {@code count} pages from {@code firstPage} allocated (state restore); every one must be free. */
    void markAllocated(long firstPage, long count);

    boolean isAllocated(long page);

    long allocatedCount();
}
