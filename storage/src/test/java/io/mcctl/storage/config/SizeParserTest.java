package io.mcctl.storage.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(30)
class SizeParserTest {

    @ParameterizedTest(name = "\"{0}\" is {1} bytes")
    @CsvSource({
        "65536, 65536",
        "64KiB, 65536",
        "64K, 65536",
        "64kib, 65536",
        "4GiB, 4294967296",
        "4G, 4294967296",
        "4g, 4294967296",
        "1MiB, 1048576",
        "3M, 3145728",
        "2TiB, 2199023255552",
        "2T, 2199023255552",
        "'  8 KiB ', 8192",
        "512B, 512",
        "512b, 512",
        "0, 0",
        "8388607TiB, 9223370937343148032",
        "9223372036854775807, 9223372036854775807",
    })
    void sizes_parse_with_binary_units(String text, long bytes) {
        assertEquals(bytes, SizeParser.parse(text));
    }

    @ParameterizedTest
    @ValueSource(strings = {"10GB", "10gb", "1KB", "5 MB", "2TB"})
    void decimal_units_are_refused_as_ambiguous(String text) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SizeParser.parse(text));
        assertTrue(e.getMessage().contains("ambiguous") && e.getMessage().contains("KiB, MiB, GiB or TiB"), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "   ", "KiB", "-1", "+1", "1.5GiB", "1 XiB", "12PiB", "1e6", "0x10"})
    void text_that_is_not_a_size_is_refused(String text) {
        assertThrows(IllegalArgumentException.class, () -> SizeParser.parse(text));
    }

    @Test
    void sizes_that_overflow_a_long_are_refused() {
        IllegalArgumentException unit = assertThrows(IllegalArgumentException.class, () -> SizeParser.parse("8388608TiB"));
        assertTrue(unit.getMessage().contains("too large"), unit.getMessage());
        IllegalArgumentException digits = assertThrows(IllegalArgumentException.class,
                () -> SizeParser.parse("99999999999999999999"));
        assertTrue(digits.getMessage().contains("too large"), digits.getMessage());
    }

    @ParameterizedTest(name = "{0} bytes format as \"{1}\"")
    @CsvSource({
        "65536, 64KiB",
        "4294967296, 4GiB",
        "1000, 1000",
        "0, 0",
        "1024, 1KiB",
        "1536, 1536",
        "1572864, 1536KiB",
        "3145728, 3MiB",
        "5497558138880, 5TiB",
        "1125899906842624, 1024TiB",
    })
    void format_gives_the_shortest_exact_form(long bytes, String text) {
        assertEquals(text, SizeParser.format(bytes));
    }
}
