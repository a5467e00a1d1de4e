package io.mcctl.tools.snapshot;

import java.time.Instant;
import java.util.Locale;

/** How every report writes times, checksums, keys and places, so the same thing reads the same everywhere. */
public final class Formats {

    private Formats() {
    }

    /** ISO-8601 in UTC, e.g. {@code 2026-05-01T10:00:00.123Z}. */
    public static String iso(long epochMillis) {
        return Instant.ofEpochMilli(epochMillis).toString();
    }

    /** A CRC32C as eight lower-case hex digits, as {@code mcctl stat} prints it. */
    public static String hex(int crc32c) {
        return String.format(Locale.ROOT, "%08x", crc32c);
    }

    /**
     * A key or tenant for a line of text: as it is when it is plain, else in double quotes with
     * {@code \"}, {@code \\}, {@code \n}, {@code \t} and {@code \}{@code uXXXX} escapes, so a key with spaces or
     * line breaks cannot break a table or a line.
     */
    public static String quote(String text) {
        boolean plain = !text.isEmpty();
        for (int i = 0; i < text.length() && plain; i++) {
            char c = text.charAt(i);
            plain = c > ' ' && c != '"' && c != '\\' && c != '=' && c < 0x7f;
        }
        if (plain) {
            return text;
        }
        StringBuilder out = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\t' -> out.append("\\t");
                case '\r' -> out.append("\\r");
                default -> {
                    if (Character.isISOControl(c)) {
                        out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    /** Where an object is, as {@code bucket@offset+size} (the master's descriptors read {@code file@offset+size}). */
    public static String place(int bucket, long offset, long size) {
        return bucket + "@" + offset + "+" + size;
    }

    /** A run of pages as a half-open interval, as the allocator's messages write it. */
    public static String pages(long firstPage, long count) {
        return "pages [" + firstPage + ", " + (firstPage + count) + ")";
    }
}
