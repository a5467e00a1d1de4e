package io.mcctl.storage.alloc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.RandomDistribution;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.Tuple;

/**
 * Drives {@link BitmapPageAllocator} and {@link LinearScanPageAllocator} in lock step with the trivial
 * {@link FirstFitModel} through random sequences of allocate, free and markAllocated, and checks after
 * every step that both agree with the model page for page.
 *
 * <p>No {@code @Timeout} here: jqwik ignores Jupiter's annotation (and warns about it). What bounds this
 * class is its fixed number of tries and the length of each sequence: about 40,000 steps, a few seconds.
 */
class AllocatorModelPropertiesTest {

    enum Kind { ALLOCATE, ALLOCATE_SCALED, ALLOCATE_LARGEST_FREE_RUN, FREE_LIVE, FREE_PART_OF_LIVE, FREE_RANDOM, MARK_FREE_SPACE, MARK_RANDOM }

    /** One step; {@code a} and {@code b} are raw numbers that the step interprets against the state it meets. */
    record Op(Kind kind, int a, int b) {
        @Override
        public String toString() {
            return kind + "(" + a + ", " + b + ")";
        }
    }

    @Property(tries = 1000, shrinking = ShrinkingMode.BOUNDED)
    void both_allocators_behave_exactly_like_the_first_fit_model(@ForAll("pageCounts") int pageCount,
                                                                  @ForAll("regionSizes") int regionPages,
                                                                  @ForAll("operations") List<Op> ops) {
        Run run = new Run(pageCount, regionPages);
        run.verify();
        for (Op op : ops) {
            run.apply(op);
            run.verify();
        }
    }

    @Provide
    Arbitrary<Integer> pageCounts() {
        return Arbitraries.of(1, 2, 63, 64, 65, 511, 512, 513, 1000, 1024, 1537, 4096, 5000);
    }

    @Provide
    Arbitrary<Integer> regionSizes() {
        return Arbitraries.of(1, 7, 64, 100, 512, 1000, 100_000);
    }

    @Provide
    Arbitrary<List<Op>> operations() {
        Arbitrary<Integer> raw = Arbitraries.integers().between(0, 1_000_000);
        Arbitrary<Op> allocate = Arbitraries.frequencyOf(
                        Tuple.of(92, Arbitraries.integers().between(1, 64)),
                        Tuple.of(6, Arbitraries.integers().between(65, 6000)),
                        Tuple.of(2, Arbitraries.integers().between(-1, 0)))
                .map(count -> new Op(Kind.ALLOCATE, count, 0));
        Arbitrary<Op> allocateScaled = raw.map(r -> new Op(Kind.ALLOCATE_SCALED, r, 0));
        Arbitrary<Op> allocateLargest = Arbitraries.integers().between(-1, 1)
                .map(delta -> new Op(Kind.ALLOCATE_LARGEST_FREE_RUN, delta, 0));
        Arbitrary<Op> freeLive = raw.map(index -> new Op(Kind.FREE_LIVE, index, 0));
        Arbitrary<Op> freePart = raw.tuple2().map(t -> new Op(Kind.FREE_PART_OF_LIVE, t.get1(), t.get2()));
        Arbitrary<Integer> randomCount = Arbitraries.frequencyOf(
                Tuple.of(90, Arbitraries.integers().between(-1, 70)),
                Tuple.of(10, Arbitraries.integers().between(71, 6000)));
        Arbitrary<Op> freeRandom = Combinators.combine(raw, randomCount)
                .as((start, count) -> new Op(Kind.FREE_RANDOM, start, count));
        Arbitrary<Integer> markLength = Arbitraries.frequencyOf(
                Tuple.of(85, Arbitraries.integers().between(1, 64)),
                Tuple.of(15, Arbitraries.integers().between(65, 5000)));
        Arbitrary<Op> markFree = Combinators.combine(raw, markLength)
                .as((start, length) -> new Op(Kind.MARK_FREE_SPACE, start, length));
        Arbitrary<Op> markRandom = Combinators.combine(raw, randomCount)
                .as((start, count) -> new Op(Kind.MARK_RANDOM, start, count));
        Arbitrary<Op> op = Arbitraries.frequencyOf(
                Tuple.of(40, allocate),
                Tuple.of(6, allocateScaled),
                Tuple.of(4, allocateLargest),
                Tuple.of(26, freeLive),
                Tuple.of(6, freePart),
                Tuple.of(8, freeRandom),
                Tuple.of(9, markFree),
                Tuple.of(7, markRandom));
        return op.list().ofMinSize(1).ofMaxSize(120).withSizeDistribution(RandomDistribution.uniform());
    }

    /** The two allocators, the model, and the live allocations (start -> end) of one sequence. */
    private static final class Run {
        final int pageCount;
        final int regionPages;
        final FirstFitModel model;
        final BitmapPageAllocator bitmap;
        final LinearScanPageAllocator linear;
        final NavigableMap<Long, Long> live = new TreeMap<>();

