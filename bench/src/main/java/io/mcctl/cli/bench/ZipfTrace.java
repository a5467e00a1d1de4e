package io.mcctl.cli.bench;

import java.util.Arrays;
import java.util.SplittableRandom;

/** Key ranks drawn from a Zipf distribution: rank r (0-based) with probability proportional to 1 / (r + 1)^exponent. */
public final class ZipfTrace {

    private ZipfTrace() {
    }

    /** {@code length} ranks below {@code keySpace}, the same for the same seed. */
    public static int[] draw(int keySpace, double exponent, int length, long seed) {
        double[] cumulative = new double[keySpace];
        double sum = 0;
        for (int r = 0; r < keySpace; r++) {
            sum += 1 / Math.pow(r + 1, exponent);
            cumulative[r] = sum;
        }
        SplittableRandom random = new SplittableRandom(seed);
        int[] trace = new int[length];
        for (int i = 0; i < length; i++) {
            int at = Arrays.binarySearch(cumulative, random.nextDouble() * sum);
            trace[i] = Math.min(keySpace - 1, at >= 0 ? at : -at - 1);
        }
        return trace;
    }
}
