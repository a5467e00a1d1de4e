package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.util.FileTrees;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.config.SizeParser;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.perkey.PerKeyStore;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code mcctl bench layout}: the per-key file model against bucket files for the same objects in one run: files
 * created, offload and get throughput, what a delete costs, and how long a restart takes to know what exists (a walk of
 * the per-key tree, ScanMeta, against the master loading its snapshot).
 */
@Command(name = "layout", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Per-key files (256 hashed directories, one file per object) against pages of bucket files, for the same "
                + "objects in one run.",
                "Reports files created, offload and get throughput, delete cost, and the time a restart needs to know what "
                        + "exists: a walk of the per-key tree (ScanMeta) against an embedded master's restart from its "
                        + "snapshot. Per-key files are written without an fsync each unless --fsync (kind to that model: "
                        + "page mode fsyncs the bucket files and its log once per batch of 64). Both warm in the page cache."})
public final class BenchLayoutCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--objects", paramLabel = "N", defaultValue = "100000", description = "Objects per model (default: ${DEFAULT-VALUE}).")
    int objects;

    @Option(names = "--size", paramLabel = "SIZE", defaultValue = "4KiB", description = "Bytes per object (default: ${DEFAULT-VALUE}).")
    String size;

    @Option(names = "--fsync", description = "fsync every per-key file, as a node does when it offloads through its local disk.")
    boolean fsync;

    private static final int BATCH = 64;
    private static final String TENANT = "bench";

    /** One model's figures; seconds for each phase. */
    record Model(String model, long filesCreated, double offloadSeconds, double getSeconds, double deleteSeconds,
                 double knowWhatExistsSeconds, long knownAfterRestart) {
    }

    @Override
    public Integer call() throws Exception {
        if (objects < 1 || objects > 10_000_000) {
            throw new CliException(ExitCodes.USAGE, "invalid --objects " + objects + ": allowed is 1 to 10000000");
        }
        long bytes;
        try {
            bytes = SizeParser.parse(size);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --size '" + size + "': allowed is " + SizeParser.ALLOWED);
        }
        if (bytes < 1 || bytes > (1L << 20)) {
            throw new CliException(ExitCodes.USAGE, "invalid --size '" + size + "': allowed is 1 byte to 1MiB");
        }
        byte[] data = new byte[(int) bytes];
        new SplittableRandom(3).nextBytes(data);
        Path dir = Files.createTempDirectory("mcctl-bench-layout");
        Model perKey;
        Model paged;
        try {
            perKey = perKey(dir.resolve("per-key"), data);
            paged = pages(dir.resolve("root"), data);
        } finally {
            FileTrees.deleteTree(dir);
        }
        report(List.of(perKey, paged), bytes);
        return ExitCodes.OK;
    }

    private static String key(int i) {
        return "layout-" + i;
    }

    private Model perKey(Path root, byte[] data) throws IOException {
        PerKeyStore store = PerKeyStore.open(root);
        long start = System.nanoTime();
        for (int i = 0; i < objects; i++) {
            store.write(TENANT, key(i), List.of(ByteBuffer.wrap(data)), fsync);
        }
        double offload = seconds(start);
        long files;
        try (Stream<Path> walk = Files.walk(root)) {
            files = walk.filter(Files::isRegularFile).count();
        }
        start = System.nanoTime();
        ByteBuffer into = ByteBuffer.allocate(data.length);
        for (int i = 0; i < objects; i++) {
            PerKeyStore.Entry entry = store.find(TENANT, key(i));
            into.clear();
            try (FileChannel in = FileChannel.open(entry.file(), StandardOpenOption.READ)) {
                if (PerKeyStore.readChunk(in, entry, 0, into) != data.length) {
                    throw new CliException(ExitCodes.FAILED, "per-key read of " + key(i) + " came up short");
                }
            }
        }
        double get = seconds(start);
        // A restarted node knows what it holds only by walking its tree and reading every file's header.
        start = System.nanoTime();
        long[] known = {0};
        store.scan(entry -> known[0]++);
        double walk = seconds(start);
        start = System.nanoTime();
        for (int i = 0; i < objects; i++) {
            store.delete(TENANT, key(i));
        }
        double delete = seconds(start);
        return new Model("per-key files", files, offload, get, delete, walk, known[0]);
    }

    private Model pages(Path root, byte[] data) throws IOException {
        int buckets = 16;
        long perBucket = Math.max(16L << 20, Long.highestOneBit(Math.max(1, (long) objects * roundUp(data.length, 4096) * 3 / 2 / buckets)) * 2);
        BucketLayout layout = new BucketLayout(root, buckets, 4096, perBucket);
        MasterServer.Options options = MasterServer.Options.builder(layout).build();
        double offload;
        double get;
        long files;
        try (MasterServer master = MasterServer.start(options);
             MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(60));
             TierNode node = TierNode.connect(client, true, new ClientMetrics())) {
            TierWriter writer = new TierWriter(node);
            long start = System.nanoTime();
            for (int from = 0; from < objects; from += BATCH) {
                List<TierWriter.ObjectSource> batch = new ArrayList<>();
                for (int i = from; i < Math.min(objects, from + BATCH); i++) {
                    batch.add(new TierWriter.ObjectSource(key(i), List.of(ByteBuffer.wrap(data))));
                }
                for (TierWriter.Outcome outcome : writer.offload(TENANT, batch, false)) {
                    if (!outcome.ok()) {
                        throw new CliException(ExitCodes.FAILED, "offload for the benchmark failed: " + outcome.message());
                    }
                }
            }
            offload = seconds(start);
            try (Stream<Path> walk = Files.walk(root)) {
                files = walk.filter(Files::isRegularFile).count();
            }
            TierReader reader = new TierReader(node);
            List<String> keys = new ArrayList<>(objects);
            for (int i = 0; i < objects; i++) {
                keys.add(key(i));
            }
            start = System.nanoTime();
            reader.getPipelined(TENANT, keys, BATCH, new TierReader.BatchSink() {
                @Override
                public List<ByteBuffer> destinations(List<String> batch) {
                    return null;
                }

                @Override
                public void accept(List<TierReader.Outcome> outcomes) {
                    for (TierReader.Outcome outcome : outcomes) {
                        if (!outcome.ok()) {
                            throw new CliException(ExitCodes.FAILED, "read of " + outcome.key() + " failed: " + outcome.message());
                        }
                    }
                }
            });
            get = seconds(start);
            master.snapshot();
        }
        // The master knows what exists by loading its snapshot (and replaying the log after it); nothing walks the files.
        long start = System.nanoTime();
        double restart;
        long known;
        double delete;
        try (MasterServer master = MasterServer.start(options);
             MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(60))) {
            restart = seconds(start);
            known = master.pages().mappingCount();
            start = System.nanoTime();
            for (int from = 0; from < objects; from += 1000) {
                List<String> batch = new ArrayList<>();
                for (int i = from; i < Math.min(objects, from + 1000); i++) {
                    batch.add(key(i));
                }
                for (KeyError result : client.batchRemove(batch, Collections.nCopies(batch.size(), TENANT)).getResultsList()) {
                    if (result.getError() != io.mcctl.master.proto.v1.ErrorCode.OK) {
                        throw new CliException(ExitCodes.FAILED, "remove for the benchmark failed: " + result.getMessage());
                    }
                }
            }
            delete = seconds(start);
        }
        return new Model("bucket files (page mode)", files, offload, get, delete, restart, known);
    }

    private static long roundUp(long value, long unit) {
        return (value + unit - 1) / unit * unit;
    }

    private static double seconds(long startNanos) {
        return (System.nanoTime() - startNanos) / 1e9;
    }

    private void report(List<Model> models, long objectBytes) {
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("objects", objects);
            report.put("object_size", objectBytes);
            report.put("per_key_fsync", fsync);
            report.put("machine", MachineInfo.describe());
            report.put("models", models);
            out.println(OutputMixin.toJson(report));
        } else {
            Table table = new Table("MODEL", "FILES", "OFFLOAD obj/s", "GET obj/s", "DELETE obj/s", "KNOW WHAT EXISTS s", "KNOWN");
            for (Model m : models) {
                table.row(m.model(), m.filesCreated(), rate(m.offloadSeconds()), rate(m.getSeconds()), rate(m.deleteSeconds()),
                        String.format(Locale.ROOT, "%.2f", m.knowWhatExistsSeconds()), m.knownAfterRestart());
            }
            out.print(table.render());
        }
        out.flush();
    }

    private String rate(double seconds) {
        return String.format(Locale.ROOT, "%.0f", objects / seconds);
    }
}
