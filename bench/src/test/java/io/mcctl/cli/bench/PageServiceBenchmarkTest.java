package io.mcctl.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The keys `bench pages` offloads: of the length asked for, each number its own key. */
@Timeout(60)
class PageServiceBenchmarkTest {

    @Test
    void keys_have_the_length_asked_for_and_stay_distinct() {
        PageServiceBenchmark benchmark = new PageServiceBenchmark(64, 80);
        Set<String> keys = new HashSet<>();
        for (long n : new long[] {0, 7, 10, 99, 12_345, 9_999_999, 10_000_000, Long.MAX_VALUE}) {
            String key = benchmark.keyOf(n);
            assertEquals(80, key.length(), key);
            assertEquals(n, Long.parseLong(key.substring("run/t0/".length())), key);
            keys.add(key);
        }
        assertEquals(8, keys.size());
    }

    @Test
    void by_default_a_key_is_as_short_as_its_number_and_a_number_too_long_makes_a_longer_key() {
        assertEquals("run/t0/12345", new PageServiceBenchmark(64, 0).keyOf(12_345));
        assertEquals("run/t0/123456789", new PageServiceBenchmark(64, 8).keyOf(123_456_789));
    }

    @Test
    void a_length_outside_the_range_is_refused() {
        assertThrows(IllegalArgumentException.class, () -> new PageServiceBenchmark(64, 7));
        assertThrows(IllegalArgumentException.class, () -> new PageServiceBenchmark(64, 1025));
    }
}
