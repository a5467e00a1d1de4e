package io.mcctl.cli.util;

/** Figures of benchmark reports, rounded to a few decimals so they read well and compare across runs. */
public final class Rounding {

    private Rounding() {
    }

    /** {@code value} rounded half up to {@code digits} decimals. */
    public static double round(double value, int digits) {
        double scale = Math.pow(10, digits);
        return Math.round(value * scale) / scale;
    }

    /** Like {@link #round}, but NaN and the infinities stay what they are instead of becoming a number. */
    public static double roundFinite(double value, int digits) {
        if (Double.isNaN(value) || Double.isInfinite(value)) {
            return value;
        }
        return round(value, digits);
    }
}
