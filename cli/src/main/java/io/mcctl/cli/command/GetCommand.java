package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.Progress;
import io.mcctl.cli.Table;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.storage.io.BucketFileMissingException;
import io.mcctl.storage.io.ChecksumMismatchException;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl get}: read objects from the tier by direct pread. */
@Command(name = "get", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Read KEY's object to stdout (or --out FILE), or with --batch every key listed in KEYS_FILE into --out DIR,",
                "one file per key (the key URL-encoded as the file name). One mapping call per batch of keys, then a pread of the",
                "shared bucket file and a CRC32C check: a mismatch is an error, never data.",
                "KEYS_FILE holds one key per line, exactly as written: spaces are part of the key, and an empty line is refused.",
                "With -0 the keys are separated by NUL bytes instead (for keys that contain newlines), as find -print0 writes them.",
                "One KEY is streamed in chunks of " + (GetCommand.CHUNK_BYTES >> 20) + " MiB, so memory stays small whatever its size. "
                        + "With --out FILE the bytes go to a temporary file beside FILE, renamed to FILE once their CRC32C matched: "
                        + "FILE is never left holding bytes that failed their checksum. On stdout the bytes are written as they are "
                        + "read; a mismatch found at the end is reported (exit 5): discard what was written."})
public final class GetCommand implements Callable<Integer>, io.mcctl.cli.SettingsOptions.UsesSettings {

    @Override
    public java.util.List<io.mcctl.storage.config.Setting<?>> settings() {
        return io.mcctl.cli.ClientOptions.IO_SETTINGS;
    }

    /** Bytes read and written at a time when one key is streamed. */
    static final int CHUNK_BYTES = 1 << 20;

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Parameters(index = "0", arity = "0..1", paramLabel = "KEY", description = "Key to read.")
    String key;

    @Option(names = "--out", paramLabel = "PATH",
            description = "File to write (directory with --batch, created if needed); default stdout. "
                    + "A missing parent directory of FILE is bad input (exit 2).")
    Path out;

    @Option(names = "--batch", paramLabel = "KEYS_FILE", description = "Read every key listed in this file, one per line.")
    Path keysFile;

    @Option(names = {"-0", "--null"}, description = "With --batch: keys in KEYS_FILE end with a NUL byte, not a newline.")
    boolean nullSeparated;

    @Option(names = "--batch-size", paramLabel = "N", defaultValue = "" + TierReader.KEYS_PER_LOOKUP,
            description = "Keys per mapping call (default: ${DEFAULT-VALUE}); objects are read and written " + READ_BATCH + " at a time.")
    int batchSize;

    @Option(names = "--read-threads", paramLabel = "N",
            description = "With --batch: threads that read a batch of objects at once (default: the CPUs this process may use,"
                    + " at most 4); a batch of less than 256KiB is read on one thread.")
    int readThreads = TierReader.DEFAULT_READ_THREADS;

    /** Objects held in memory at once. */
    static final int READ_BATCH = 64;

    @Override
    public Integer call() throws IOException {
        if (nullSeparated && keysFile == null) {
            throw new CliException(ExitCodes.USAGE, "-0/--null goes with --batch KEYS_FILE");
        }
        if (readThreads < 1 || readThreads > TierReader.MAX_READ_THREADS) {
            throw new CliException(ExitCodes.USAGE, "invalid --read-threads " + readThreads + ": allowed is 1 to " + TierReader.MAX_READ_THREADS);
        }
        if (keysFile == null) {
            if (key == null) {
                throw new CliException(ExitCodes.USAGE, "get needs KEY, or --batch KEYS_FILE --out DIR");
            }
            return getOne();
        }
        if (key != null) {
            throw new CliException(ExitCodes.USAGE, "give either KEY or --batch KEYS_FILE, not both");
        }
        if (out == null) {
            throw new CliException(ExitCodes.USAGE, "--batch needs --out DIR for the objects");
        }
        if (!Files.isRegularFile(keysFile)) {
            throw new CliException(ExitCodes.NOT_FOUND, "no such file: " + keysFile);
        }
        if (batchSize < 1 || batchSize > 10_000) {
            throw new CliException(ExitCodes.USAGE, "invalid --batch-size " + batchSize + ": allowed is 1 to 10000");
        }
        List<String> keys = readKeys(keysFile, nullSeparated);
        Files.createDirectories(out);
        return getBatch(keys);
    }

