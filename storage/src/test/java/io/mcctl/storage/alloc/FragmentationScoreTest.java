package io.mcctl.storage.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class FragmentationScoreTest {

    static double scoreOf(long... runs) {
        FragmentationScore score = new FragmentationScore();
        for (long run : runs) {
            score.addFreeRun(run);
        }
        return score.score();
    }

    static long[] repeat(long length, int times) {
        long[] runs = new long[times];
        java.util.Arrays.fill(runs, length);
        return runs;
    }

    @Nested
    class Extremes {

        @Test
        void no_free_space_scores_zero() {
            assertEquals(0.0, new FragmentationScore().score());
        }

        @Test
        void one_run_holding_all_free_space_scores_zero() {
            assertEquals(0.0, scoreOf(1));
            assertEquals(0.0, scoreOf(2), 1e-12);
            assertEquals(0.0, scoreOf(3), 1e-12);
            assertEquals(0.0, scoreOf(1000), 1e-12);
            assertEquals(0.0, scoreOf(1L << 30), 1e-12);
        }

        @Test
        void all_free_space_as_isolated_single_pages_scores_close_to_one() {
            assertTrue(scoreOf(repeat(1, 100_000)) >= 0.99);
            assertTrue(scoreOf(repeat(1, 2)) >= 0.99);
            assertTrue(scoreOf(repeat(1, 1000)) <= 1.0);
        }
    }

    @Nested
    class Ordering {

        @Test
        void the_more_a_fixed_free_total_is_split_the_higher_the_score() {
            double[] scores = {
                scoreOf(1024),
                scoreOf(1000, 24),
                scoreOf(512, 512),
                scoreOf(repeat(256, 4)),
                scoreOf(repeat(64, 16)),
                scoreOf(repeat(8, 128)),
                scoreOf(repeat(2, 512)),
                scoreOf(repeat(1, 1024)),
            };
            for (int i = 1; i < scores.length; i++) {
                assertTrue(scores[i] > scores[i - 1], "layout " + i + " scores " + scores[i] + ", not above layout "
                        + (i - 1) + " at " + scores[i - 1]);
            }
        }

        @Test
        void run_order_does_not_matter() {
            assertEquals(scoreOf(5, 100, 1, 37), scoreOf(37, 1, 100, 5), 1e-12);
        }
    }

    @Nested
    class Worth {

        @Test
        void a_doubling_up_to_1_MiB_is_worth_one_point_two_times_more_and_lengths_between_are_interpolated() {
            assertEquals(1.0, FragmentationScore.worth(1), 1e-12);
            assertEquals(2.4, FragmentationScore.worth(2), 1e-12);
            assertEquals(5.76, FragmentationScore.worth(4), 1e-12);
            assertEquals(4.08, FragmentationScore.worth(3), 1e-12);
            assertEquals(1024 * Math.pow(1.2, 10), FragmentationScore.worth(1024), 1e-9);
        }

        @Test
        void past_128_MiB_a_doubling_adds_no_worth_beyond_its_bytes() {
            double at128MiB = FragmentationScore.worth(128L << 20) / (128L << 20);
            double at1GiB = FragmentationScore.worth(1L << 30) / (1L << 30);
            assertEquals(at128MiB, at1GiB, at128MiB * 1e-12);
            double at1MiB = FragmentationScore.worth(1L << 20) / (1L << 20);
            double at2MiB = FragmentationScore.worth(2L << 20) / (2L << 20);
            assertTrue(at2MiB / at1MiB < 1.2 && at2MiB / at1MiB > 1.0, () -> "1 MiB to 2 MiB factor " + at2MiB / at1MiB);
        }

        @Test
        void a_small_layout_scores_its_hand_computed_value() {
            // free runs 2, 1, 1: ideal worth(4) = 5.76, worst 4 x worth(1) = 4, actual 2.4 + 1 + 1 = 4.4
            assertEquals((5.76 - 4.4) / (5.76 - 4.0), scoreOf(2, 1, 1), 1e-12);
        }

        @Test
        void a_run_shorter_than_one_page_is_rejected() {
            FragmentationScore score = new FragmentationScore();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> score.addFreeRun(0));
            assertTrue(e.getMessage().contains("0"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> score.addFreeRun(-5));
            assertEquals(0.0, score.score());
        }
    }
}
