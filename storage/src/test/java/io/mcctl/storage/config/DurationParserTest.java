package io.mcctl.storage.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(30)
class DurationParserTest {

    @ParameterizedTest(name = "\"{0}\" is {1} ns and reads back as \"{2}\"")
    @CsvSource({
        "50us, 50000, 50us",
        "1500us, 1500000, 1500us",
        "1000us, 1000000, 1ms",
        "0us, 0, 0s",
        "500ms, 500000000, 500ms",
        "60s, 60000000000, 1m",
        "' 5M ', 300000000000, 5m",
        "2h, 7200000000000, 2h",
        "0s, 0, 0s",
    })
    void durations_parse_and_format_to_their_shortest_exact_form(String text, long nanos, String formatted) {
        Duration parsed = DurationParser.parseWithMicros(text);
        assertEquals(nanos, parsed.toNanos());
        assertEquals(formatted, DurationParser.format(parsed));
        assertEquals(parsed, DurationParser.parseWithMicros(DurationParser.format(parsed)));
        if (!text.strip().endsWith("us")) {
            assertEquals(parsed, DurationParser.parse(text), "the same without microseconds");
        }
    }

    @Test
    void microseconds_are_refused_where_a_setting_takes_milliseconds_at_least() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DurationParser.parse("500us"));
        assertTrue(e.getMessage().contains("microseconds are too fine here"), e.getMessage());
        assertEquals(Duration.ofNanos(500_000), DurationParser.parseWithMicros("500us"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "us", "50", "-5us", "1.5ms", "5 µs", "5ns", "5d", "x5s"})
    void text_that_is_not_a_duration_is_refused(String text) {
        assertThrows(IllegalArgumentException.class, () -> DurationParser.parseWithMicros(text));
        assertThrows(IllegalArgumentException.class, () -> DurationParser.parse(text));
    }

    @Test
    void microseconds_that_overflow_are_refused_as_too_large() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DurationParser.parseWithMicros("9223372036854776us"));
        assertTrue(e.getMessage().contains("too large"), e.getMessage());
        assertEquals(9_223_372_036_854_775L * 1000, DurationParser.parseWithMicros("9223372036854775us").toNanos());
    }
}
