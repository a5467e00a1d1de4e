package io.mcctl.cli.bench;

import java.util.Locale;

/** The figures of one read path of a benchmark: how many reads, their mean, median and 99th percentile, and the throughput. */
public record PathFigures(String path, int reads, double meanMicros, double p50Micros, double p99Micros, double mibPerSecond) {

    /** The figures of {@code latencies}, reads of {@code size} bytes that took {@code nanos} in all. */
    public static PathFigures of(String path, LatencyRecorder latencies, long nanos, long size) {
        double seconds = nanos / 1e9;
        return new PathFigures(path, latencies.count(), nanos / 1e3 / latencies.count(), latencies.percentileMicros(0.50),
                latencies.percentileMicros(0.99), latencies.count() * (double) size / (1 << 20) / seconds);
    }

    /** A figure with one decimal, as the tables show them. */
    public static String fixed(double value) {
        return String.format(Locale.ROOT, "%.1f", value);
    }
}
