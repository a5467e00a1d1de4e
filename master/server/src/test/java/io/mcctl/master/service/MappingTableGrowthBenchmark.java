package io.mcctl.master.service;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One shard's mapping table filled from empty to {@code mappings}, one add at a time, as commits fill it: the time of
 * the whole fill, and its longest single add, which is an add that grows the table (two fills warm up, the third is
 * measured). On the master that add holds the shard's lock on the thread that serves every caller, so it is a pause for
 * all of them. Each add is timed, so the fill's time includes two clock reads an add, in every build alike.
 *
 * <p>Run by hand (docs/benchmarks.md has the figures), from the repository's root, one fork at a time: JMH sums the
 * longest add over iterations and forks, as it does any counter.
 * <pre>
 * mvn -B -q -pl master test-compile dependency:build-classpath -Dmdep.outputFile=target/bench.cp -Dmdep.includeScope=test
 * java -cp master/target/test-classes:master/target/classes:$(cat master/target/bench.cp) org.openjdk.jmh.Main MappingTableGrowth -f 1
 * </pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms4g", "-Xmx4g", "-XX:+AlwaysPreTouch", "-XX:+UseTransparentHugePages"})
@Warmup(iterations = 2)
@Measurement(iterations = 1) // one fill measured: its longest add is not summed with another's
public class MappingTableGrowthBenchmark {

    /** Mappings of one shard: a tier of 100 million keys has about 400,000 a shard (256 shards). */
    @Param({"400000", "1500000"})
    public int mappings;

    private String[] keys;
    private MappingTable table;

    /** The longest add of an iteration. */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class LongestAdd {
        public long longestAddMicros;

        @Setup(Level.Iteration)
        public void reset() {
            longestAddMicros = 0;
        }
    }

    @Setup(Level.Trial)
    public void makeKeys() {
        keys = new String[mappings];
        for (int i = 0; i < mappings; i++) {
            // An engine's key: a model, a layer and a block hash, about 55 characters with its tenant.
            keys[i] = "tenant\0model-7b/layer-" + (i % 61) + "/block-" + Long.toHexString(0x9E3779B97F4A7C15L * (i + 1)) + "-" + i;
        }
    }

    @Setup(Level.Iteration)
    public void emptyTable() {
        table = new MappingTable();
    }

    @Benchmark
    public int fill(LongestAdd longest) {
        long longestNanos = 0;
        for (int i = 0; i < mappings; i++) {
            long began = System.nanoTime();
            table.add(keys[i], i & 255, i * 65536L, 65536, i, false, i);
            longestNanos = Math.max(longestNanos, System.nanoTime() - began);
        }
        longest.longestAddMicros = longestNanos / 1000;
        return table.size();
    }
}
