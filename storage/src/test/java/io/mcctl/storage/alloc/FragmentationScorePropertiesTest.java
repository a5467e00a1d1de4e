package io.mcctl.storage.alloc;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;

/** Properties of the score over random free-run layouts. Bounded by its tries (jqwik ignores {@code @Timeout}). */
class FragmentationScorePropertiesTest {

    @Provide
    Arbitrary<List<Long>> layouts() {
        return Arbitraries.frequencyOf(
                        Tuple.of(6, Arbitraries.longs().between(1, 16)),
                        Tuple.of(3, Arbitraries.longs().between(17, 5000)),
                        Tuple.of(1, Arbitraries.longs().between(5001, 1L << 26)))
                .list().ofMinSize(1).ofMaxSize(200);
    }

    private static double score(List<Long> runs) {
        FragmentationScore score = new FragmentationScore();
        runs.forEach(score::addFreeRun);
        return score.score();
    }

    @Property(tries = 300)
    void two_or_more_runs_not_all_single_pages_score_strictly_between_zero_and_one(@ForAll("layouts") List<Long> runs) {
        Assume.that(runs.size() >= 2 && runs.stream().anyMatch(length -> length > 1));
        double s = score(runs);
        if (!(s > 0.0 && s < 1.0)) {
            throw new AssertionError("score " + s + " for " + runs);
        }
    }

    @Property(tries = 100)
    void one_run_scores_zero_and_single_pages_score_one(@ForAll @IntRange(min = 1, max = 1_000_000) int pages) {
        FragmentationScore one = new FragmentationScore();
        one.addFreeRun(pages);
        FragmentationScore singles = new FragmentationScore();
        for (int i = 0; i < Math.min(pages, 5000); i++) {
            singles.addFreeRun(1);
        }
        if (Math.abs(one.score()) > 1e-12) {
            throw new AssertionError("one run of " + pages + " scores " + one.score());
        }
        if (pages > 1 && Math.abs(singles.score() - 1.0) > 1e-9) {
            throw new AssertionError(Math.min(pages, 5000) + " single pages score " + singles.score());
        }
    }

    @Property(tries = 300)
    void splitting_a_run_in_two_raises_the_score(@ForAll("layouts") List<Long> runs, @ForAll @IntRange(min = 0, max = 10_000) int which,
                                                 @ForAll @IntRange(min = 1, max = 1_000_000) int cut) {
        int index = which % runs.size();
        long length = runs.get(index);
        Assume.that(length >= 2);
        long left = 1 + cut % (length - 1);
        List<Long> split = new ArrayList<>(runs);
        split.set(index, left);
        split.add(index + 1, length - left);
        double before = score(runs);
        double after = score(split);
        if (!(after > before)) {
            throw new AssertionError("splitting " + length + " into " + left + " + " + (length - left) + " moved the score from "
                    + before + " to " + after);
        }
    }

    @Property(tries = 200)
    void the_order_of_the_runs_does_not_matter(@ForAll("layouts") List<Long> runs, @ForAll long seed) {
        List<Long> shuffled = new ArrayList<>(runs);
        Collections.shuffle(shuffled, new Random(seed));
        double a = score(runs);
        double b = score(shuffled);
        if (Math.abs(a - b) > 1e-9) {
            throw new AssertionError(a + " != " + b);
        }
    }
}
