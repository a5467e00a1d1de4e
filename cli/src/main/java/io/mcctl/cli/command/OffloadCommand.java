package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Progress;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.storage.layout.SpaceBacking;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl offload}: write objects into the tier. */
@Command(name = "offload", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Write a file (or stdin with '-') into the tier under KEY, or with --batch every regular file of a",
                "directory under its file name. Pages come from the master; the bytes go straight into the shared",
                "bucket file with pwrite; a failed write frees its pages at once.",
                "A batch stores what it can: each entry that is not a file (a directory, a FIFO, a dangling symlink) is skipped and each "
                        + "file that cannot be an object (empty, larger than a bucket) is refused, one line each, and the run ends with "
                        + "'offloaded N of M (K refused)'.",
                "Exit 0 when every entry was stored; 1 when any was refused or failed; 2 on bad input (a single FILE that is a "
                        + "directory, not a regular file, empty or larger than a bucket); 3 when FILE does not exist (or is a dangling symlink) or DIR is empty; "
                        + "4 when the master was lost part way (the report says how many keys were stored and which are in doubt)."})
public final class OffloadCommand implements Callable<Integer>, io.mcctl.cli.SettingsOptions.UsesSettings {

    @Override
    public java.util.List<io.mcctl.storage.config.Setting<?>> settings() {
        return io.mcctl.cli.ClientOptions.IO_SETTINGS;
    }

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Mixin
    OutputMixin output;

    @Parameters(index = "0", arity = "0..1", paramLabel = "KEY", description = "Key to write under.")
    String key;

    @Parameters(index = "1", arity = "0..1", paramLabel = "FILE", description = "File to write, or '-' for stdin.")
    String file;

    @Option(names = "--batch", paramLabel = "DIR", description = "Offload every regular file in DIR, each under its file name.")
    Path batchDir;

    @Option(names = "--prefix", paramLabel = "P", defaultValue = "", description = "With --batch: put P before each key.")
    String prefix;

    @Option(names = "--batch-size", paramLabel = "N", defaultValue = "64", description = "Keys per master call (default: ${DEFAULT-VALUE}).")
    int batchSize;

    @Option(names = "--overwrite", description = "Replace keys that already exist (their old pages are freed).")
    boolean overwrite;

    @Option(names = "--pin", description = "Soft-pin the objects: when the tier is full they are evicted only when nothing unpinned is left.")
    boolean pin;

    /**
     * One entry to offload: its key and file (null for stdin), or why it cannot be offloaded; {@code skipped} when it is
     * not a file at all (a directory, a FIFO, a dangling symlink), refused otherwise.
     */
    private record Entry(String name, String key, Path file, long size, String refusal, boolean skipped) {
        Entry refused(String reason) {
            return new Entry(name, key, file, size, reason, false);
        }

        Entry skipped(String reason) {
            return new Entry(name, key, file, size, reason, true);
        }

        boolean ok() {
            return refusal == null;
        }
    }

