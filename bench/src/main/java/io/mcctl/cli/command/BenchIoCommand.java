package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.SettingsOptions;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.util.FileTrees;
import io.mcctl.cli.util.Rounding;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.config.EffectiveConfig;
import io.mcctl.storage.config.Setting;
import io.mcctl.storage.config.SizeParser;
import io.mcctl.storage.config.StorageSettings;
import io.mcctl.storage.io.BucketIoSelector;
import io.mcctl.storage.io.IoMode;
import io.mcctl.storage.layout.BucketLayout;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
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
 * {@code mcctl bench io}: the same batch writes and batch reads through the tier over each bucket-file IO asked for
 * (POSIX, USRBIO or both, in turns in the same run), with the CPU each moves a GiB with, and a plain sequential read of
 * the same bucket file as the read's baseline; fio too where it is installed.
 */
@Command(name = "io", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Batch offload (allocate, write, fdatasync, notify) and batch get (mapping calls, read, CRC32C check) of",
                "objects of each --object-sizes, with an embedded master on a temporary root (or --root), through the",
                "bucket-file IO --io names: posix, usrbio (3FS's USRBIO; --root must be on a 3FS mount) or both, measured",
                "in turns in the same passes. Reports GiB/s and CPU seconds per GiB moved (the whole process: the",
                "embedded master's share is the same on both paths), and with both the USRBIO/POSIX ratios. Reads also",
                "against a plain sequential read of the same bucket file region, both warm in the page cache."})
