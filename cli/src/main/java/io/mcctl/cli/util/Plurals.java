package io.mcctl.cli.util;

/** Counts in messages: "1 error", "3 errors". */
public final class Plurals {

    private Plurals() {
    }

    /** {@code count} and {@code noun}, with an s unless the count is one. */
    public static String plural(long count, String noun) {
        return count + " " + noun + (count == 1 ? "" : "s");
    }
}
