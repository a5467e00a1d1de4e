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
import io.mcctl.master.client.TierReader;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.proto.v1.ListPromotionsResponse;
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
import java.util.function.Consumer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code mcctl bench promotion}: what promotion into the DRAM tier buys, in one run. Node A (a real {@code mcctl node
 * start --memory} process) holds promoted copies of objects in its segment; a twin of each object (the same bytes under
 * another key) stays only in the bucket files. Four paths, one object at a time: through A, a promoted object (A's
 * DRAM) against its twin (A's pread); from this process (another node's reader), the promoted object from A's DRAM
 * over A's endpoint against the pread of the same object's pages.
 */
@Command(name = "promotion", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Reads of promoted objects from a node's DRAM against the same bytes by pread, 64KiB and 1MiB by default, "
                + "in one run.",
                "Starts a master and node A (with a DRAM segment) as separate processes on a temporary root, offloads each object "
                        + "twice (a key to promote and a twin that stays on disk), promotes the first and waits until A holds "
                        + "them all. Then: through A, the promoted object (its DRAM) against the twin (its pread); from this "
                        + "process, the promoted object from A's DRAM against the pread of its pages. The pread is warm in the "
                        + "page cache of a local filesystem here: on a shared filesystem each pread crosses the network."})
public final class BenchPromotionCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--objects", paramLabel = "N", defaultValue = "200", description = "Objects per size (default: ${DEFAULT-VALUE}).")
    int objects;

    @Option(names = "--sizes", paramLabel = "SIZE[,SIZE...]", defaultValue = "64KiB,1MiB", split = ",",
            description = "Object sizes (default: ${DEFAULT-VALUE}).")
    List<String> sizes;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "3", description = "Timed passes over the objects (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--cold", description = "Before each timed pass that preads, drop the bucket files from the page cache "
            + "(GNU dd iflag=nocache), so the pread reads the disk as a pread of a shared filesystem crosses the network; the "
            + "DRAM copies are not touched.")
    boolean cold;

    @Option(names = "--promotion-interval", paramLabel = "DURATION", defaultValue = "200ms",
            description = "Node A's --promotion-interval: how often it asks for tasks, 8 at a time (default: ${DEFAULT-VALUE}).")
    String promotionInterval;

    /** The four paths for one size; each ratio is the pread's mean latency over the DRAM read's. */
    record Case(long objectSize, double promotedPerSecond, PathFigures nodeDram, PathFigures nodePread, PathFigures remoteDram,
                PathFigures localPread, double nodeRatio, double remoteRatio) {
    }

    @Override
    public Integer call() throws Exception {
        if (objects < 1 || objects > 10_000) {
            throw new CliException(ExitCodes.USAGE, "invalid --objects " + objects + ": allowed is 1 to 10000");
        }
        if (rounds < 1 || rounds > 100) {
            throw new CliException(ExitCodes.USAGE, "invalid --rounds " + rounds + ": allowed is 1 to 100");
        }
        List<Long> objectSizes = SizeArguments.objectSizes(sizes, 16L << 20);
        try {
            io.mcctl.storage.config.DurationParser.parse(promotionInterval);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --promotion-interval '" + promotionInterval + "': allowed is "
                    + io.mcctl.storage.config.DurationParser.ALLOWED);
        }
        long largest = objectSizes.stream().mapToLong(Long::longValue).max().orElse(1);
        long totalBytes = objectSizes.stream().mapToLong(s -> (s + 4096) * objects).sum();
        if (totalBytes > (2L << 30)) {
            throw new CliException(ExitCodes.USAGE, "invalid --objects " + objects + " with --sizes " + String.join(",", sizes)
                    + ": the promoted objects would take " + totalBytes + " bytes of node A's DRAM; allowed is up to 2GiB");
        }
        // Node A's segment holds every promoted object with room to spare (no eviction); buckets hold both copies.
        long segment = Math.max(64L << 20, (long) (totalBytes * 1.25) + (16L << 20));
        long bucketBytes = Math.max(64L << 20, Long.highestOneBit(Math.max(1, 2 * objects * (largest + 65_536) * objectSizes.size())) * 2);
        Path dir = Files.createTempDirectory("mcctl-bench-promotion");
        Consumer<ProcessBuilder> inDir = b -> b.directory(dir.toFile());
        List<Case> cases = new ArrayList<>();
        try (MasterProcess master = MasterProcess.start(List.of("-Xmx512m"), Duration.ofSeconds(60), inDir,
                "--root", dir.resolve("root").toString(), "--bucket-count", "8", "--bucket-size", bucketBytes + "", "--eviction", "false",
                "--promotion-reads", "0");
             NodeProcess nodeA = NodeProcess.start(List.of("-Xmx512m", "-XX:MaxDirectMemorySize=" + (segment + (256L << 20))),
                     Duration.ofSeconds(60), inDir, master.address(), "--memory", segment + "", "--promotion-interval", promotionInterval);
             MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(30));
             TierNode withDram = TierNode.connect(client, false, new ClientMetrics());
             TierNode filesOnly = TierNode.connect(client, false, new ClientMetrics()).readOnlySharedFiles();
             NodeClient viaA = new NodeClient(nodeA.endpoint(), Duration.ofSeconds(60))) {
            TierReader dramReader = new TierReader(withDram);
            TierReader preadReader = new TierReader(filesOnly);
            SplittableRandom random = new SplittableRandom(23);
            for (long size : objectSizes) {
                byte[] data = new byte[(int) size];
                List<String> promoted = new ArrayList<>();
                List<String> twins = new ArrayList<>();
                for (int i = 0; i < objects; i++) {
                    random.nextBytes(data);
                    String suffix = size + "-" + i;
                    viaA.write("bench", "hot-" + suffix, ByteBuffer.wrap(data), OffloadMode.PAGE_MODE);
                    viaA.write("bench", "twin-" + suffix, ByteBuffer.wrap(data), OffloadMode.PAGE_MODE);
                    promoted.add("hot-" + suffix);
                    twins.add("twin-" + suffix);
                }
                long before = client.listPromotions().getSucceededTotal();
                long promoting = System.nanoTime();
                for (String key : promoted) {
                    client.promote("bench", key);
                }
                awaitPromoted(client, before + objects);
                double promotedPerSecond = objects / ((System.nanoTime() - promoting) / 1e9);
                ReadPasses.pass(k -> viaA.get("bench", k), promoted, ReplicaType.MEMORY, null); // warm-up: page cache, connections, JIT
                ReadPasses.pass(k -> viaA.get("bench", k), twins, ReplicaType.DISTRIBUTED_DISK, null);
                readerPass(dramReader, withDram, promoted, true, null);
                readerPass(preadReader, filesOnly, promoted, false, null);
                LatencyRecorder[] latencies = {new LatencyRecorder(), new LatencyRecorder(), new LatencyRecorder(), new LatencyRecorder()};
                long[] nanos = new long[4];
                for (int round = 0; round < rounds; round++) {
                    // Alternate which path goes first, so neither always runs on a cache the other just warmed.
                    boolean dramFirst = round % 2 == 0;
                    for (int turn = 0; turn < 2; turn++) {
                        if (dramFirst == (turn == 0)) {
                            nanos[0] += ReadPasses.pass(k -> viaA.get("bench", k), promoted, ReplicaType.MEMORY, latencies[0]);
                            nanos[2] += readerPass(dramReader, withDram, promoted, true, latencies[2]);
                        } else {
                            dropCache(dir.resolve("root"));
                            nanos[1] += ReadPasses.pass(k -> viaA.get("bench", k), twins, ReplicaType.DISTRIBUTED_DISK, latencies[1]);
                            dropCache(dir.resolve("root"));
                            nanos[3] += readerPass(preadReader, filesOnly, promoted, false, latencies[3]);
                        }
                    }
                }
                PathFigures nodeDram = PathFigures.of("node A: DRAM (promoted)", latencies[0], nanos[0], size);
                PathFigures nodePread = PathFigures.of("node A: pread (twin)", latencies[1], nanos[1], size);
                PathFigures remoteDram = PathFigures.of("reader: A's DRAM", latencies[2], nanos[2], size);
                PathFigures localPread = PathFigures.of("reader: pread", latencies[3], nanos[3], size);
                cases.add(new Case(size, promotedPerSecond, nodeDram, nodePread, remoteDram, localPread, nodePread.meanMicros() / nodeDram.meanMicros(),
                        localPread.meanMicros() / remoteDram.meanMicros()));
            }
        } finally {
            FileTrees.deleteTree(dir);
        }
        report(cases);
        return ExitCodes.OK;
    }

    /** With --cold: every bucket file's pages leave the page cache (the kernel may read ahead again as a pass reads). */
    private void dropCache(Path root) throws Exception {
        if (!cold) {
            return;
        }
        try (java.util.stream.Stream<Path> files = Files.list(root)) {
            for (Path file : files.filter(f -> f.getFileName().toString().startsWith("bucket_")).toList()) {
                Process dd = new ProcessBuilder("dd", "if=" + file, "iflag=nocache", "count=0", "status=none").inheritIO().start();
                if (dd.waitFor() != 0) {
                    throw new CliException(ExitCodes.FAILED, "--cold: dd iflag=nocache of " + file + " failed (exit " + dd.exitValue() + ")");
                }
            }
        }
    }

    private static void awaitPromoted(MasterClient client, long succeeded) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (true) {
            ListPromotionsResponse listed = client.listPromotions();
            if (listed.getSucceededTotal() >= succeeded && listed.getTasksCount() == 0) {
                return;
            }
            if (listed.getFailedTotal() > 0 || System.nanoTime() - deadline > 0) {
                throw new CliException(ExitCodes.FAILED, "node A did not promote every object: " + listed.getSucceededTotal() + " of "
                        + succeeded + " succeeded, " + listed.getFailedTotal() + " failed, " + listed.getTasksCount() + " tasks left");
            }
            Thread.sleep(20);
        }
    }

    /** Reads every key once with a lookup and the reader's path; checks the DRAM reads were DRAM reads. */
    private static long readerPass(TierReader reader, TierNode tier, List<String> keys, boolean fromDram, LatencyRecorder latencies) {
        long dramBefore = tier.metrics().memoryReadsTotal();
        long start = System.nanoTime();
        for (String key : keys) {
            long t0 = System.nanoTime();
            TierReader.Outcome read = reader.get("bench", List.of(key)).get(0);
            long took = System.nanoTime() - t0;
            if (!read.ok()) {
                throw new CliException(ExitCodes.FAILED, key + ": " + read.status() + " " + read.message());
            }
            if (latencies != null) {
                latencies.record(took);
            }
        }
        long nanos = System.nanoTime() - start;
        long dramReads = tier.metrics().memoryReadsTotal() - dramBefore;
        if (dramReads != (fromDram ? keys.size() : 0)) {
            throw new CliException(ExitCodes.FAILED, dramReads + " of " + keys.size() + " reads came from DRAM on the "
                    + (fromDram ? "DRAM" : "pread") + " path");
        }
        return nanos;
    }

    private void report(List<Case> cases) {
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("objects", objects);
            report.put("rounds", rounds);
            report.put("promotion_interval", promotionInterval);
            report.put("cold_pread", cold);
            report.put("machine", MachineInfo.describe());
            List<Map<String, Object>> rows = new ArrayList<>();
            for (Case c : cases) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("object_size", c.objectSize());
                row.put("promoted_objects_per_second", c.promotedPerSecond());
                row.put("node_dram", c.nodeDram());
                row.put("node_pread", c.nodePread());
                row.put("reader_remote_dram", c.remoteDram());
                row.put("reader_pread", c.localPread());
                row.put("node_latency_ratio", c.nodeRatio());
                row.put("reader_latency_ratio", c.remoteRatio());
                rows.add(row);
            }
            report.put("cases", rows);
            out.println(OutputMixin.toJson(report));
        } else {
            Table table = PathFigures.table();
            for (Case c : cases) {
                for (PathFigures p : List.of(c.nodeDram(), c.nodePread(), c.remoteDram(), c.localPread())) {
                    p.addTo(table, c.objectSize());
                }
            }
            out.print(table.render());
            for (Case c : cases) {
                out.printf("%s: %d objects promoted at %.0f objects/s (node A asks for tasks every %s)%n", SizeParser.format(c.objectSize()),
                        objects, c.promotedPerSecond(), promotionInterval);
                out.printf("%s: through node A its DRAM is %.2fx the speed of its pread; from another reader A's DRAM is %.2fx the "
                        + "speed of a local pread%n", SizeParser.format(c.objectSize()), c.nodeRatio(), c.remoteRatio());
            }
        }
        out.flush();
    }
}
