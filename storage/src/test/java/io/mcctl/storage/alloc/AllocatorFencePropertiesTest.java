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
 * Drives {@link BitmapPageAllocator} with fences in lock step with {@link FirstFitModel}: an allocation takes the lowest
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
        FirstFitModel model = new FirstFitModel(pageCount);
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
            assertEquals(model.fits(probe), bitmap.fits(probe), op + ": fits " + probe);
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
}
