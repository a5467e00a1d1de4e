package io.mcctl.storage.config;

import java.util.Locale;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.LongRange;

/** Round trips of {@link SizeParser}; bounded by its tries (jqwik ignores {@code @Timeout}). */
class SizeParserPropertiesTest {

    @Provide
    Arbitrary<Long> sizes() {
        Arbitrary<Long> any = Arbitraries.longs().between(0, Long.MAX_VALUE);
        Arbitrary<Long> unitMultiples = Arbitraries.integers().between(0, 4).flatMap(unit ->
                Arbitraries.longs().between(0, Long.MAX_VALUE >> (10 * unit)).map(n -> n << (10 * unit)));
        Arbitrary<Long> small = Arbitraries.longs().between(0, 1L << 22);
        return Arbitraries.oneOf(any, unitMultiples, small);
    }

    @Property(tries = 2000)
    void format_then_parse_gives_back_the_same_number(@ForAll("sizes") long bytes) {
        long back = SizeParser.parse(SizeParser.format(bytes));
        if (back != bytes) {
            throw new AssertionError(bytes + " -> " + SizeParser.format(bytes) + " -> " + back);
        }
    }

    @Property(tries = 2000)
    void the_formatted_number_is_not_divisible_by_1024_unless_it_is_in_tebibytes(@ForAll("sizes") long bytes) {
        String text = SizeParser.format(bytes);
        String digits = text.replaceAll("[A-Za-z]+$", "");
        long number = Long.parseLong(digits);
        if (number != 0 && number % 1024 == 0 && !text.endsWith("TiB")) {
            throw new AssertionError(bytes + " formats as " + text + ", which is not the shortest form");
        }
    }

    @Property(tries = 500)
    void a_number_with_a_unit_parses_to_the_number_shifted(@ForAll @LongRange(min = 0, max = 8_000_000) long number,
                                                           @ForAll("units") String unit) {
        String u = unit.trim().toLowerCase(Locale.ROOT);
        int shift = u.isEmpty() ? 0 : switch (u.charAt(0)) {
            case 'k' -> 10;
            case 'm' -> 20;
            case 'g' -> 30;
            case 't' -> 40;
            default -> 0;
        };
        long parsed = SizeParser.parse(number + unit);
        if (parsed != number << shift) {
            throw new AssertionError(number + unit + " parsed as " + parsed);
        }
    }

    @Provide
    Arbitrary<String> units() {
        return Arbitraries.of("", "B", "K", "KiB", "M", "MiB", "G", "GiB", "T", "TiB", "kib", "mib", " GiB");
    }
}