public final class BenchIoCommand implements Callable<Integer>, SettingsOptions.UsesSettings {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--io", paramLabel = "PATH", defaultValue = "posix",
            description = "Bucket-file IO to measure: posix, usrbio or both (default: ${DEFAULT-VALUE}).")
    String io;

    @Option(names = "--object-sizes", paramLabel = "SIZE[,SIZE...]", split = ",", defaultValue = "64KiB,2MiB",
            description = "Object sizes, one case each (default: ${DEFAULT-VALUE}).")
    List<String> objectSizes;

    @Option(names = "--total", paramLabel = "SIZE", defaultValue = "1GiB",
            description = "Bytes of objects per object size (default: ${DEFAULT-VALUE}).")
    String total;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "5", description = "Timed passes over the data (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--keys-per-lookup", paramLabel = "N", defaultValue = "" + TierReader.KEYS_PER_LOOKUP,
            description = "Most keys per mapping call; reads go 64 objects at a time whatever this is (default: ${DEFAULT-VALUE}).")
    int keysPerLookup;

    @Option(names = "--read-threads", paramLabel = "N",
            description = "Threads the tier reads a batch on (default: the CPUs this process may use, at most 4).")
    int readThreads = TierReader.DEFAULT_READ_THREADS;

    @Option(names = "--root", paramLabel = "DIR", description = "Directory for the bucket files (default: a temporary directory, removed "
            + "after; for usrbio give a directory on the 3FS mount).")
    Path root;

    /** --usrbio-library, from the setting of that name (flag, environment or file). */
    @Override
    public List<Setting<?>> settings() {
        return List.of(StorageSettings.USRBIO_LIBRARY);
    }

    /** Most bytes of objects one offload or one read batch carries, and most objects. */
    static final long BATCH_BYTES = 16L << 20;
    static final int BATCH_OBJECTS = 64;

    /** One path's figures for one object size: best GiB/s of the passes, and CPU seconds per GiB over all timed passes. */
    record PathFigures(String path, double writeGiBps, double readGiBps, double writeCpuPerGiB, double readCpuPerGiB) {
    }

    /** Figures for one object size. */
    record Case(long objectSize, int objects, int batch, List<PathFigures> paths, double plainGiBps, Double fioGiBps) {
        PathFigures path(String name) {
            return paths.stream().filter(p -> p.path().equals(name)).findFirst().orElse(null);
        }
    }

    /** One IO under test: its node, writer and reader, and what its timed passes took. */
    private static final class IoUnderTest {
        final String name;
        final TierNode node;
        final TierWriter writer;
        final TierReader reader;
        long bestWriteNanos = Long.MAX_VALUE;
        long bestReadNanos = Long.MAX_VALUE;
        long writeCpuNanos;
        long readCpuNanos;
        long writeBytes;
        long readBytes;

        IoUnderTest(String name, TierNode node, int readThreads) {
            this.name = name;
            this.node = node;
            this.writer = new TierWriter(node);
            this.reader = new TierReader(node, readThreads);
        }
    }

    @Override
    public Integer call() throws Exception {
        long totalBytes = parseSize("--total", total);
        if (totalBytes < (4L << 20) || totalBytes > (4L << 30)) {
            throw new CliException(ExitCodes.USAGE, "invalid --total '" + total + "': allowed is 4MiB to 4GiB");
        }
        List<Long> sizes = new ArrayList<>();
        for (String size : objectSizes) {
            long bytes = parseSize("--object-sizes", size);
            if (bytes < 4096 || bytes > (64L << 20) || bytes > totalBytes) {
                throw new CliException(ExitCodes.USAGE, "invalid --object-sizes '" + size + "': allowed is 4KiB to 64MiB, at most --total");
            }
            sizes.add(bytes);
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
        List<IoMode> modes = switch (io.toLowerCase(Locale.ROOT)) {
            case "posix" -> List.of(IoMode.POSIX);
            case "usrbio" -> List.of(IoMode.USRBIO);
            case "both" -> List.of(IoMode.POSIX, IoMode.USRBIO);
            default -> throw new CliException(ExitCodes.USAGE, "invalid --io '" + io + "': allowed is posix, usrbio or both");
        };
        EffectiveConfig config = SettingsOptions.resolve(spec, settings());
        String library = config.get(StorageSettings.USRBIO_LIBRARY);
        boolean temporary = root == null;
        Path dir = temporary ? Files.createTempDirectory("mcctl-bench-io") : root.toAbsolutePath().normalize();
        List<Case> cases = new ArrayList<>();
        long largest = sizes.stream().mapToLong(Long::longValue).max().orElse(0);
        // Room for two versions of every object: an overwrite commits before the old version's pages are freed.
        long bucketSize = Math.max(4L << 30, Long.highestOneBit(totalBytes + largest) << 2);
        try {
            List<BucketIoSelector.Wanted> wanted = new ArrayList<>();
            for (IoMode mode : modes) {
                BucketIoSelector.Wanted w = new BucketIoSelector.Wanted(mode, "flag --io", library);
                w.choose("hf3fs", dir); // io usrbio that cannot work here is refused before anything is laid out
                wanted.add(w);
            }
            try (MasterServer master = MasterServer.start(MasterServer.Options.builder(new BucketLayout(dir, 16, 64 << 10, bucketSize))
                    .fsType(modes.contains(IoMode.USRBIO) ? "hf3fs" : "posix").readLease(Duration.ofSeconds(30)).build());
                 MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(30))) {
                List<IoUnderTest> paths = new ArrayList<>();
                try {
                    for (BucketIoSelector.Wanted w : wanted) {
                        TierNode node = TierNode.connect(client, true, new ClientMetrics(), w);
                        paths.add(new IoUnderTest(node.ioChoice().mode().text(), node, readThreads));
                    }
                    BucketLayout layout = master.pages().layout();
                    int bucket = 0;
                    for (long objectSize : sizes) {
                        cases.add(measure(paths, layout, bucket, bucket + 1, objectSize, (int) (totalBytes / objectSize)));
                        bucket += 2;
                    }
                } finally {
                    for (IoUnderTest path : paths) {
                        path.node.close();
                    }
                }
            }
        } finally {
            if (temporary) {
                FileTrees.deleteTree(dir);
            }
        }
        report(modes, cases);
        return ExitCodes.OK;
    }

    private static long parseSize(String option, String text) {
        try {
            return SizeParser.parse(text);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid " + option + " '" + text + "': allowed is " + SizeParser.ALLOWED);
        }
    }

    /**
     * One object size: objects offloaded into {@code writeBucket} again and again (never read, so an overwrite frees the old
     * version at once) and read from {@code readBucket} (written once), each path in turn, the order swapped every round.
     */
    private Case measure(List<IoUnderTest> paths, BucketLayout layout, int writeBucket, int readBucket, long objectSize, int objects) throws Exception {
        int batch = (int) Math.max(1, Math.min(BATCH_OBJECTS, BATCH_BYTES / objectSize));
        List<String> writeKeys = keysInBucket(layout, writeBucket, objects, "w" + objectSize + "-");
        List<String> readKeys = keysInBucket(layout, readBucket, objects, "r" + objectSize + "-");
        List<ByteBuffer> contents = contents(objects, objectSize);
        write(paths.get(0), readKeys, contents, batch);
        Path file = layout.bucketPath(readBucket);
        long bytes = objectSize * objects;
        // Warm the page cache and the JIT for every path (gRPC needs a few thousand calls before its figures settle).
        long warmUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        do {
            for (IoUnderTest path : paths) {
                write(path, writeKeys, contents, batch);
                read(path, readKeys, objectSize, batch);
            }
            readPlain(file, bytes, objectSize);
        } while (System.nanoTime() < warmUntil);
        for (IoUnderTest path : paths) {
            path.bestWriteNanos = path.bestReadNanos = Long.MAX_VALUE;
            path.writeCpuNanos = path.readCpuNanos = path.writeBytes = path.readBytes = 0;
        }
        long plainNanos = Long.MAX_VALUE;
        for (int round = 0; round < rounds; round++) {
            for (int k = 0; k < paths.size(); k++) {
                IoUnderTest path = paths.get((k + round) % paths.size());
                long cpu = processCpuNanos();
                long nanos = write(path, writeKeys, contents, batch);
                path.writeCpuNanos += processCpuNanos() - cpu;
                path.bestWriteNanos = Math.min(path.bestWriteNanos, nanos);
                path.writeBytes += bytes;
                cpu = processCpuNanos();
                nanos = read(path, readKeys, objectSize, batch);
                path.readCpuNanos += processCpuNanos() - cpu;
                path.bestReadNanos = Math.min(path.bestReadNanos, nanos);
                path.readBytes += bytes;
            }
            plainNanos = Math.min(plainNanos, readPlain(file, bytes, objectSize));
        }
        List<PathFigures> figures = new ArrayList<>();
        for (IoUnderTest path : paths) {
            figures.add(new PathFigures(path.name, gibps(bytes, path.bestWriteNanos), gibps(bytes, path.bestReadNanos),
                    cpuPerGiB(path.writeCpuNanos, path.writeBytes), cpuPerGiB(path.readCpuNanos, path.readBytes)));
        }
        return new Case(objectSize, objects, batch, figures, gibps(bytes, plainNanos), fio(file, bytes));
    }

    private static List<ByteBuffer> contents(int objects, long objectSize) {
        SplittableRandom random = new SplittableRandom(objectSize);
        List<ByteBuffer> contents = new ArrayList<>(objects);
        for (int i = 0; i < objects; i++) {
            byte[] content = new byte[(int) objectSize];
            for (int b = 0; b < content.length; b += 8) {
                long v = random.nextLong();
                for (int k = 0; k < 8 && b + k < content.length; k++) {
                    content[b + k] = (byte) (v >>> (8 * k));
                }
            }
            contents.add(ByteBuffer.wrap(content));
        }
        return contents;
    }

    /** Offloads every key (overwriting) in batches of {@code batch}; the nanoseconds it took. */
    private static long write(IoUnderTest path, List<String> keys, List<ByteBuffer> contents, int batch) {
        long start = System.nanoTime();
        for (int from = 0; from < keys.size(); from += batch) {
            List<TierWriter.ObjectSource> objects = new ArrayList<>(batch);
            for (int i = from; i < Math.min(keys.size(), from + batch); i++) {
                objects.add(new TierWriter.ObjectSource(keys.get(i), List.of(contents.get(i))));
            }
            for (TierWriter.Outcome outcome : path.writer.offload("bench", objects, true)) {
                if (!outcome.ok()) {
                    throw new CliException(ExitCodes.FAILED, "offload through " + path.name + " for the benchmark failed: " + outcome.message());
                }
            }
        }
        return System.nanoTime() - start;
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
     * Batch gets of {@code batch} keys into as many reused direct buffers, as an engine reads into its own registered
     * memory, with the next mapping call overlapping the reads of this one's batches.
     */
    private long read(IoUnderTest path, List<String> keys, long objectSize, int batch) throws java.io.IOException {
        List<ByteBuffer> buffers = new ArrayList<>();
        for (int i = 0; i < batch; i++) {
            buffers.add(ByteBuffer.allocateDirect((int) objectSize));
        }
        long start = System.nanoTime();
        path.reader.getPipelined("bench", keys, batch, keysPerLookup, new TierReader.BatchSink() {
            @Override
            public List<ByteBuffer> destinations(List<String> keys) {
                for (ByteBuffer buffer : buffers) {
                    buffer.clear();
                }
                return buffers.subList(0, keys.size());
            }

            @Override
            public void accept(List<TierReader.Outcome> outcomes) {
                for (TierReader.Outcome outcome : outcomes) {
                    if (!outcome.ok()) {
                        throw new CliException(ExitCodes.FAILED, "get through " + path.name + " for the benchmark failed: " + outcome.message());
                    }
                }
            }
        });
        return System.nanoTime() - start;
    }

    /**
     * The plain baseline: the same bytes of the bucket file read in order, one pread per object-size chunk,
     * into 64 rotating direct buffers, with CRC32C over each as the tier does.
     */
    private static long readPlain(Path file, long bytes, long objectSize) throws Exception {
        ByteBuffer[] buffers = new ByteBuffer[(int) Math.max(1, Math.min(BATCH_OBJECTS, BATCH_BYTES / objectSize))];
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

    /** CPU time of this whole process so far, every thread's (the embedded master's too). */
    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private static double gibps(long bytes, long nanos) {
        return bytes / (nanos / 1e9) / (1L << 30);
    }

    private static double cpuPerGiB(long cpuNanos, long bytes) {
        return bytes == 0 ? 0 : cpuNanos / 1e9 / ((double) bytes / (1L << 30));
    }

    private void report(List<IoMode> modes, List<Case> cases) {
        PrintWriter out = spec.commandLine().getOut();
        boolean both = modes.size() == 2;
        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("benchmark", "io");
            report.put("machine", MachineInfo.describe());
            report.put("io", io.toLowerCase(Locale.ROOT));
            report.put("rounds", rounds);
            report.put("keys_per_lookup", keysPerLookup);
            report.put("read_threads", readThreads);
            List<Map<String, Object>> rows = new ArrayList<>();
            for (Case c : cases) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("object_size", c.objectSize());
                row.put("objects", c.objects());
                row.put("batch", c.batch());
                for (PathFigures p : c.paths()) {
                    Map<String, Object> figures = new LinkedHashMap<>();
                    figures.put("write_gib_per_s", Rounding.round(p.writeGiBps(), 3));
                    figures.put("read_gib_per_s", Rounding.round(p.readGiBps(), 3));
                    figures.put("write_cpu_s_per_gib", Rounding.round(p.writeCpuPerGiB(), 3));
                    figures.put("read_cpu_s_per_gib", Rounding.round(p.readCpuPerGiB(), 3));
                    figures.put("read_over_plain", Rounding.round(p.readGiBps() / c.plainGiBps(), 3));
                    row.put(p.path(), figures);
                }
                row.put("plain_read_gib_per_s", Rounding.round(c.plainGiBps(), 3));
                if (both) {
                    PathFigures posix = c.path("posix");
                    PathFigures usrbio = c.path("usrbio");
                    row.put("usrbio_over_posix_write", ratio(usrbio.writeGiBps(), posix.writeGiBps()));
                    row.put("usrbio_over_posix_read", ratio(usrbio.readGiBps(), posix.readGiBps()));
                    row.put("usrbio_over_posix_write_cpu", ratio(usrbio.writeCpuPerGiB(), posix.writeCpuPerGiB()));
                    row.put("usrbio_over_posix_read_cpu", ratio(usrbio.readCpuPerGiB(), posix.readCpuPerGiB()));
                }
                row.put("fio_gib_per_s", c.fioGiBps() == null ? null : Rounding.round(c.fioGiBps(), 3));
                rows.add(row);
            }
            report.put("cases", rows);
            out.println(OutputMixin.toJson(report));
        } else {
            out.printf("io %s: offloads and gets of batches of up to %d objects (%s), reads on up to %d threads, best of %d passes; "
                    + "CPU: the whole process over every pass%n", io.toLowerCase(Locale.ROOT), BATCH_OBJECTS, SizeParser.format(BATCH_BYTES),
                    readThreads, rounds);
            Table table = new Table("OBJECT", "IO", "WRITE GiB/s", "READ GiB/s", "WRITE CPU s/GiB", "READ CPU s/GiB", "READ/PLAIN");
            for (Case c : cases) {
                for (PathFigures p : c.paths()) {
                    table.row(SizeParser.format(c.objectSize()), p.path(), fmt(p.writeGiBps()), fmt(p.readGiBps()), fmt(p.writeCpuPerGiB()),
                            fmt(p.readCpuPerGiB()), fmt(p.readGiBps() / c.plainGiBps()));
                }
                if (both) {
                    PathFigures posix = c.path("posix");
                    PathFigures usrbio = c.path("usrbio");
                    table.row(SizeParser.format(c.objectSize()), "usrbio/posix", fmt(ratio(usrbio.writeGiBps(), posix.writeGiBps())),
                            fmt(ratio(usrbio.readGiBps(), posix.readGiBps())), fmt(ratio(usrbio.writeCpuPerGiB(), posix.writeCpuPerGiB())),
                            fmt(ratio(usrbio.readCpuPerGiB(), posix.readCpuPerGiB())), "-");
                }
            }
            out.print(table.render());
            for (Case c : cases) {
                out.printf("%s: plain sequential read %s GiB/s, fio %s%n", SizeParser.format(c.objectSize()), fmt(c.plainGiBps()),
                        c.fioGiBps() == null ? "not installed" : fmt(c.fioGiBps()) + " GiB/s");
            }
        }
        out.flush();
    }

    /** {@code a / b} rounded, or null when {@code b} is 0 (a CPU time below the clock's tick). */
    private static Double ratio(double a, double b) {
        return b == 0 ? null : Rounding.round(a / b, 3);
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.3f", v);
    }

    private static String fmt(Double v) {
        return v == null ? "-" : fmt(v.doubleValue());
    }
}
