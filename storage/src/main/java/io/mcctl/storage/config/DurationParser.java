package io.mcctl.storage.config;

import java.time.Duration;
import java.util.Locale;

/**
 * Durations as people write them: {@code 500ms}, {@code 60s}, {@code 5m}, {@code 1h}; and {@code 50us} where a setting
 * is finer than a millisecond ({@link #parseWithMicros}). Other settings refuse microseconds: what uses them (timers,
 * records in milliseconds) would round a part of a millisecond down, and less than one to nothing.
 */
public final class DurationParser {

    public static final String ALLOWED = "a whole number with a unit: ms, s, m or h";

    private DurationParser() {
    }

    public static Duration parse(String text) {
        return parse(text, false);
    }

    /** {@link #parse}, microseconds ({@code us}) allowed too. */
    public static Duration parseWithMicros(String text) {
        return parse(text, true);
    }

    private static Duration parse(String text, boolean micros) {
        String s = text.trim().toLowerCase(Locale.ROOT);
        int split = 0;
        while (split < s.length() && Character.isDigit(s.charAt(split))) {
            split++;
        }
        if (split == 0 || split == s.length()) {
            throw new IllegalArgumentException(split == 0 ? "not a duration" : "no unit");
        }
        long number;
        try {
            number = Long.parseLong(s.substring(0, split));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("number too large");
        }
        String unit = s.substring(split).trim();
        if (unit.equals("us") && !micros) {
            throw new IllegalArgumentException("microseconds are too fine here");
        }
        return switch (unit) {
            case "us" -> {
                if (number > Long.MAX_VALUE / 1000) {
                    throw new IllegalArgumentException("number too large");
                }
                yield Duration.ofNanos(number * 1000);
            }
            case "ms" -> Duration.ofMillis(number);
            case "s" -> Duration.ofSeconds(number);
            case "m" -> Duration.ofMinutes(number);
            case "h" -> Duration.ofHours(number);
            default -> throw new IllegalArgumentException("unknown unit '" + unit + "'");
        };
    }

    /** The shortest exact form: 60000ms -> 1m, 1500ms -> 1500ms, 1500us -> 1500us. */
    public static String format(Duration duration) {
        if (duration.getNano() % 1_000_000 != 0) {
            return duration.toNanos() / 1000 + "us";
        }
        long millis = duration.toMillis();
        if (millis != 0 && millis % 3_600_000 == 0) {
            return millis / 3_600_000 + "h";
        }
        if (millis != 0 && millis % 60_000 == 0) {
            return millis / 60_000 + "m";
        }
        if (millis % 1000 == 0) {
            return millis / 1000 + "s";
        }
        return millis + "ms";
    }
}