        Run(int pageCount, int regionPages) {
            this.pageCount = pageCount;
            this.regionPages = regionPages;
            this.model = new FirstFitModel(pageCount);
            this.bitmap = new BitmapPageAllocator(pageCount);
            this.linear = new LinearScanPageAllocator(pageCount);
        }

        void apply(Op op) {
            switch (op.kind()) {
                case ALLOCATE -> allocate(op.a());
                case ALLOCATE_SCALED -> allocate(1 + op.a() % Math.max(1, pageCount / 8));
                case ALLOCATE_LARGEST_FREE_RUN -> allocate(model.longestFreeRun() + op.a());
                case FREE_LIVE -> {
                    if (live.isEmpty()) {
                        free(randomStart(op.a()), 1);
                    } else {
                        Map.Entry<Long, Long> victim = nth(op.a());
                        free(victim.getKey(), victim.getValue() - victim.getKey());
                    }
                }
                case FREE_PART_OF_LIVE -> {
                    if (live.isEmpty()) {
                        free(randomStart(op.a()), 2);
                    } else {
                        Map.Entry<Long, Long> victim = nth(op.a());
                        long length = victim.getValue() - victim.getKey();
                        long offset = op.b() % length;
                        long count = 1 + (op.b() / 7) % (length - offset);
                        free(victim.getKey() + offset, count);
                    }
                }
                case FREE_RANDOM -> free(randomStart(op.a()), op.b());
                case MARK_FREE_SPACE -> {
                    long start = op.a() % pageCount;
                    long probe = start;
                    while (model.used[(int) probe]) {
                        probe = (probe + 1) % pageCount;
                        if (probe == start) {
                            break; // bucket full: the mark below is refused
                        }
                    }
                    long length = 0;
                    while (length < op.b() && probe + length < pageCount && !model.used[(int) (probe + length)]) {
                        length++;
                    }
                    markAllocated(probe, Math.max(1, length));
                }
                case MARK_RANDOM -> markAllocated(randomStart(op.a()), op.b());
            }
        }

        /** A start that is sometimes just outside the bucket on either side. */
        private long randomStart(int raw) {
            return raw % (pageCount + 4) - 2;
        }

        private Map.Entry<Long, Long> nth(int raw) {
            int index = raw % live.size();
            for (Map.Entry<Long, Long> e : live.entrySet()) {
                if (index-- == 0) {
                    return e;
                }
            }
            throw new AssertionError("unreachable");
        }

        void allocate(long count) {
            if (count < 1) {
                long[] words = bitmap.bitmapWords();
                assertThrows(IllegalArgumentException.class, () -> bitmap.allocate(count));
                assertThrows(IllegalArgumentException.class, () -> linear.allocate(count));
                assertArrayEquals(words, bitmap.bitmapWords());
                return;
            }
            long hintBefore = model.hint;
            long expected = model.allocate(count);
            long fromBitmap = bitmap.allocate(count);
            long fromLinear = linear.allocate(count);
            assertEquals(expected, fromBitmap, () -> "BitmapPageAllocator.allocate(" + count + ") from hint " + hintBefore);
            assertEquals(expected, fromLinear, () -> "LinearScanPageAllocator.allocate(" + count + ") from hint " + hintBefore);
            if (expected >= 0) {
                addLive(expected, expected + count);
            }
        }

        void free(long first, long count) {
            Long refusal = model.freeRefusal(first, count);
            if (refusal != null) {
                expectRefusal(refusal, () -> bitmap.free(first, count), () -> linear.free(first, count));
                return;
            }
            bitmap.free(first, count);
            linear.free(first, count);
            model.free(first, count);
            carveLive(first, first + count);
        }

        void markAllocated(long first, long count) {
            Long refusal = model.markRefusal(first, count);
            if (refusal != null) {
                expectRefusal(refusal, () -> bitmap.markAllocated(first, count), () -> linear.markAllocated(first, count));
                return;
            }
            bitmap.markAllocated(first, count);
            linear.markAllocated(first, count);
            model.markAllocated(first, count);
            addLive(first, first + count);
        }

        private void expectRefusal(long offendingPage, Runnable onBitmap, Runnable onLinear) {
            long[] words = bitmap.bitmapWords();
            long bitmapCount = bitmap.allocatedCount();
            long bitmapHint = bitmap.hint();
            long linearCount = linear.allocatedCount();
            PageRangeException b = assertThrows(PageRangeException.class, onBitmap::run);
            PageRangeException l = assertThrows(PageRangeException.class, onLinear::run);
            assertEquals(offendingPage, b.offendingPage(), b::getMessage);
            assertEquals(offendingPage, l.offendingPage(), l::getMessage);
            assertArrayEquals(words, bitmap.bitmapWords(), "a refused call changed the bitmap");
            assertEquals(bitmapCount, bitmap.allocatedCount());
            assertEquals(bitmapHint, bitmap.hint());
            assertEquals(linearCount, linear.allocatedCount());
        }

