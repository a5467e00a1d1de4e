package io.mcctl.cli.bench;

import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.alloc.FreeSpaceReport;
import io.mcctl.storage.alloc.LinearScanPageAllocator;
import io.mcctl.storage.alloc.PageAllocator;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Steady-state free+allocate pairs on a fragmented bucket, for mcctl's allocator and the design RFC's
 * bit-by-bit scan, from the same starting state and the same random choices. Because both place runs by
 * the same rule (first fit from the hint), they do the same work step for step; only the search differs.
 */
public final class AllocatorBenchmark {

    /** One configuration to measure. */
    public record Case(long pages, double fill) {
        public String name() {
            return pages + " pages at " + Math.round(fill * 100) + "% fill";
        }
    }

    /** Measured figures of one case. */
    public record Result(String name, long pages, double targetFill, double startFill, double fragmentationScore,
                         long oursOps, double oursNsPerPair, long oursFailures,
                         long rfcOps, double rfcNsPerPair, long rfcFailures, double speedup) {
    }

    /** Live runs of a steady-state workload: parallel int arrays, swap-removal. */
    private static final class LiveRuns {
        int[] starts;
        int[] lengths;
        int size;

        LiveRuns(int capacity) {
            starts = new int[capacity];
            lengths = new int[capacity];
        }

        LiveRuns copy() {
            LiveRuns copy = new LiveRuns(starts.length);
            copy.starts = Arrays.copyOf(starts, starts.length);
            copy.lengths = Arrays.copyOf(lengths, lengths.length);
            copy.size = size;
            return copy;
        }

        void add(long start, int length) {
            if (size == starts.length) {
                starts = Arrays.copyOf(starts, size * 2);
                lengths = Arrays.copyOf(lengths, size * 2);
            }
            starts[size] = (int) start;
            lengths[size] = length;
            size++;
        }

        void removeAt(int index) {
            size--;
            starts[index] = starts[size];
            lengths[index] = lengths[size];
        }
    }

    static final int MAX_RUN = 16;

    private final long seed;
    private final long oursOps;
    private final long rfcBudgetNanos;

    /**
     * @param oursOps        free+allocate pairs measured for mcctl's allocator per case
     * @param rfcBudgetNanos time the RFC allocator may take per case; it stops early when this is spent
     */
    public AllocatorBenchmark(long seed, long oursOps, long rfcBudgetNanos) {
        this.seed = seed;
        this.oursOps = oursOps;
        this.rfcBudgetNanos = rfcBudgetNanos;
    }

    public Result run(Case benchCase) {
        LiveRuns start = fragmentedState(benchCase);
        BitmapPageAllocator ours = restore(new BitmapPageAllocator(benchCase.pages()), start);
        double startFill = (double) ours.allocatedCount() / benchCase.pages();
        double fragmentation = FreeSpaceReport.of(ours, 4096, 64 << 10).fragmentationScore();

        // Warm-up on throwaway copies so both loops run compiled code.
        steadyState(restore(new BitmapPageAllocator(benchCase.pages()), start), start.copy(), 50_000, Long.MAX_VALUE, seed + 1);
        steadyState(restore(new LinearScanPageAllocator(benchCase.pages()), start), start.copy(), 200, rfcBudgetNanos / 10, seed + 1);

        long[] oursStats = steadyState(ours, start.copy(), oursOps, Long.MAX_VALUE, seed + 2);
        long[] rfcStats = steadyState(restore(new LinearScanPageAllocator(benchCase.pages()), start), start.copy(), oursOps,
                rfcBudgetNanos, seed + 2);
        double oursNs = (double) oursStats[1] / oursStats[0];
        double rfcNs = (double) rfcStats[1] / rfcStats[0];
        return new Result(benchCase.name(), benchCase.pages(), benchCase.fill(), startFill, fragmentation,
                oursStats[0], oursNs, oursStats[2], rfcStats[0], rfcNs, rfcStats[2], rfcNs / oursNs);
    }

    /** Fills to the target with random runs, then churns (free a random run, allocate a random run) to fragment it. */
    private LiveRuns fragmentedState(Case benchCase) {
        BitmapPageAllocator allocator = new BitmapPageAllocator(benchCase.pages());
        SplittableRandom random = new SplittableRandom(seed);
        LiveRuns live = new LiveRuns(1024);
        long target = (long) (benchCase.fill() * benchCase.pages());
        fill(allocator, live, random, target);
        long churn = 4L * live.size;
        for (long i = 0; i < churn; i++) {
            int victim = random.nextInt(live.size);
            allocator.free(live.starts[victim], live.lengths[victim]);
            live.removeAt(victim);
            int length = 1 + random.nextInt(MAX_RUN);
            long first = allocator.allocate(length);
            if (first >= 0) {
                live.add(first, length);
            }
        }
        fill(allocator, live, random, target);
        return live;
    }

    /** Allocates random runs until {@code target} pages are used; where no run of that length fits, single pages. */
    private static void fill(PageAllocator allocator, LiveRuns live, SplittableRandom random, long target) {
        while (allocator.allocatedCount() < target) {
            int length = (int) Math.min(1 + random.nextInt(MAX_RUN), target - allocator.allocatedCount());
            long first = allocator.allocate(length);
            if (first < 0) {
                length = 1;
                first = allocator.allocate(length);
                if (first < 0) {
                    return; // the bucket is full
                }
            }
            live.add(first, length);
        }
    }

    private static <A extends PageAllocator> A restore(A allocator, LiveRuns live) {
        for (int i = 0; i < live.size; i++) {
            allocator.markAllocated(live.starts[i], live.lengths[i]);
        }
        return allocator;
    }

    /** @return {pairs done, nanoseconds, allocation failures} */
    private static long[] steadyState(PageAllocator allocator, LiveRuns live, long ops, long budgetNanos, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        long failures = 0;
        long done = 0;
        long begin = System.nanoTime();
        long deadline = budgetNanos == Long.MAX_VALUE ? Long.MAX_VALUE : begin + budgetNanos;
        long now = begin;
        while (done < ops && live.size > 0) {
            int victim = random.nextInt(live.size);
            allocator.free(live.starts[victim], live.lengths[victim]);
            int length = 1 + random.nextInt(MAX_RUN);
            long first = allocator.allocate(length);
            if (first >= 0) {
                live.starts[victim] = (int) first;
                live.lengths[victim] = length;
            } else {
                failures++;
                live.removeAt(victim);
            }
            done++;
            if ((done & 63) == 0 && deadline != Long.MAX_VALUE) {
                now = System.nanoTime();
                if (now >= deadline) {
                    break;
                }
            }
        }
        now = System.nanoTime();
        return new long[] {done, now - begin, failures};
    }

    /** Heap held by the allocators of {@code buckets} buckets of {@code pagesPerBucket} pages. */
    public static long footprintBytes(int buckets, long pagesPerBucket) {
        return buckets * new BitmapPageAllocator(pagesPerBucket).footprintBytes();
    }
}
