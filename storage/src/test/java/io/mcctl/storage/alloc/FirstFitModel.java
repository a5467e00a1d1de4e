package io.mcctl.storage.alloc;

import java.util.ArrayList;
import java.util.List;

/**
 * The trivial reference for page placement: one boolean per page and a hint, with the placement rule
 * spelled out by brute force (prefix sums, no cleverness). First fit: the lowest start s >= hint such
 * that [s, s+count) is all free and inside the bucket; if none and hint > 0, the lowest start s >= 0;
 * else {@link PageAllocator#NO_RUN_FITS}. After an allocation the hint is s+count (0 if that is the
 * page count); a free below the hint moves it down to the freed page; markAllocated leaves it alone.
 * Fences ({@link BitmapPageAllocator#fence}): a fit never touches one; a fence is refused when it touches another or
 * {@value BitmapPageAllocator#MAX_FENCES} are up; a fenced run is allocated only whole, only when all free, and that
 * takes its fence down and leaves the hint alone.
 */
final class FirstFitModel {

    final int pageCount;
    final boolean[] used;
    /** The fences up, as {first, end}. */
    final List<long[]> fences = new ArrayList<>();
    long hint;
    long allocated;

    FirstFitModel(int pageCount) {
        this.pageCount = pageCount;
        this.used = new boolean[pageCount];
    }

    long allocate(long count) {
        long start = lowestFitAtOrAfter(hint, count);
        if (start < 0 && hint > 0) {
            start = lowestFitAtOrAfter(0, count);
        }
        if (start < 0) {
            return PageAllocator.NO_RUN_FITS;
        }
        set(start, count, true);
        allocated += count;
        hint = start + count == pageCount ? 0 : start + count;
        return start;
    }

    private long lowestFitAtOrAfter(long from, long count) {
        if (count > pageCount) {
            return -1;
        }
        // freeBefore[i] = number of free pages in [0, i)
        int[] freeBefore = new int[pageCount + 1];
        for (int i = 0; i < pageCount; i++) {
            freeBefore[i + 1] = freeBefore[i] + (used[i] ? 0 : 1);
        }
        for (long s = from; s + count <= pageCount; s++) {
            if (freeBefore[(int) (s + count)] - freeBefore[(int) s] == count && !fenced(s, s + count)) {
                return s;
            }
        }
        return -1;
    }

    /** Whether an allocation of {@code count} would find a run now. */
    boolean fits(long count) {
        return lowestFitAtOrAfter(0, count) >= 0;
    }

    private boolean fenced(long from, long to) {
        for (long[] f : fences) {
            if (f[0] < to && from < f[1]) {
                return true;
            }
        }
        return false;
    }

    boolean fence(long first, long count) {
        if (fences.size() == BitmapPageAllocator.MAX_FENCES || fenced(first, first + count)) {
            return false;
        }
        fences.add(new long[] {first, first + count});
        return true;
    }

    boolean allocateFenced(long[] fence) {
        if (firstPageInState(fence[0], fence[1] - fence[0], true) >= 0) {
            return false;
        }
        markAllocated(fence[0], fence[1] - fence[0]);
        fences.remove(fence);
        return true;
    }

    /** The words of the bitmap that hold the pages, as the allocator lays them out (bits past the last page set). */
    long[] words() {
        long[] words = new long[(pageCount + 63) / 64];
        for (int page = 0; page < words.length * 64; page++) {
            if (page >= pageCount || used[page]) {
                words[page >>> 6] |= 1L << page;
            }
        }
        return words;
    }

    boolean inBounds(long first, long count) {
        return count >= 1 && first >= 0 && first + count <= pageCount;
    }

    /** First page of the range whose state is {@code state}, or -1. */
    long firstPageInState(long first, long count, boolean state) {
        for (long p = first; p < first + count; p++) {
            if (used[(int) p] == state) {
                return p;
            }
        }
        return -1;
    }

    /** The offending page a refused free would name: -1 for a bad range, else the first free page; null if the free is legal. */
    Long freeRefusal(long first, long count) {
        if (!inBounds(first, count)) {
            return -1L;
        }
        long bad = firstPageInState(first, count, false);
        return bad >= 0 ? bad : null;
    }

    /** Like {@link #freeRefusal} for markAllocated: the first allocated page. */
    Long markRefusal(long first, long count) {
        if (!inBounds(first, count)) {
            return -1L;
        }
        long bad = firstPageInState(first, count, true);
        return bad >= 0 ? bad : null;
    }

    void free(long first, long count) {
        set(first, count, false);
        allocated -= count;
        if (first < hint) {
            hint = first;
        }
    }

    void markAllocated(long first, long count) {
        set(first, count, true);
        allocated += count;
    }

    private void set(long first, long count, boolean value) {
        for (long p = first; p < first + count; p++) {
            used[(int) p] = value;
        }
    }

    /** Maximal free runs, lowest first, as {start, length}. */
    List<long[]> freeRuns() {
        List<long[]> runs = new ArrayList<>();
        int p = 0;
        while (p < pageCount) {
            if (used[p]) {
                p++;
                continue;
            }
            int start = p;
            while (p < pageCount && !used[p]) {
                p++;
            }
            runs.add(new long[] {start, p - start});
        }
        return runs;
    }

    long longestFreeRun() {
        long best = 0;
        for (long[] run : freeRuns()) {
            best = Math.max(best, run[1]);
        }
        return best;
    }
}
