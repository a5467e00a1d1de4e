package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Progress;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.service.KeyRules;
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
                "bucket file with pwrite; a failed write frees its pages at once."})
public final class OffloadCommand implements Callable<Integer> {

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

    @Override
    public Integer call() throws IOException {
        List<Path> files = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        if (batchDir != null) {
            if (key != null) {
                throw new CliException(ExitCodes.USAGE, "give either KEY FILE or --batch DIR, not both");
            }
            if (!Files.isDirectory(batchDir)) {
                throw new CliException(ExitCodes.USAGE, "invalid --batch '" + batchDir + "': not a directory");
            }
            try (Stream<Path> listing = Files.list(batchDir)) {
                listing.filter(Files::isRegularFile).sorted().forEach(path -> {
                    files.add(path);
                    keys.add(prefix + path.getFileName());
                });
            }
        } else {
            if (key == null || file == null) {
                throw new CliException(ExitCodes.USAGE, "offload needs KEY and FILE (or '-' for stdin), or --batch DIR");
            }
            keys.add(key);
            files.add("-".equals(file) ? null : Path.of(file));
        }
        if (batchSize < 1 || batchSize > 10_000) {
            throw new CliException(ExitCodes.USAGE, "invalid --batch-size " + batchSize + ": allowed is 1 to 10000");
        }
        for (String k : keys) {
            String problem = KeyRules.checkKey(k);
            if (problem != null) {
                throw new CliException(ExitCodes.USAGE, "invalid key: " + problem);
            }
        }
        for (Path path : files) {
            if (path != null && !Files.isRegularFile(path)) {
                throw new CliException(ExitCodes.NOT_FOUND, "no such file: " + path);
            }
        }
        String tenant = client.tenant();
        List<TierWriter.Outcome> outcomes = new ArrayList<>();
        long bytes = 0;
        try (MasterClient master = client.connect(spec);
             TierNode node = TierNode.connect(master, true, new ClientMetrics());
             Progress progress = new Progress("offload", keys.size())) {
            TierWriter writer = new TierWriter(node, TestHooks.fromEnvironment(spec.commandLine().getErr()));
            for (int from = 0; from < keys.size(); from += batchSize) {
                int to = Math.min(keys.size(), from + batchSize);
                List<TierWriter.ObjectSource> objects = new ArrayList<>(to - from);
                for (int i = from; i < to; i++) {
                    TierWriter.ObjectSource object;
                    if (files.get(i) == null) {
                        // stdin's length is not known before it ends, and the allocation needs it: read it whole
                        object = new TierWriter.ObjectSource(keys.get(i), List.of(ByteBuffer.wrap(System.in.readAllBytes())));
                    } else {
                        // read chunk by chunk as it is written: memory stays flat whatever the file's size
                        object = TierWriter.ObjectSource.ofFile(keys.get(i), files.get(i), Files.size(files.get(i)));
                    }
                    bytes += object.size();
                    if (object.size() == 0) {
                        throw new CliException(ExitCodes.USAGE, "invalid object for key '" + keys.get(i) + "': it is empty; objects are at least 1 byte");
                    }
                    objects.add(object);
                }
                outcomes.addAll(writer.offload(tenant, objects, overwrite, pin));
                progress.advance(to - from);
            }
        }
        return report(outcomes, bytes);
    }

    private int report(List<TierWriter.Outcome> outcomes, long bytes) {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        long failed = outcomes.stream().filter(o -> !o.ok()).count();
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
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("keys", rows);
            report.put("offloaded", outcomes.size() - failed);
            report.put("failed", failed);
            report.put("bytes", bytes);
            out.println(io.mcctl.cli.OutputMixin.toJson(report));
        } else {
            for (TierWriter.Outcome o : outcomes) {
                if (!o.ok()) {
                    err.println("mcctl: error: " + o.key() + ": " + o.code().name() + ": " + o.message());
                } else if (outcomes.size() == 1) {
                    out.printf("offloaded %s: %d bytes at %s offset %d (crc32c %08x)%n", o.key(), o.descriptor().getObjectSize(),
                            o.descriptor().getFilePath(), o.descriptor().getOffset(), o.descriptor().getCrc32C());
                }
            }
            if (outcomes.size() > 1 || failed > 0) {
                out.printf("offloaded %d of %d keys (%d bytes read), %d failed%n", outcomes.size() - failed, outcomes.size(), bytes, failed);
            }
        }
        out.flush();
        err.flush();
        return failed == 0 ? ExitCodes.OK : ExitCodes.FAILED;
    }
}