    @Override
    public Integer call() throws IOException {
        if (batchSize < 1 || batchSize > 10_000) {
            throw new CliException(ExitCodes.USAGE, "invalid --batch-size " + batchSize + ": allowed is 1 to 10000");
        }
        List<Entry> entries = new ArrayList<>();
        if (batchDir != null) {
            if (key != null) {
                throw new CliException(ExitCodes.USAGE, "give either KEY FILE or --batch DIR, not both");
            }
            if (!Files.isDirectory(batchDir)) {
                throw new CliException(ExitCodes.USAGE, "invalid --batch '" + batchDir + "': not a directory");
            }
            try (Stream<Path> listing = Files.list(batchDir)) {
                listing.sorted().forEach(path -> entries.add(examine(path.getFileName().toString(), prefix + path.getFileName(), path)));
            }
            if (entries.isEmpty()) {
                // Nothing was asked for that exists: a script that offloads a spool directory can tell this from a success.
                throw new CliException(ExitCodes.NOT_FOUND, "nothing to offload: " + batchDir + " is empty");
            }
        } else {
            if (key == null || file == null) {
                throw new CliException(ExitCodes.USAGE, "offload needs KEY and FILE (or '-' for stdin), or --batch DIR");
            }
            Entry entry = "-".equals(file) ? new Entry("stdin", key, null, -1, keyProblem(key), false) : examine(file, key, Path.of(file));
            if (!entry.ok()) {
                throw new CliException(entry.refusal().startsWith("no such file") || entry.refusal().startsWith("dangling") ? ExitCodes.NOT_FOUND : ExitCodes.USAGE,
                        "cannot offload " + file + ": " + entry.refusal());
            }
            entries.add(entry);
        }
        String tenant = client.tenant();
        Batch batch = new Batch(entries);
        if (entries.stream().anyMatch(Entry::ok)) {
            try (MasterClient master = client.connect(spec);
                 TierNode node = io.mcctl.cli.ClientOptions.node(master, true, io.mcctl.cli.ClientOptions.ioWanted(spec))) {
                long bucketSize = node.layout().getBucketSize();
                for (int i = 0; i < entries.size(); i++) {
                    Entry entry = entries.get(i);
                    if (entry.ok() && entry.size() > bucketSize) {
                        entries.set(i, entry.refused(tooLarge(entry.size(), bucketSize)));
                        if (batchDir == null) {
                            throw new CliException(ExitCodes.USAGE, "cannot offload " + entry.name() + ": " + entries.get(i).refusal());
                        }
                    }
                }
                offload(node, tenant, entries, bucketSize, batch);
            }
        }
        return report(batch);
    }

    /** Why {@code path} cannot be offloaded under {@code key}, or an entry ready to go (its size not yet checked against a bucket). */
    private static Entry examine(String name, String key, Path path) {
        Entry entry = new Entry(name, key, path, 0, null, false);
        try {
            if (Files.isSymbolicLink(path) && !Files.exists(path)) {
                return entry.skipped("dangling symlink to " + Files.readSymbolicLink(path));
            }
            if (Files.isDirectory(path)) {
                return new Entry(name + "/", key, path, 0, "is a directory", true);
            }
            if (!Files.exists(path)) {
                return entry.skipped("no such file");
            }
            if (!Files.isRegularFile(path)) {
                return entry.skipped("not a regular file");
            }
            long size = Files.size(path);
            if (size == 0) {
                return entry.refused("empty file (objects are at least 1 byte)");
            }
            String problem = keyProblem(key);
            return problem != null ? entry.refused(problem) : new Entry(name, key, path, size, null, false);
        } catch (IOException e) {
            return entry.refused("cannot be read: " + e.getMessage());
        }
    }

    private static String keyProblem(String key) {
        String problem = KeyRules.checkKey(key);
        return problem == null ? null : "invalid key: " + problem;
    }

    private static String tooLarge(long size, long bucketSize) {
        return size + " bytes (" + SpaceBacking.bytes(size) + ") is larger than a bucket of " + bucketSize + " bytes (" + SpaceBacking.bytes(bucketSize)
                + "): an object must fit in one bucket";
    }

    /** What a run did: the entries, the master's answer for each key sent, and where a lost master cut it short. */
    private static final class Batch {
        final List<Entry> entries;
        final List<TierWriter.Outcome> outcomes = new ArrayList<>();
        /** The master call that failed as a whole and stopped the run, or null. */
        MasterException lost;
        /** Keys whose notify went out when the master was lost: stored or not, nobody knows. */
        List<String> inDoubt = List.of();
        /** Keys of the failed call that were not stored, and keys never sent. */
        int notStored;

        Batch(List<Entry> entries) {
            this.entries = entries;
        }

        long refused() {
            return entries.stream().filter(e -> !e.ok()).count();
        }
    }

