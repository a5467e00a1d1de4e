package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.LatencyRecorder;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.bench.MasterProcess;
import io.mcctl.cli.bench.NodeProcess;
import io.mcctl.cli.bench.PathFigures;
import io.mcctl.cli.bench.ReadPasses;
import io.mcctl.cli.util.FileTrees;
import io.mcctl.cli.util.SizeArguments;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.node.ReplicaReader;
import io.mcctl.master.proto.v1.OffloadMode;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.storage.config.SizeParser;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code mcctl bench crossnode}: the RFC's problem (1) measured. Node A (a real {@code mcctl node start} process)
 * writes objects in both modes; this process, as node B, reads them back: LOCAL_DISK through A's endpoint (B asks A, A
 * reads its per-key file and streams the bytes) and DISTRIBUTED_DISK by a direct pread of the shared bucket file, one
 * object at a time, in the same run, both warm in the page cache.
 */
@Command(name = "crossnode", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Node B reads objects node A wrote: through A (LOCAL_DISK, the RPC hop) and by a direct pread (DISTRIBUTED_DISK), "
                + "64KiB and 1MiB by default, in one run.",
                "Starts a master and node A as separate processes on a temporary root; this process is node B and reads "
                        + "each object with GetReplicaList then the replica's own path, one at a time, after a warm-up pass. "
                        + "Reports latency per object, throughput and the ratio of the two paths (the RFC's target: 2x or more "
                        + "for the direct path)."})
public final class BenchCrossnodeCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--objects", paramLabel = "N", defaultValue = "200", description = "Objects per size and path (default: ${DEFAULT-VALUE}).")
    int objects;

    @Option(names = "--sizes", paramLabel = "SIZE[,SIZE...]", defaultValue = "64KiB,1MiB", split = ",",
            description = "Object sizes (default: ${DEFAULT-VALUE}).")
    List<String> sizes;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3", description = "Timed passes over the objects (default: ${DEFAULT-VALUE}).")
    int rounds;

    /** Both paths for one size; the ratio is LOCAL_DISK's mean latency over DISTRIBUTED_DISK's. */
    record Case(long objectSize, PathFigures throughOwner, PathFigures directPread, double ratio) {
    }

    @Override
    public Integer call() throws Exception {
        if (objects < 1 || objects > 100_000) {
            throw new CliException(ExitCodes.USAGE, "invalid --objects " + objects + ": allowed is 1 to 100000");
        }
        if (rounds < 1 || rounds > 100) {
            throw new CliException(ExitCodes.USAGE, "invalid --rounds " + rounds + ": allowed is 1 to 100");
        }
        List<Long> objectSizes = SizeArguments.objectSizes(sizes, 64L << 20);
        long largest = objectSizes.stream().mapToLong(Long::longValue).max().orElse(1);
        // Room for every object of every size in one bucket file of 8, whatever the hash spreads.
        long bucketBytes = Math.max(64L << 20, Long.highestOneBit(Math.max(1, objects * (largest + 65_536) * objectSizes.size())) * 2);
        Path dir = Files.createTempDirectory("mcctl-bench-crossnode");
        List<Case> cases = new ArrayList<>();
        try (MasterProcess master = MasterProcess.start(List.of("-Xmx512m"), Duration.ofSeconds(60), b -> b.directory(dir.toFile()),
                "--root", dir.resolve("root").toString(), "--bucket-count", "8", "--bucket-size", bucketBytes + "", "--eviction", "false");
             NodeProcess nodeA = NodeProcess.start(List.of("-Xmx1g"), Duration.ofSeconds(60), b -> b.directory(dir.toFile()), master.address(),
                     "--local-disk", dir.resolve("disk-a").toString());
             MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(30));
             TierNode tier = TierNode.connect(client, false, new ClientMetrics());
             NodeClient viaA = new NodeClient(nodeA.endpoint(), Duration.ofSeconds(60));
             ReplicaReader nodeB = new ReplicaReader(client, tier, null, null, Duration.ofSeconds(30))) {
            SplittableRandom random = new SplittableRandom(17);
            for (long size : objectSizes) {
                byte[] data = new byte[(int) size];
                List<String> local = new ArrayList<>();
                List<String> paged = new ArrayList<>();
                for (int i = 0; i < objects; i++) {
                    random.nextBytes(data);
                    String suffix = size + "-" + i;
                    viaA.write("bench", "ld-" + suffix, ByteBuffer.wrap(data), OffloadMode.PER_KEY);
                    viaA.write("bench", "dd-" + suffix, ByteBuffer.wrap(data), OffloadMode.PAGE_MODE);
                    local.add("ld-" + suffix);
                    paged.add("dd-" + suffix);
                }
                ReadPasses.pass(k -> nodeB.read("bench", k), local, ReplicaType.LOCAL_DISK, null); // warm-up: page cache, connections, JIT
                ReadPasses.pass(k -> nodeB.read("bench", k), paged, ReplicaType.DISTRIBUTED_DISK, null);
                LatencyRecorder owner = new LatencyRecorder();
                LatencyRecorder direct = new LatencyRecorder();
                long ownerNanos = 0;
                long directNanos = 0;
                for (int round = 0; round < rounds; round++) {
                    // Alternate which path goes first, so neither always runs on a cache the other just warmed.
                    if (round % 2 == 0) {
                        ownerNanos += ReadPasses.pass(k -> nodeB.read("bench", k), local, ReplicaType.LOCAL_DISK, owner);
                        directNanos += ReadPasses.pass(k -> nodeB.read("bench", k), paged, ReplicaType.DISTRIBUTED_DISK, direct);
                    } else {
                        directNanos += ReadPasses.pass(k -> nodeB.read("bench", k), paged, ReplicaType.DISTRIBUTED_DISK, direct);
                        ownerNanos += ReadPasses.pass(k -> nodeB.read("bench", k), local, ReplicaType.LOCAL_DISK, owner);
                    }
                }
                PathFigures o = PathFigures.of("LOCAL_DISK via owner", owner, ownerNanos, size);
                PathFigures d = PathFigures.of("DISTRIBUTED_DISK pread", direct, directNanos, size);
                cases.add(new Case(size, o, d, o.meanMicros() / d.meanMicros()));
            }
        } finally {
            FileTrees.deleteTree(dir);
        }
        report(cases);
        return ExitCodes.OK;
    }

    private void report(List<Case> cases) {
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("objects", objects);
            report.put("rounds", rounds);
            report.put("machine", MachineInfo.describe());
            List<Map<String, Object>> rows = new ArrayList<>();
            for (Case c : cases) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("object_size", c.objectSize());
                row.put("local_disk_via_owner", c.throughOwner());
                row.put("distributed_disk_pread", c.directPread());
                row.put("latency_ratio", c.ratio());
                rows.add(row);
            }
            report.put("cases", rows);
            out.println(OutputMixin.toJson(report));
        } else {
            Table table = PathFigures.table();
            for (Case c : cases) {
                for (PathFigures p : List.of(c.throughOwner(), c.directPread())) {
                    p.addTo(table, c.objectSize());
                }
            }
            out.print(table.render());
            for (Case c : cases) {
                out.printf("%s: the direct pread is %.1fx faster per object than the read through the owner%n",
                        SizeParser.format(c.objectSize()), c.ratio());
            }
        }
        out.flush();
    }
}
