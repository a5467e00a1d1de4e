package io.mcctl.cli.bench;

import io.mcctl.cli.Table;
import io.mcctl.storage.config.SizeParser;
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
    private static String fixed(double value) {
        return String.format(Locale.ROOT, "%.1f", value);
    }

    /** The table the read benchmarks print, a row per object size and path (see {@link #addTo}). */
    public static Table table() {
        return new Table("OBJECT", "PATH", "READS", "MEAN us", "P50 us", "P99 us", "MiB/s");
    }

    /** These figures as a row of {@link #table()}, for objects of {@code objectSize} bytes. */
    public void addTo(Table table, long objectSize) {
        table.row(SizeParser.format(objectSize), path, reads, fixed(meanMicros), fixed(p50Micros), fixed(p99Micros), fixed(mibPerSecond));
    }
}
