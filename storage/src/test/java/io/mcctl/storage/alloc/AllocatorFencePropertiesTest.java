package io.mcctl.storage.alloc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
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
 * Drives {@link BitmapPageAllocator} with fences in lock step with a brute-force model: an allocation takes the lowest
 * run at or after the hint (else from page 0) that is free and touches no fence; a fence is refused when it touches
 * another or {@value BitmapPageAllocator#MAX_FENCES} are up; a fenced run is allocated only whole, only when all free,
 * and takes its fence down. After every step the bitmap, the count, {@link BitmapPageAllocator#fits} and the fences
 * agree with the model.
 *
 * <p>No {@code @Timeout}: jqwik ignores it; the fixed tries and sequence lengths bound the run (a second or two).
 */
class AllocatorFencePropertiesTest {

    enum Kind { ALLOCATE, FREE_LIVE, FENCE, ALLOCATE_FENCED, UNFENCE }

    record Op(Kind kind, int a, int b) {
    }

    @Property(tries = 500, shrinking = ShrinkingMode.BOUNDED)
    void allocations_never_take_fenced_pages_and_a_fenced_run_goes_only_to_its_fence(@ForAll("pageCounts") int pageCount,
                                                                                     @ForAll("operations") List<Op> ops) {
        BitmapPageAllocator bitmap = new BitmapPageAllocator(pageCount);
        Model model = new Model(pageCount);
        List<long[]> live = new ArrayList<>();
        for (Op op : ops) {
            switch (op.kind()) {
                case ALLOCATE -> {
                    long count = 1 + op.a() % Math.max(1, pageCount / 4);
                    long first = bitmap.allocate(count);
                    assertEquals(model.allocate(count), first, op.toString());
                    if (first >= 0) {
                        live.add(new long[] {first, count});
                    }
                }
                case FREE_LIVE -> {
                    if (!live.isEmpty()) {
                        long[] run = live.remove(op.a() % live.size());
                        bitmap.free(run[0], run[1]);
                        model.free(run[0], run[1]);
                    }
                }
                case FENCE -> {
                    long first = op.a() % pageCount;
                    long count = 1 + op.b() % (pageCount - first);
                    assertEquals(model.fence(first, count), bitmap.fence(first, count), op.toString());
                }
                case ALLOCATE_FENCED, UNFENCE -> {
                    if (model.fences.isEmpty()) {
                        break;
                    }
                    long[] fence = model.fences.get(op.a() % model.fences.size());
                    if (op.kind() == Kind.UNFENCE) {
                        assertEquals(true, bitmap.unfence(fence[0], fence[1] - fence[0]));
                        model.fences.remove(fence);
                    } else {
                        boolean taken = bitmap.allocateFenced(fence[0], fence[1] - fence[0]);
                        assertEquals(model.allocateFenced(fence), taken, op.toString());
                        if (taken) {
                            live.add(new long[] {fence[0], fence[1] - fence[0]});
                        }
                    }
                }
            }
            assertEquals(model.allocated, bitmap.allocatedCount(), op.toString());
            assertArrayEquals(model.words(), bitmap.words(0, pageCount), op.toString());
            assertEquals(2 * model.fences.size(), bitmap.fences().length, op.toString());
            long probe = 1 + op.b() % pageCount;
            assertEquals(model.lowestFit(0, probe) >= 0, bitmap.fits(probe), op + ": fits " + probe);
        }
    }

    @Provide
    Arbitrary<Integer> pageCounts() {
        return Arbitraries.of(1, 8, 64, 100, 513, 1100);
    }

    @Provide
    Arbitrary<List<Op>> operations() {
        Arbitrary<Integer> raw = Arbitraries.integers().between(0, 1_000_000);
        Arbitrary<Op> op = Combinators.combine(Arbitraries.frequency(Tuple.of(40, Kind.ALLOCATE), Tuple.of(25, Kind.FREE_LIVE),
                Tuple.of(15, Kind.FENCE), Tuple.of(12, Kind.ALLOCATE_FENCED), Tuple.of(8, Kind.UNFENCE)), raw, raw).as(Op::new);
        return op.list().ofMinSize(1).ofMaxSize(80).withSizeDistribution(RandomDistribution.uniform());
    }

    /** One boolean per page, the hint, and the fences as {first, end}. */
    static final class Model {
        final int pageCount;
        final boolean[] used;
        final List<long[]> fences = new ArrayList<>();
        long hint;
        long allocated;

        Model(int pageCount) {
            this.pageCount = pageCount;
            this.used = new boolean[pageCount];
        }

        long allocate(long count) {
            long first = lowestFit(hint, count);
            if (first < 0 && hint > 0) {
                first = lowestFit(0, count);
            }
            if (first < 0) {
                return PageAllocator.NO_RUN_FITS;
            }
            set(first, count, true);
            hint = first + count == pageCount ? 0 : first + count;
            return first;
        }

        long lowestFit(long from, long count) {
            for (long s = from; s + count <= pageCount; s++) {
                if (allFree(s, count) && !fenced(s, s + count)) {
                    return s;
                }
            }
            return -1;
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

        boolean allFree(long first, long count) {
            for (long p = first; p < first + count; p++) {
                if (used[(int) p]) {
                    return false;
                }
            }
            return true;
        }

        boolean fenced(long from, long to) {
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
            if (!allFree(fence[0], fence[1] - fence[0])) {
                return false;
            }
            set(fence[0], fence[1] - fence[0], true);
            fences.remove(fence);
            return true;
        }

        void free(long first, long count) {
            set(first, count, false);
            if (first < hint) {
                hint = first;
            }
        }

        private void set(long first, long count, boolean value) {
            for (long p = first; p < first + count; p++) {
                used[(int) p] = value;
            }
            allocated += value ? count : -count;
        }
    }
}
