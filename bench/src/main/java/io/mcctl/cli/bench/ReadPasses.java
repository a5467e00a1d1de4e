package io.mcctl.cli.bench;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.proto.v1.ReplicaType;
import java.util.List;

/** Timed passes of single-key reads through a node, as the read benchmarks make them. */
public final class ReadPasses {

    private ReadPasses() {
    }

    /** Reads every key once, one at a time, with {@code read}; checks each came from the expected kind of replica. Returns the pass's nanoseconds. */
    public static long pass(java.util.function.Function<String, NodeClient.Read> read, List<String> keys, ReplicaType expected,
                     LatencyRecorder latencies) {
        long start = System.nanoTime();
        for (String key : keys) {
            long t0 = System.nanoTime();
            NodeClient.Read got = read.apply(key);
            long took = System.nanoTime() - t0;
            if (got.type() != expected) {
                throw new CliException(ExitCodes.FAILED, key + " was read from " + got.type() + ", not " + expected);
            }
            if (latencies != null) {
                latencies.record(took);
            }
        }
        return System.nanoTime() - start;
    }
}
