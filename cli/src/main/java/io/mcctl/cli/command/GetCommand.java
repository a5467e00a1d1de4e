package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.Progress;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl get}: read objects from the tier by direct pread. */
@Command(name = "get", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Read KEY's object to stdout (or --out FILE), or with --batch every key listed in KEYS_FILE (one per",
                "line) into --out DIR, one file per key (the key URL-encoded as the file name). One mapping call per batch of keys,",
                "then a pread of the shared bucket file and a CRC32C check: a mismatch is an error, never data."})
public final class GetCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Parameters(index = "0", arity = "0..1", paramLabel = "KEY", description = "Key to read.")
    String key;

    @Option(names = "--out", paramLabel = "PATH", description = "File to write (directory with --batch); default stdout.")
    Path out;

    @Option(names = "--batch", paramLabel = "KEYS_FILE", description = "Read every key listed in this file, one per line.")
    Path keysFile;

    @Option(names = "--batch-size", paramLabel = "N", defaultValue = "" + TierReader.KEYS_PER_LOOKUP,
            description = "Keys per mapping call (default: ${DEFAULT-VALUE}); objects are read and written " + READ_BATCH + " at a time.")
    int batchSize;

    /** Objects held in memory at once. */
    static final int READ_BATCH = 64;

    @Override
    public Integer call() throws IOException {
        List<String> keys;
        if (keysFile != null) {
            if (key != null) {
                throw new CliException(ExitCodes.USAGE, "give either KEY or --batch KEYS_FILE, not both");
            }
            if (out == null) {
                throw new CliException(ExitCodes.USAGE, "--batch needs --out DIR for the objects");
            }
            if (!Files.isRegularFile(keysFile)) {
                throw new CliException(ExitCodes.NOT_FOUND, "no such file: " + keysFile);
            }
            keys = Files.readAllLines(keysFile, StandardCharsets.UTF_8).stream().map(String::strip).filter(s -> !s.isEmpty()).toList();
            Files.createDirectories(out);
        } else {
            if (key == null) {
                throw new CliException(ExitCodes.USAGE, "get needs KEY, or --batch KEYS_FILE --out DIR");
            }
            keys = List.of(key);
        }
        if (batchSize < 1 || batchSize > 10_000) {
            throw new CliException(ExitCodes.USAGE, "invalid --batch-size " + batchSize + ": allowed is 1 to 10000");
        }
        String tenant = client.tenant();
        PrintWriter err = spec.commandLine().getErr();
        int[] worst = {ExitCodes.OK};
        int[] read = {0};
        try (MasterClient master = client.connect(spec);
             TierNode node = TierNode.connect(master, false, new ClientMetrics());
             Progress progress = new Progress("get", keys.size())) {
            new TierReader(node).getPipelined(tenant, keys, Math.min(READ_BATCH, batchSize), batchSize, new TierReader.BatchSink() {
                @Override
                public List<ByteBuffer> destinations(List<String> batch) {
                    return null;
                }

                @Override
                public void accept(List<TierReader.Outcome> outcomes) throws IOException {
                    for (TierReader.Outcome outcome : outcomes) {
                        if (!outcome.ok()) {
                            err.println("mcctl: error: " + outcome.key() + ": " + outcome.message());
                            worst[0] = Math.max(worst[0], exitCodeOf(outcome.status()));
                            continue;
                        }
                        if (keysFile != null) {
                            write(out.resolve(URLEncoder.encode(outcome.key(), StandardCharsets.UTF_8)), outcome.data());
                        } else if (out != null) {
                            write(out, outcome.data());
                        } else {
                            writeStdout(outcome.data());
                        }
                        read[0]++;
                    }
                    progress.advance(outcomes.size());
                }
            });
        }
        if (keysFile != null) {
            spec.commandLine().getOut().printf("read %d of %d keys into %s%n", read[0], keys.size(), out);
            spec.commandLine().getOut().flush();
        }
        err.flush();
        return worst[0];
    }

    static int exitCodeOf(TierReader.Status status) {
        return switch (status) {
            case OK -> ExitCodes.OK;
            case NOT_FOUND -> ExitCodes.NOT_FOUND;
            case CORRUPT -> ExitCodes.CORRUPT;
            case MOUNT_MISSING -> ExitCodes.UNAVAILABLE;
            case INVALID -> ExitCodes.USAGE;
            case NOT_READY, IO_ERROR -> ExitCodes.FAILED;
        };
    }

    private static void write(Path file, ByteBuffer data) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            while (data.hasRemaining()) {
                channel.write(data);
            }
        }
    }

    private static void writeStdout(ByteBuffer data) throws IOException {
        // Raw bytes to file descriptor 1: objects are binary, and the CLI's writers are for text.
        OutputStream stdout = new FileOutputStream(FileDescriptor.out);
        Channels.newChannel(stdout).write(data);
        stdout.flush();
    }
}
