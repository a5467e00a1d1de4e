package io.mcctl.tools.bitmap;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mcctl.storage.alloc.BitmapPageAllocator;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Timeout;

/** {@link BucketBitmap} read from bare words against a page-by-page model and against the allocator it was copied from. */
@Timeout(60)
class BucketBitmapPropertiesTest {

    record Mark(long first, long pages) {
    }

    @Provide
    Arbitrary<List<Mark>> marks() {
        return Combinators.combine(Arbitraries.longs().between(0, 699), Arbitraries.longs().between(1, 90)).as(Mark::new).list().ofMaxSize(40);
    }

    @Property(tries = 400)
    void free_runs_used_pages_and_first_fits_match_the_model(@ForAll @IntRange(min = 1, max = 700) int pageCount,
                                                              @ForAll("marks") List<Mark> marks,
                                                              @ForAll @IntRange(min = 1, max = 130) int ask) {
        boolean[] used = new boolean[pageCount];
        long[] words = new long[(pageCount + 63) / 64 + 1]; // one spare word: its bits must not count
        BitmapPageAllocator allocator = new BitmapPageAllocator(pageCount);
        for (Mark m : marks) {
            long end = Math.min(pageCount, m.first() + m.pages());
            boolean clash = false;
            for (long p = m.first(); p < end; p++) {
                clash |= used[(int) p];
            }
            if (m.first() >= pageCount || clash) {
                continue;
            }
            allocator.markAllocated(m.first(), end - m.first());
            for (long p = m.first(); p < end; p++) {
                used[(int) p] = true;
                words[(int) (p >>> 6)] |= 1L << p;
            }
        }
        List<long[]> modelRuns = new ArrayList<>();
        long usedPages = 0;
        long firstFit = -1;
        for (int p = 0; p < pageCount; ) {
            if (used[p]) {
                usedPages++;
                p++;
                continue;
            }
            int end = p;
            while (end < pageCount && !used[end]) {
                end++;
            }
            modelRuns.add(new long[] {p, end - p});
            if (firstFit < 0 && end - p >= ask) {
                firstFit = p;
            }
            p = end;
        }

        BucketBitmap fromWords = new BucketBitmap(pageCount, words);
        BucketBitmap fromAllocator = BucketBitmap.of(allocator);
        for (BucketBitmap bitmap : List.of(fromWords, fromAllocator)) {
            List<long[]> runs = new ArrayList<>();
            bitmap.forEachFreeRun((first, length) -> runs.add(new long[] {first, length}));
            assertEquals(modelRuns.stream().map(r -> r[0] + "~" + r[1]).toList(), runs.stream().map(r -> r[0] + "~" + r[1]).toList());
            assertEquals(usedPages, bitmap.allocatedPages());
            assertEquals(firstFit, bitmap.firstFit(ask));
        }
        assertEquals(allocator.allocatedCount(), fromWords.allocatedPages());
    }
}
