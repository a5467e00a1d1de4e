package io.mcctl.storage.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class BitmapPageAllocatorConcurrencyTest {

    private static final int PAGES = 65_536;
    private static final int THREADS = 8;
    private static final int OPERATIONS_PER_THREAD = 20_000;
    /**
     * Live runs a thread may hold: 8 threads x 1000 runs x 8.5 pages on average is more than the bucket
     * holds, so the threads run it full and meet NO_RUN_FITS and the wrap-around.
     */
    private static final int MAX_LIVE_RUNS_PER_THREAD = 1000;

    /** What one thread holds at the end, and how often the bucket had no room for it. */
    private record Outcome(List<long[]> liveRuns, int noRunFits) {
        long livePages() {
            return liveRuns.stream().mapToLong(r -> r[1]).sum();
        }
    }

    @Test
    void eight_threads_allocating_and_freeing_never_hold_the_same_page() throws Exception {
        BitmapPageAllocator allocator = new BitmapPageAllocator(PAGES);
        AtomicIntegerArray owner = new AtomicIntegerArray(PAGES); // 0 = nobody, else thread number 1..8
        CyclicBarrier start = new CyclicBarrier(THREADS);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        List<Future<Outcome>> futures = new ArrayList<>();
        try {
            for (int t = 1; t <= THREADS; t++) {
                int me = t;
                futures.add(pool.submit(() -> work(allocator, owner, me, start)));
            }
            List<Outcome> outcomes = new ArrayList<>();
            for (Future<Outcome> f : futures) {
                outcomes.add(f.get()); // rethrows any assertion a worker failed
            }

            long livePages = outcomes.stream().mapToLong(Outcome::livePages).sum();
            assertEquals(livePages, allocator.allocatedCount(), "allocatedCount equals the pages the threads hold");
            int ownedPages = 0;
            for (int page = 0; page < PAGES; page++) {
                boolean owned = owner.get(page) != 0;
                ownedPages += owned ? 1 : 0;
                if (owned != allocator.isAllocated(page)) {
                    throw new AssertionError("page " + page + " owned by " + owner.get(page) + " but isAllocated "
                            + allocator.isAllocated(page));
                }
            }
            assertEquals(livePages, ownedPages);
            assertTrue(outcomes.stream().mapToInt(Outcome::noRunFits).sum() > 0,
                    "the workload is meant to fill the bucket at times; if it never does it tests less than it claims");

            for (Outcome outcome : outcomes) {
                for (long[] run : outcome.liveRuns()) {
                    allocator.free(run[0], run[1]);
                }
            }
            assertEquals(0, allocator.allocatedCount());
            assertEquals(PAGES, allocator.largestFreeRun());
        } finally {
            pool.shutdownNow();
        }
    }

    private static Outcome work(BitmapPageAllocator allocator, AtomicIntegerArray owner, int me, CyclicBarrier start)
            throws Exception {
        SplittableRandom random = new SplittableRandom(me * 7919L);
        List<long[]> live = new ArrayList<>();
        int noRunFits = 0;
        start.await();
        for (int op = 0; op < OPERATIONS_PER_THREAD; op++) {
            boolean allocate = live.isEmpty() || (live.size() < MAX_LIVE_RUNS_PER_THREAD && random.nextInt(100) < 60);
            if (allocate) {
                long count = 1 + random.nextInt(16);
                long first = allocator.allocate(count);
                if (first == PageAllocator.NO_RUN_FITS) {
                    noRunFits++;
                    continue;
                }
                for (long page = first; page < first + count; page++) {
                    if (!owner.compareAndSet((int) page, 0, me)) {
                        throw new AssertionError("thread " + me + " was given page " + page + " of [" + first + ", "
                                + (first + count) + ") which thread " + owner.get((int) page) + " holds");
                    }
                }
                live.add(new long[] {first, count});
            } else {
                long[] run = live.remove(random.nextInt(live.size()));
                // Give the pages up before freeing them: once freed, another thread may be handed them at once.
                for (long page = run[0]; page < run[0] + run[1]; page++) {
                    if (!owner.compareAndSet((int) page, me, 0)) {
                        throw new AssertionError("thread " + me + " lost page " + page + " to thread " + owner.get((int) page));
                    }
                }
                allocator.free(run[0], run[1]);
            }
        }
        return new Outcome(live, noRunFits);
    }
}
