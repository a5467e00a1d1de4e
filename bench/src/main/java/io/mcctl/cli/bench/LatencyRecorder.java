package io.mcctl.cli.bench;

import java.util.Arrays;

/** Call latencies of one benchmark phase, for percentiles. Not thread-safe: one per thread, merged after. */
public final class LatencyRecorder {

    private long[] nanos = new long[1024];
    private int count;

    public void record(long latencyNanos) {
        if (count == nanos.length) {
            nanos = Arrays.copyOf(nanos, count * 2);
        }
        nanos[count++] = latencyNanos;
    }

    public static LatencyRecorder merge(Iterable<LatencyRecorder> recorders) {
        LatencyRecorder all = new LatencyRecorder();
        for (LatencyRecorder r : recorders) {
            for (int i = 0; i < r.count; i++) {
                all.record(r.nanos[i]);
            }
        }
        return all;
    }

    public int count() {
        return count;
    }

    /** The latency at quantile {@code q} (0..1) in microseconds, nearest rank. */
    public double percentileMicros(double q) {
        if (count == 0) {
            return Double.NaN;
        }
        long[] sorted = Arrays.copyOf(nanos, count);
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(q * count) - 1;
        return sorted[Math.max(0, Math.min(count - 1, rank))] / 1000.0;
    }
}
