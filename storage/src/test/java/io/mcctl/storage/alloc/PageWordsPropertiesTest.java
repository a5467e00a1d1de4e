package io.mcctl.storage.alloc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Timeout;

/** {@link PageWords} against the same questions asked page by page. */
@Timeout(60)
class PageWordsPropertiesTest {

    static final int PAGES = 320; // five words: ranges start, end and cross inside and on word edges

    static long[] words(long seed) {
        java.util.Random random = new java.util.Random(seed);
        long[] words = new long[PAGES / 64];
        for (int w = 0; w < words.length; w++) {
            // Mostly full, mostly empty or mixed words, so that every branch is taken.
            words[w] = switch (random.nextInt(4)) {
                case 0 -> 0L;
                case 1 -> -1L;
                default -> random.nextLong();
            };
        }
        return words;
    }

    static boolean bit(long[] words, long page) {
        return (words[(int) (page >>> 6)] & (1L << page)) != 0;
    }

    @Property(tries = 2000)
    void each_range_question_agrees_with_asking_page_by_page(@ForAll long seed, @ForAll @IntRange(min = 0, max = PAGES - 1) int first,
                                                               @ForAll @LongRange(min = 1, max = PAGES) long wanted) {
        long count = Math.min(wanted, PAGES - first);
        long[] words = words(seed);
        boolean all = true;
        boolean any = false;
        long firstSet = -1;
        long firstClear = -1;
        for (long page = first; page < first + count; page++) {
            boolean set = bit(words, page);
            all &= set;
            any |= set;
            if (set && firstSet < 0) {
                firstSet = page;
            }
            if (!set && firstClear < 0) {
                firstClear = page;
            }
        }
        assertEquals(all, PageWords.allSet(words, first, count));
        assertEquals(any, PageWords.anySet(words, first, count));
        assertEquals(firstSet, PageWords.first(words, first, count, true));
        assertEquals(firstClear, PageWords.first(words, first, count, false));

        long[] expected = words.clone();
        for (long page = first; page < first + count; page++) {
            expected[(int) (page >>> 6)] |= 1L << page;
        }
        PageWords.set(words, first, count);
        assertArrayEquals(expected, words);
    }
}