    /** Remembers which keys a notify went out for, so that a master lost under it leaves exactly those in doubt. */
    private static final class NotifyWatch implements TierWriter.Listener {
        private final TierWriter.Listener next;
        List<String> notifying;

        NotifyWatch(TierWriter.Listener next) {
            this.next = next;
        }

        @Override
        public void allocated(List<String> keys) {
            next.allocated(keys);
        }

        @Override
        public void beforeChunk(String key, long done) {
            next.beforeChunk(key, done);
        }

        @Override
        public void beforeNotify(List<String> keys) {
            notifying = List.copyOf(keys);
            next.beforeNotify(keys);
        }
    }

    private void offload(TierNode node, String tenant, List<Entry> entries, long bucketSize, Batch batch) throws IOException {
        List<Entry> ready = entries.stream().filter(Entry::ok).toList();
        NotifyWatch watch = new NotifyWatch(OffloadObserver.load(spec.commandLine().getErr()));
        TierWriter writer = new TierWriter(node, watch);
        try (Progress progress = new Progress("offload", ready.size())) {
            for (int from = 0; from < ready.size(); from += batchSize) {
                int to = Math.min(ready.size(), from + batchSize);
                List<TierWriter.ObjectSource> objects = new ArrayList<>(to - from);
                for (int i = from; i < to; i++) {
                    Entry entry = ready.get(i);
                    if (entry.file() == null) {
                        objects.add(new TierWriter.ObjectSource(entry.key(), List.of(ByteBuffer.wrap(readStdin(bucketSize)))));
                    } else {
                        // read chunk by chunk as it is written: memory stays flat whatever the file's size
                        objects.add(TierWriter.ObjectSource.ofFile(entry.key(), entry.file(), entry.size()));
                    }
                }
                watch.notifying = null;
                try {
                    batch.outcomes.addAll(writer.offload(tenant, objects, overwrite, pin));
                } catch (MasterException e) {
                    batch.lost = e;
                    if (watch.notifying != null && e.outcomeUnknown()) {
                        batch.inDoubt = watch.notifying;
                    }
                    batch.notStored = ready.size() - from - batch.inDoubt.size();
                    return;
                }
                progress.advance(to - from);
            }
        }
    }

    /** Stdin whole, refused as soon as it holds more than a bucket (its length is not known before it ends). */
    private static byte[] readStdin(long bucketSize) throws IOException {
        long limit = bucketSize + 1;
        byte[] bytes = limit >= Integer.MAX_VALUE - 8 ? System.in.readAllBytes() : System.in.readNBytes((int) limit);
        if (bytes.length > bucketSize) {
            throw new CliException(ExitCodes.USAGE, "cannot offload stdin: it holds more than a bucket of " + bucketSize + " bytes ("
                    + SpaceBacking.bytes(bucketSize) + "): an object must fit in one bucket");
        }
        if (bytes.length == 0) {
            throw new CliException(ExitCodes.USAGE, "cannot offload stdin: empty file (objects are at least 1 byte)");
        }
        return bytes;
    }