    /**
     * The keys of {@code file}, one per line (or per NUL-terminated record), exactly as written: a key may hold
     * spaces; an empty line, or bytes that are not UTF-8, are refused naming the line. The last key needs no terminator.
     */
    static List<String> readKeys(Path file, boolean nullSeparated) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        byte separator = nullSeparated ? (byte) 0 : (byte) '\n';
        String unit = nullSeparated ? "NUL-separated key" : "line";
        List<String> keys = new ArrayList<>();
        int start = 0;
        while (start < bytes.length) {
            int end = start;
            while (end < bytes.length && bytes[end] != separator) {
                end++;
            }
            int number = keys.size() + 1;
            if (end == start) {
                throw new CliException(ExitCodes.USAGE, file + ": " + unit + " " + number + " is empty: give one key per "
                        + (nullSeparated ? "NUL-terminated record" : "line") + ", with no empty ones");
            }
            try {
                keys.add(StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes, start, end - start)).toString());
            } catch (CharacterCodingException e) {
                throw new CliException(ExitCodes.USAGE, file + ": " + unit + " " + number + " is not UTF-8 text");
            }
            start = end + 1;
        }
        return keys;
    }

    /** One key, streamed to --out FILE (through a temporary file beside it) or to stdout. */
    private int getOne() throws IOException {
        Path target = null;
        if (out != null) {
            target = out.toAbsolutePath();
            Path dir = target.getParent();
            if (dir != null && !Files.isDirectory(dir)) {
                throw new CliException(ExitCodes.USAGE, "invalid --out " + out + ": directory " + dir + " does not exist");
            }
            if (Files.isDirectory(target)) {
                throw new CliException(ExitCodes.USAGE, "invalid --out " + out + ": it is a directory (a directory is for --batch)");
            }
            if (Files.exists(target)) {
                target = target.toRealPath(); // through a symlink, the file it names is replaced, not the link
            }
        }
        String tenant = client.tenant();
        try (MasterClient master = client.connect(spec);
             TierNode node = ClientOptions.node(master, false, io.mcctl.cli.ClientOptions.ioWanted(spec))) {
            BatchGetDistributedPageMappingResponse response = master.batchGetMapping(List.of(key), List.of(tenant));
            MappingResult result = response.getResults(0);
            if (result.getStatus().getError() != ErrorCode.OK) {
                throw new CliException(exitCodeOf(result.getStatus().getError()),
                        Table.escape(Quoted.shortened(key) + ": " + result.getStatus().getMessage())); // the master's message names the key too
            }
            DistributedDiskDescriptor place = result.getDistributedDisk();
            // A copy in a node's DRAM (a promotion's) is read from that node when it answers; else the bucket file.
            ByteBuffer inDram = result.getMemoryCount() == 0 || node.dram() == null ? null : node.dram().read(tenant, key, result.getMemoryList(), null);
            Copy copy;
            if (inDram != null) {
                copy = sink -> {
                    while (inDram.hasRemaining()) {
                        sink.write(inDram);
                    }
                };
            } else {
                ByteBuffer chunk = ByteBuffer.allocateDirect((int) Math.min(CHUNK_BYTES, Math.max(1, place.getObjectSize())));
                copy = sink -> node.ioFor(place.getOffset(), place.getObjectSize()).copyTo(Path.of(place.getFilePath()), place.getOffset(),
                        place.getObjectSize(), place.getCrc32C(), sink, chunk);
            }
            if (target == null) {
                streamToStdout(place, copy);
            } else if (Files.exists(target) && !Files.isRegularFile(target)) {
                streamToDevice(place, copy, target); // a FIFO or a device (/dev/stdout) cannot be renamed onto
            } else {
                streamToFile(copy, target);
            }
        }
        return ExitCodes.OK;
    }

    /** The object's bytes, copied to a sink: from the bucket file (checked as they stream) or from a node's DRAM (checked). */
    @FunctionalInterface
    private interface Copy {
        void to(FileChannel sink) throws IOException;
    }

    private void streamToStdout(DistributedDiskDescriptor place, Copy copy) throws IOException {
        // Raw bytes to file descriptor 1: objects are binary, and the CLI's writers are for text.
        streamAsRead(place, copy, new FileOutputStream(FileDescriptor.out).getChannel(), "stdout");
    }

    private void streamToDevice(DistributedDiskDescriptor place, Copy copy, Path device) throws IOException {
        try (FileChannel channel = FileChannel.open(device, StandardOpenOption.WRITE)) {
            streamAsRead(place, copy, channel, device.toString());
        }
    }

    /** Streams to a sink that cannot be replaced afterwards: a mismatch can only say that what was written is bad. */
    private void streamAsRead(DistributedDiskDescriptor place, Copy copy, FileChannel sink, String name) throws IOException {
        try {
            copy.to(sink);
        } catch (ChecksumMismatchException e) {
            throw new CliException(ExitCodes.CORRUPT, Table.escape(Quoted.shortened(key)) + ": the " + place.getObjectSize()
                    + " bytes written to " + name + " failed their checksum, discard them: " + e.getMessage(), e);
        } catch (BucketFileMissingException e) {
            throw new CliException(ExitCodes.UNAVAILABLE, Table.escape(Quoted.shortened(key)) + ": " + e.getMessage(), e);
        }
    }

    private void streamToFile(Copy copy, Path target) throws IOException {
        Path partial = target.resolveSibling("." + target.getFileName() + "." + Long.toHexString(ThreadLocalRandom.current().nextLong())
                + ".mcctl-partial");
        boolean renamed = false;
        try {
            try (FileChannel file = FileChannel.open(partial, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                copy.to(file);
            } catch (ChecksumMismatchException e) {
                throw new CliException(ExitCodes.CORRUPT, Table.escape(Quoted.shortened(key)) + ": " + e.getMessage() + "; " + out + " was not written", e);
            } catch (BucketFileMissingException e) {
                throw new CliException(ExitCodes.UNAVAILABLE, Table.escape(Quoted.shortened(key)) + ": " + e.getMessage(), e);
            }
            Files.move(partial, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            renamed = true;
        } finally {
            if (!renamed) {
                Files.deleteIfExists(partial);
            }
        }
    }

    private int getBatch(List<String> keys) throws IOException {
        String tenant = client.tenant();
        PrintWriter err = spec.commandLine().getErr();
        int[] worst = {ExitCodes.OK};
        int[] read = {0};
        try (MasterClient master = client.connect(spec);
             TierNode node = ClientOptions.node(master, false, io.mcctl.cli.ClientOptions.ioWanted(spec));
             Progress progress = new Progress("get", keys.size())) {
            new TierReader(node, readThreads).getPipelined(tenant, keys, Math.min(READ_BATCH, batchSize), batchSize, new TierReader.BatchSink() {
                @Override
                public List<ByteBuffer> destinations(List<String> batch) {
                    return null;
                }

                @Override
                public void accept(List<TierReader.Outcome> outcomes) throws IOException {
                    for (TierReader.Outcome outcome : outcomes) {
                        if (!outcome.ok()) {
                            err.println("mcctl: error: " + Table.escape(outcome.key() + ": " + outcome.message()));
                            worst[0] = Math.max(worst[0], exitCodeOf(outcome.status()));
                            continue;
                        }
                        write(out.resolve(URLEncoder.encode(outcome.key(), StandardCharsets.UTF_8)), outcome.data());
                        read[0]++;
                    }
                    progress.advance(outcomes.size());
                }
            });
        }
        spec.commandLine().getOut().printf("read %d of %d keys into %s%n", read[0], keys.size(), out);
        spec.commandLine().getOut().flush();
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

    /** The exit code of a key the master's mapping lookup did not find or refused, as {@link TierReader} counts them. */
    static int exitCodeOf(ErrorCode code) {
        return switch (code) {
            case OBJECT_NOT_FOUND -> ExitCodes.NOT_FOUND;
            case INVALID_PARAMS -> ExitCodes.USAGE;
            default -> ExitCodes.FAILED;
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
}
