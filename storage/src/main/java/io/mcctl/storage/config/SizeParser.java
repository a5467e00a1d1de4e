package io.mcctl.storage.config;

import java.util.Locale;

/** Byte sizes as people write them: {@code 65536}, {@code 64KiB}, {@code 4GiB}, {@code 4G}. Binary units only. */
public final class SizeParser {

    public static final String ALLOWED = "a whole number of bytes, optionally with a binary unit: B, KiB, MiB, GiB, TiB (or K, M, G, T)";

    private SizeParser() {
    }

    /** @throws IllegalArgumentException with the reason, when {@code text} is not a size */
    public static long parse(String text) {
        String s = text.trim();
        int split = 0;
        while (split < s.length() && Character.isDigit(s.charAt(split))) {
            split++;
        }
        if (split == 0) {
            throw new IllegalArgumentException("not a size");
        }
        String unit = s.substring(split).trim().toLowerCase(Locale.ROOT);
        int shift = switch (unit) {
            case "", "b" -> 0;
            case "k", "kib" -> 10;
            case "m", "mib" -> 20;
            case "g", "gib" -> 30;
            case "t", "tib" -> 40;
            case "kb", "mb", "gb", "tb" -> throw new IllegalArgumentException("decimal unit '" + s.substring(split).trim()
                    + "' is ambiguous; write KiB, MiB, GiB or TiB");
            default -> throw new IllegalArgumentException("unknown unit '" + s.substring(split).trim() + "'");
        };
        long number;
        try {
            number = Long.parseLong(s.substring(0, split));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("number too large");
        }
        if (number > (Long.MAX_VALUE >> shift)) {
            throw new IllegalArgumentException("number too large");
        }
        return number << shift;
    }

    /** The shortest exact form: 65536 -> 64KiB, 4294967296 -> 4GiB, 1000 -> 1000. */
    public static String format(long bytes) {
        String[] units = {"TiB", "GiB", "MiB", "KiB"};
        int[] shifts = {40, 30, 20, 10};
        for (int i = 0; i < units.length; i++) {
            long unit = 1L << shifts[i];
            if (bytes >= unit && bytes % unit == 0) {
                return (bytes / unit) + units[i];
            }
        }
        return Long.toString(bytes);
    }
}