    private int report(Batch batch) {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        List<TierWriter.Outcome> outcomes = batch.outcomes;
        long stored = outcomes.stream().filter(TierWriter.Outcome::ok).count();
        long failed = outcomes.size() - stored;
        long bytes = outcomes.stream().filter(TierWriter.Outcome::ok).mapToLong(o -> o.descriptor().getObjectSize()).sum();
        long refused = batch.refused();
        if (output.json()) {
            List<Map<String, Object>> rows = new ArrayList<>();
            for (TierWriter.Outcome o : outcomes) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("key", o.key());
                row.put("status", o.code().name());
                if (!o.ok()) {
                    row.put("message", o.message());
                }
                if (o.descriptor() != null && o.ok()) {
                    row.put("file", o.descriptor().getFilePath());
                    row.put("offset", o.descriptor().getOffset());
                    row.put("size", o.descriptor().getObjectSize());
                    row.put("crc32c", String.format("%08x", o.descriptor().getCrc32C()));
                }
                rows.add(row);
            }
            for (String key : batch.inDoubt) {
                rows.add(new LinkedHashMap<>(Map.of("key", key, "status", "UNKNOWN", "message", "the outcome is unknown: check with mcctl stat " + key)));
            }
            List<Map<String, Object>> refusals = new ArrayList<>();
            for (Entry entry : batch.entries) {
                if (!entry.ok()) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("entry", entry.name());
                    row.put("reason", entry.refusal());
                    refusals.add(row);
                }
            }
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("keys", rows);
            report.put("refused", refusals);
            report.put("entries", batch.entries.size());
            report.put("offloaded", stored);
            report.put("failed", failed);
            report.put("in_doubt", batch.inDoubt.size());
            report.put("not_sent", batch.lost == null ? 0 : batch.notStored);
            report.put("bytes", bytes);
            if (batch.lost != null) {
                report.put("master_lost", firstLine(batch.lost));
            }
            out.println(io.mcctl.cli.OutputMixin.toJson(report));
        } else {
            for (Entry entry : batch.entries) {
                if (!entry.ok()) {
                    err.println("mcctl: " + (entry.skipped() ? "skipped " : "refused ") + entry.name() + ": " + entry.refusal());
                }
            }
            for (TierWriter.Outcome o : outcomes) {
                if (!o.ok()) {
                    err.println("mcctl: error: " + o.key() + ": " + o.code().name() + ": " + o.message());
                } else if (batch.entries.size() == 1) {
                    out.printf("offloaded %s: %d bytes at %s offset %d (crc32c %08x)%n", o.key(), o.descriptor().getObjectSize(),
                            o.descriptor().getFilePath(), o.descriptor().getOffset(), o.descriptor().getCrc32C());
                }
            }
            if (batch.lost != null) {
                reportLostMaster(batch, stored, err);
            }
            if (batch.entries.size() > 1 || failed > 0 || batch.lost != null) {
                out.println("offloaded " + stored + " of " + batch.entries.size() + " (" + refused + " refused"
                        + (failed > 0 ? ", " + failed + " failed" : "")
                        + (batch.lost != null ? ", " + batch.inDoubt.size() + " in doubt, " + batch.notStored + " not stored" : "")
                        + "): " + bytes + " bytes");
            }
        }
        out.flush();
        err.flush();
        if (batch.lost != null) {
            return ExitCodes.of(batch.lost);
        }
        return failed == 0 && refused == 0 ? ExitCodes.OK : ExitCodes.FAILED;
    }

    /** A master lost mid-run: what was stored (acknowledged), which keys are in doubt, and what was not sent. */
    private static void reportLostMaster(Batch batch, long stored, PrintWriter err) {
        err.println("mcctl: error: the master was lost: " + firstLine(batch.lost));
        err.println("mcctl: error: " + stored + " key(s) were stored before that (each acknowledged by the master)"
                + (batch.notStored > 0 ? "; " + batch.notStored + " were not stored: offload them again" : ""));
        if (!batch.inDoubt.isEmpty()) {
            List<String> doubt = batch.inDoubt;
            err.println("mcctl: error: " + (doubt.size() == 1 ? doubt.get(0) : doubt.size() + " keys, " + doubt.get(0) + " to " + doubt.get(doubt.size() - 1))
                    + ": the outcome is unknown: check with mcctl stat " + doubt.get(0));
        }
    }

    /** The first line of the innermost master error: what the master or the connection said, without the writer's wrapping. */
    private static String firstLine(MasterException lost) {
        MasterException innermost = lost;
        while (innermost.getCause() instanceof MasterException cause) {
            innermost = cause;
        }
        String message = innermost.getMessage() == null ? innermost.toString() : innermost.getMessage();
        return message.lines().findFirst().orElse(message);
    }
}
