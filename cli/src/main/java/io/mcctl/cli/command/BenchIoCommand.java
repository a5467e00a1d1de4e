package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.config.SizeParser;
import io.mcctl.storage.layout.BucketLayout;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code mcctl bench io}: batch get through the tier against a plain sequential read of the same bytes of
 * the same bucket file, both from the page cache, in one run; fio too where it is installed.
 */
@Command(name = "io", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Batch get (mapping calls, pread, CRC32C check) of 64KiB and 1MiB objects against a plain sequential",
                "read of the same bucket file region, both warm in the page cache, with an embedded master on a",
                "temporary root (or --root). All objects of a size go to one bucket so the plain read covers the same bytes."})
public final class BenchIoCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--total", paramLabel = "SIZE", defaultValue = "1GiB",
            description = "Bytes of objects per object size (default: ${DEFAULT-VALUE}).")
    String total;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "5", description = "Timed passes over the data (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--keys-per-lookup", paramLabel = "N", defaultValue = "" + TierReader.KEYS_PER_LOOKUP,
            description = "Most keys per mapping call; reads go 64 objects at a time whatever this is (default: ${DEFAULT-VALUE}).")
    int keysPerLookup;

    @Option(names = "--read-threads", paramLabel = "N",
            description = "Threads the tier reads a batch on (default: the CPUs this process may use, at most 4);"
                    + " above 1 the tier is timed on one thread as well, in the same passes.")
    int readThreads = TierReader.DEFAULT_READ_THREADS;

    @Option(names = "--root", paramLabel = "DIR", description = "Directory for the bucket files (default: a temporary directory, removed after).")
    Path root;

    /** Figures for one object size. */
    /** {@code oneThreadGiBps}: the tier read on the calling thread alone, null when {@code --read-threads} is 1. */
    record Case(long objectSize, int objects, double tierGiBps, Double oneThreadGiBps, double plainGiBps, Double fioGiBps) {
    }

    @Override
    public Integer call() throws Exception {
        long totalBytes;
        try {
            totalBytes = SizeParser.parse(total);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --total '" + total + "': allowed is " + SizeParser.ALLOWED);
        }
        if (totalBytes < (4L << 20) || totalBytes > (4L << 30)) {
            throw new CliException(ExitCodes.USAGE, "invalid --total '" + total + "': allowed is 4MiB to 4GiB");
        }
        if (rounds < 1 || rounds > 100) {
            throw new CliException(ExitCodes.USAGE, "invalid --rounds " + rounds + ": allowed is 1 to 100");
        }
        if (keysPerLookup < 1 || keysPerLookup > 10_000) {
            throw new CliException(ExitCodes.USAGE, "invalid --keys-per-lookup " + keysPerLookup + ": allowed is 1 to 10000");
        }
        if (readThreads < 1 || readThreads > TierReader.MAX_READ_THREADS) {
            throw new CliException(ExitCodes.USAGE, "invalid --read-threads " + readThreads + ": allowed is 1 to " + TierReader.MAX_READ_THREADS);
        }
        boolean temporary = root == null;
        Path dir = temporary ? Files.createTempDirectory("mcctl-bench-io") : root;
        List<Case> cases = new ArrayList<>();
        long bucketSize = Math.max(4L << 30, Long.highestOneBit(totalBytes) << 2);
        try (MasterServer master = MasterServer.start(MasterServer.Options.builder(new BucketLayout(dir, 16, 64 << 10, bucketSize))
                .readLease(Duration.ofSeconds(30)).build());
             MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(30));
             TierNode node = TierNode.connect(client, true, new ClientMetrics())) {
            BucketLayout layout = master.pages().layout();
            int bucket = 0;
            for (long objectSize : new long[] {64L << 10, 1L << 20}) {
                cases.add(measure(node, layout, bucket++, objectSize, (int) (totalBytes / objectSize)));
            }
        } finally {
            if (temporary) {
                BenchMasterCommand.deleteTree(dir);
            }
        }
        report(cases);
        return ExitCodes.OK;
    }

    private Case measure(TierNode node, BucketLayout layout, int bucket, long objectSize, int objects) throws Exception {
        List<String> keys = keysInBucket(layout, bucket, objects, "io" + objectSize + "-");
        TierWriter writer = new TierWriter(node);
        SplittableRandom random = new SplittableRandom(objectSize);
        byte[] content = new byte[(int) objectSize];
        for (int from = 0; from < objects; from += 64) {
            List<TierWriter.ObjectSource> batch = new ArrayList<>();
            for (int i = from; i < Math.min(objects, from + 64); i++) {
                for (int b = 0; b < content.length; b += 8) {
                    long v = random.nextLong();
                    for (int k = 0; k < 8 && b + k < content.length; k++) {
                        content[b + k] = (byte) (v >>> (8 * k));
                    }
                }
                batch.add(new TierWriter.ObjectSource(keys.get(i), List.of(ByteBuffer.wrap(content.clone()))));
            }
            for (TierWriter.Outcome outcome : writer.offload("bench", batch, true)) {
                if (!outcome.ok()) {
                    throw new CliException(ExitCodes.FAILED, "offload for the benchmark failed: " + outcome.message());
                }
            }
        }
        Path file = layout.bucketPath(bucket);
        long bytes = objectSize * objects;
        TierReader reader = new TierReader(node, readThreads);
        TierReader oneThread = readThreads == 1 ? null : new TierReader(node, 1);
        // Warm the page cache and the JIT for every path (gRPC needs a few thousand calls before its
        // figures settle), then alternate timed passes and keep the best of each.
        long warmUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        while (System.nanoTime() < warmUntil) {
            readTier(reader, keys, objectSize, keysPerLookup);
            if (oneThread != null) {
                readTier(oneThread, keys, objectSize, keysPerLookup);
            }
            readPlain(file, bytes, objectSize);
        }
        long tierNanos = Long.MAX_VALUE;
        long oneThreadNanos = Long.MAX_VALUE;
        long plainNanos = Long.MAX_VALUE;
        for (int round = 0; round < rounds; round++) {
            tierNanos = Math.min(tierNanos, readTier(reader, keys, objectSize, keysPerLookup));
            if (oneThread != null) {
                oneThreadNanos = Math.min(oneThreadNanos, readTier(oneThread, keys, objectSize, keysPerLookup));
            }
            plainNanos = Math.min(plainNanos, readPlain(file, bytes, objectSize));
        }
        Double fio = fio(file, bytes);
        return new Case(objectSize, objects, gibps(bytes, tierNanos), oneThread == null ? null : gibps(bytes, oneThreadNanos),
                gibps(bytes, plainNanos), fio);
    }

    private static List<String> keysInBucket(BucketLayout layout, int bucket, int count, String prefix) {
        List<String> keys = new ArrayList<>(count);
        for (long i = 0; keys.size() < count; i++) {
            String key = prefix + i;
            if (layout.homeBucket(key) == bucket) {
                keys.add(key);
            }
        }
        return keys;
    }

    /**
     * Batch gets of 64 keys into 64 reused direct buffers, as an engine reads into its own registered
     * memory, with the next mapping call overlapping the preads of this one's batches.
     */
    private static long readTier(TierReader reader, List<String> keys, long objectSize, int keysPerLookup) throws java.io.IOException {
        List<ByteBuffer> buffers = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            buffers.add(ByteBuffer.allocateDirect((int) objectSize));
        }
        long start = System.nanoTime();
        reader.getPipelined("bench", keys, 64, keysPerLookup, new TierReader.BatchSink() {
            @Override
            public List<ByteBuffer> destinations(List<String> batch) {
                for (ByteBuffer buffer : buffers) {
                    buffer.clear();
                }
                return buffers.subList(0, batch.size());
            }

            @Override
            public void accept(List<TierReader.Outcome> outcomes) {
                for (TierReader.Outcome outcome : outcomes) {
                    if (!outcome.ok()) {
                        throw new CliException(ExitCodes.FAILED, "get for the benchmark failed: " + outcome.message());
                    }
                }
            }
        });
        return System.nanoTime() - start;
    }

    /**
     * The plain baseline: the same bytes of the bucket file read in order, one pread per object-size chunk,
     * into the same 64 rotating direct buffers the tier reads into, with CRC32C over each as the tier does.
     * Only the tier's own work (mapping lookups, leases, bookkeeping) differs.
     */
    private static long readPlain(Path file, long bytes, long objectSize) throws Exception {
        ByteBuffer[] buffers = new ByteBuffer[64];
        for (int i = 0; i < buffers.length; i++) {
            buffers[i] = ByteBuffer.allocateDirect((int) objectSize);
        }
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        long start = System.nanoTime();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            int next = 0;
            for (long position = 0; position < bytes; position += objectSize) {
                ByteBuffer buffer = buffers[next++ % buffers.length];
                buffer.clear();
                while (buffer.hasRemaining()) {
                    if (channel.read(buffer, position + buffer.position()) < 0) {
                        throw new java.io.EOFException(file + " ends before " + bytes + " bytes");
                    }
                }
                buffer.flip();
                crc.reset();
                crc.update(buffer);
            }
        }
        return System.nanoTime() - start;
    }

    /** fio's sequential read of the same region, in GiB/s, or null when fio is not installed. */
    private static Double fio(Path file, long bytes) {
        try {
            Process process = new ProcessBuilder("fio", "--name=seqread", "--filename=" + file, "--rw=read", "--bs=1M",
                    "--size=" + bytes, "--readonly", "--ioengine=psync", "--output-format=json").redirectErrorStream(true).start();
            String out = new String(process.getInputStream().readAllBytes());
            if (!process.waitFor(120, TimeUnit.SECONDS) || process.exitValue() != 0) {
                return null;
            }
            var json = new com.fasterxml.jackson.databind.ObjectMapper().readTree(out.substring(out.indexOf('{')));
            double kibPerSecond = json.get("jobs").get(0).get("read").get("bw").asDouble();
            return kibPerSecond * 1024 / (1L << 30);
        } catch (Exception e) {
            return null;
        }
    }

    private static double gibps(long bytes, long nanos) {
        return bytes / (nanos / 1e9) / (1L << 30);
    }

    private void report(List<Case> cases) {
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("benchmark", "io");
            report.put("machine", MachineInfo.describe());
            report.put("rounds", rounds);
            report.put("keys_per_lookup", keysPerLookup);
            report.put("read_threads", readThreads);
            List<Map<String, Object>> rows = new ArrayList<>();
            for (Case c : cases) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("object_size", c.objectSize());
                row.put("objects", c.objects());
                row.put("tier_gib_per_s", round(c.tierGiBps()));
                row.put("plain_read_gib_per_s", round(c.plainGiBps()));
                row.put("tier_over_plain", round(c.tierGiBps() / c.plainGiBps()));
                row.put("tier_one_thread_gib_per_s", c.oneThreadGiBps() == null ? null : round(c.oneThreadGiBps()));
                row.put("tier_one_thread_over_plain", c.oneThreadGiBps() == null ? null : round(c.oneThreadGiBps() / c.plainGiBps()));
                row.put("fio_gib_per_s", c.fioGiBps() == null ? null : round(c.fioGiBps()));
                rows.add(row);
            }
            report.put("cases", rows);
            out.println(OutputMixin.toJson(report));
        } else {
            out.printf("tier: reads of 64 objects on up to %d threads, mapping calls of up to %d keys, best of %d passes%n",
                    readThreads, keysPerLookup, rounds);
            Table table = new Table("OBJECT", "OBJECTS", "TIER GiB/s", "PLAIN GiB/s", "TIER/PLAIN", "1 THREAD/PLAIN", "FIO GiB/s");
            for (Case c : cases) {
                table.row(SizeParser.format(c.objectSize()), c.objects(), fmt(c.tierGiBps()), fmt(c.plainGiBps()),
                        fmt(c.tierGiBps() / c.plainGiBps()), c.oneThreadGiBps() == null ? "-" : fmt(c.oneThreadGiBps() / c.plainGiBps()),
                        c.fioGiBps() == null ? "not installed" : fmt(c.fioGiBps()));
            }
            out.print(table.render());
        }
        out.flush();
    }

    private static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.3f", v);
    }
}