        /** Records a new live allocation, proving it overlaps none of the live ones. */
        private void addLive(long start, long end) {
            Map.Entry<Long, Long> below = live.floorEntry(start);
            assertTrue(below == null || below.getValue() <= start,
                    () -> "[" + start + ", " + end + ") overlaps live allocation [" + below.getKey() + ", " + below.getValue() + ")");
            Map.Entry<Long, Long> above = live.ceilingEntry(start);
            assertTrue(above == null || above.getKey() >= end,
                    () -> "[" + start + ", " + end + ") overlaps live allocation [" + above.getKey() + ", " + above.getValue() + ")");
            live.put(start, end);
        }

        /** Removes [start, end) from the live allocations, splitting the ones it cuts. */
        private void carveLive(long start, long end) {
            List<long[]> touched = new ArrayList<>();
            Map.Entry<Long, Long> below = live.lowerEntry(start);
            if (below != null && below.getValue() > start) {
                touched.add(new long[] {below.getKey(), below.getValue()});
            }
            for (Map.Entry<Long, Long> e : live.subMap(start, true, end, false).entrySet()) {
                touched.add(new long[] {e.getKey(), e.getValue()});
            }
            for (long[] t : touched) {
                live.remove(t[0]);
                if (t[0] < start) {
                    live.put(t[0], start);
                }
                if (t[1] > end) {
                    live.put(end, t[1]);
                }
            }
        }

        void verify() {
            assertEquals(model.allocated, bitmap.allocatedCount(), "bitmap allocatedCount");
            assertEquals(model.allocated, linear.allocatedCount(), "linear allocatedCount");
            for (int page = 0; page < pageCount; page++) {
                boolean expected = model.used[page];
                if (bitmap.isAllocated(page) != expected || linear.isAllocated(page) != expected) {
                    throw new AssertionError("page " + page + ": model " + expected + ", bitmap " + bitmap.isAllocated(page)
                            + ", linear " + linear.isAllocated(page));
                }
            }
            List<long[]> runs = model.freeRuns();
            long longest = 0;
            for (long[] run : runs) {
                longest = Math.max(longest, run[1]);
            }
            assertEquals(longest, bitmap.largestFreeRun(), "largestFreeRun");
            assertEquals(model.hint, bitmap.hint(), "hint");

            // The live allocations are disjoint and cover exactly the allocated pages.
            boolean[] covered = new boolean[pageCount];
            long previousEnd = 0;
            long liveTotal = 0;
            for (Map.Entry<Long, Long> e : live.entrySet()) {
                assertTrue(e.getKey() >= previousEnd, "live allocations overlap");
                for (long p = e.getKey(); p < e.getValue(); p++) {
                    covered[(int) p] = true;
                }
                liveTotal += e.getValue() - e.getKey();
                previousEnd = e.getValue();
            }
            assertArrayEquals(model.used, covered, "live allocations and allocated pages differ");
            assertEquals(liveTotal, bitmap.allocatedCount());

            verifyReport(runs);
        }

        private void verifyReport(List<long[]> runs) {
            FreeSpaceReport report = FreeSpaceReport.of(bitmap, regionPages);
            long free = 0;
            long largest = 0;
            long[] histogram = new long[64];
            int classes = 0;
            FragmentationScore score = new FragmentationScore();
            for (long[] run : runs) {
                free += run[1];
                largest = Math.max(largest, run[1]);
                int c = 63 - Long.numberOfLeadingZeros(run[1]);
                histogram[c]++;
                classes = Math.max(classes, c + 1);
                score.addFreeRun(run[1]);
            }
            assertEquals(pageCount, report.pageCount());
            assertEquals(free, report.freePages(), "report free pages");
            assertEquals(pageCount - free, report.usedPages());
            assertEquals(runs.size(), report.freeRunCount(), "report run count");
            assertEquals(largest, report.largestFreeRun(), "report largest run");
            assertArrayEquals(Arrays.copyOf(histogram, classes), report.runLengthHistogram(), "report histogram");
            assertEquals(score.score(), report.fragmentationScore(), 1e-12);
            assertEquals(regionPages, report.regionPages());

            List<FreeSpaceReport.RegionState> regions = new ArrayList<>();
            for (int start = 0; start < pageCount; start += regionPages) {
                int end = (int) Math.min((long) start + regionPages, pageCount);
                int freeHere = 0;
                for (int p = start; p < end; p++) {
                    freeHere += model.used[p] ? 0 : 1;
                }
                regions.add(freeHere == 0 ? FreeSpaceReport.RegionState.FULL
                        : freeHere == end - start ? FreeSpaceReport.RegionState.FREE : FreeSpaceReport.RegionState.PARTIAL);
            }
            assertEquals(regions, report.regions(), "report regions");
        }
    }
}
