package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code mcctl get} of one key as a separate process: streamed in bounded memory, never leaving bytes that failed their CRC. */
@Timeout(180)
@Tag("process")
class GetStreamingProcessTest {

    private static final String[] LAYOUT = {"--bucket-count", "2", "--bucket-size", "256MiB", "--page-size", "64KiB"};

    @TempDir
    Path dir;

    private McctlProcess.Master startMaster(Path root) throws Exception {
        String[] args = new String[LAYOUT.length + 2];
        args[0] = "--root";
        args[1] = root.toString();
        System.arraycopy(LAYOUT, 0, args, 2, LAYOUT.length);
        return McctlProcess.Master.start(dir, Map.of(), args);
    }

    /** Writes {@code content} under {@code key} from this JVM, whose heap is not the one under test. */
    private static DistributedDiskDescriptor offload(String address, String key, byte[] content) throws IOException {
        try (MasterClient client = new MasterClient(address);
             TierNode node = TierNode.connect(client, true, new ClientMetrics())) {
            TierWriter.Outcome outcome = new TierWriter(node).offload("default",
                    List.of(new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(content)))), false).get(0);
            assertTrue(outcome.ok(), outcome.message());
            return outcome.descriptor();
        }
    }

    private static byte[] randomBytes(int size, long seed) {
        byte[] bytes = new byte[size];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    /** The peak resident set of a running process, from /proc/PID/status. */
    private static long peakRssBytes(Process process) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(process.pid()), "status"))) {
            if (line.startsWith("VmHWM:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new AssertionError("no VmHWM in /proc/" + process.pid() + "/status");
    }

    @Test
    void a_get_to_stdout_of_an_object_far_larger_than_its_chunks_keeps_memory_flat() throws Exception {
        int size = 200 << 20;
        byte[] content = randomBytes(size, 7);
        CRC32C expected = new CRC32C();
        expected.update(content);
        try (McctlProcess.Master master = startMaster(dir.resolve("root"))) {
            offload(master.address(), "big", content);
            content = null; // only its CRC is needed from here

            Path err = dir.resolve("get.err");
            Process get = McctlProcess.builder(dir, Map.of("MCCTL_MASTER", master.address()), "get", "big")
                    .redirectError(err.toFile()).start();
            CRC32C received = new CRC32C();
            long total = 0;
            long peak;
            byte[] buffer = new byte[1 << 16];
            try (InputStream stdout = get.getInputStream()) {
                // Read all but the last 8 MiB: the process cannot finish (or exit) until they are read, and by then it
                // has read nearly the whole object, so its peak memory so far is the peak of the whole read.
                while (total < size - (8 << 20)) {
                    int n = stdout.read(buffer, 0, (int) Math.min(buffer.length, size - (8 << 20) - total));
                    assertTrue(n > 0, "stdout ended after " + total + " bytes");
                    received.update(buffer, 0, n);
                    total += n;
                }
                peak = peakRssBytes(get);
                for (int n; (n = stdout.read(buffer)) > 0; ) {
                    received.update(buffer, 0, n);
                    total += n;
                }
            }
            assertTrue(get.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, get.exitValue(), Files.readString(err));
            assertEquals(size, total);
            assertEquals(expected.getValue(), received.getValue(), "the bytes on stdout are the object's");
            assertTrue(peak < 150L << 20, "peak RSS " + (peak >> 20) + " MiB while streaming a 200 MiB object");
        }
    }

    @Test
    void a_checksum_mismatch_leaves_the_out_file_as_it_was_and_no_partial_file() throws Exception {
        Path root = dir.resolve("root");
        byte[] content = randomBytes(3 << 20, 3);
        try (McctlProcess.Master master = startMaster(root)) {
            DistributedDiskDescriptor place = offload(master.address(), "k", content);
            try (RandomAccessFile bucket = new RandomAccessFile(place.getFilePath(), "rw")) {
                bucket.seek(place.getOffset() + (2 << 20) + 5);
                bucket.write(content[(2 << 20) + 5] ^ 0x40);
            }
            Path outDir = Files.createDirectories(dir.resolve("out"));
            Path target = outDir.resolve("copy.bin");
            Files.writeString(target, "previous contents");
            Map<String, String> env = Map.of("MCCTL_MASTER", master.address());

            McctlProcess.Done toFile = McctlProcess.run(dir, env, "get", "k", "--out", target.toString());
            assertEquals(ExitCodes.CORRUPT, toFile.exitCode(), toFile.err());
            assertEquals(1, toFile.err().lines().count(), toFile.err());
            assertTrue(toFile.err().contains("fails its checksum") && toFile.err().contains("was not written"), toFile.err());
            assertEquals("previous contents", Files.readString(target), "the file is not replaced by bytes that failed their CRC");
            try (var files = Files.list(outDir)) {
                assertEquals(List.of(target), files.toList(), "no temporary file is left beside it");
            }

            Path stdout = dir.resolve("stdout.bin");
            Path stderr = dir.resolve("stderr.txt");
            Process toStdout = McctlProcess.builder(dir, env, "get", "k").redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
            assertTrue(toStdout.waitFor(60, TimeUnit.SECONDS));
            String err = Files.readString(stderr);
            assertEquals(ExitCodes.CORRUPT, toStdout.exitValue(), err);
            assertTrue(err.contains("the " + content.length + " bytes written to stdout failed their checksum, discard them"), err);
        }
    }

    @Test
    void a_get_to_a_file_writes_it_whole_and_replaces_an_older_one() throws Exception {
        byte[] content = randomBytes(5 << 20, 4);
        try (McctlProcess.Master master = startMaster(dir.resolve("root"))) {
            offload(master.address(), "k", content);
            Path target = dir.resolve("copy.bin");
            Files.writeString(target, "old");
            McctlProcess.Done get = McctlProcess.run(dir, Map.of("MCCTL_MASTER", master.address()), "get", "k", "--out", target.toString());
            assertEquals(0, get.exitCode(), get.err());
            assertArrayEquals(content, Files.readAllBytes(target));
        }
    }

    @Test
    void a_get_to_a_fifo_writes_into_it_and_leaves_it_a_fifo() throws Exception {
        byte[] content = randomBytes(3 << 20, 5);
        Path fifo = dir.resolve("pipe");
        assertEquals(0, new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor());
        try (McctlProcess.Master master = startMaster(dir.resolve("root"))) {
            offload(master.address(), "k", content);
            Process get = McctlProcess.builder(dir, Map.of("MCCTL_MASTER", master.address()), "get", "k", "--out", fifo.toString())
                    .redirectError(dir.resolve("get.err").toFile()).start();
            java.util.concurrent.CompletableFuture<byte[]> read = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return Files.readAllBytes(fifo);
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            assertTrue(get.waitFor(60, TimeUnit.SECONDS), "get did not finish");
            assertEquals(0, get.exitValue(), Files.readString(dir.resolve("get.err")));
            assertArrayEquals(content, read.get(60, TimeUnit.SECONDS));
            assertTrue(Files.isSameFile(fifo, fifo) && !Files.isRegularFile(fifo), "the FIFO was not replaced by a file");
        }
    }

    @Test
    void an_out_file_in_a_missing_directory_is_bad_input_not_a_missing_key() throws Exception {
        Path missing = dir.resolve("no-such-dir").resolve("x");
        McctlProcess.Done get = McctlProcess.run(dir, Map.of(), "get", "k", "--master", "127.0.0.1:1", "--out", missing.toString());
        assertEquals(ExitCodes.USAGE, get.exitCode(), get.err());
        assertEquals("mcctl: error: invalid --out " + missing + ": directory " + missing.getParent() + " does not exist",
                get.err().strip());
        assertFalse(Files.exists(missing.getParent()));
    }

    @Test
    void a_client_whose_root_is_not_mounted_names_the_expected_bucket_file_and_the_mount() throws Exception {
        Path root = dir.resolve("root");
        try (McctlProcess.Master master = startMaster(root)) {
            // This node's view of the root disappears, as when the shared filesystem is not mounted here.
            Path away = dir.resolve("root-elsewhere");
            Files.move(root, away);
            try {
                McctlProcess.Done get = McctlProcess.run(dir, Map.of("MCCTL_MASTER", master.address()), "get", "k",
                        "--out", dir.resolve("o").toString());
                assertEquals(ExitCodes.UNAVAILABLE, get.exitCode(), get.err());
                assertEquals(1, get.err().lines().count(), get.err());
                assertTrue(get.err().contains(root.resolve("bucket_00.data").toString()), get.err());
                assertTrue(get.err().contains("check that the shared filesystem is mounted at " + root), get.err());
                Path file = Files.writeString(dir.resolve("to-offload"), "x");
                McctlProcess.Done offload = McctlProcess.run(dir, Map.of("MCCTL_MASTER", master.address()), "offload", "k2", file.toString());
                assertEquals(ExitCodes.UNAVAILABLE, offload.exitCode(), offload.err());
                assertTrue(offload.err().contains("check that the shared filesystem is mounted at " + root), offload.err());
            } finally {
                Files.move(away, root);
            }
        }
    }

    @Test
    void batch_keys_are_read_exactly_one_per_line_or_nul_separated() throws Exception {
        try (McctlProcess.Master master = startMaster(dir.resolve("root"))) {
            offload(master.address(), " spaced ", "a".getBytes(StandardCharsets.UTF_8));
            offload(master.address(), "spaced", "b".getBytes(StandardCharsets.UTF_8));
            offload(master.address(), "two\nlines", "c".getBytes(StandardCharsets.UTF_8));
            Map<String, String> env = Map.of("MCCTL_MASTER", master.address());

            Files.writeString(dir.resolve("keys.txt"), " spaced \n");
            McctlProcess.Done exact = McctlProcess.run(dir, env, "get", "--batch", "keys.txt", "--out", "out1");
            assertEquals(0, exact.exitCode(), exact.err());
            assertEquals("a", Files.readString(dir.resolve("out1").resolve("+spaced+")), "the key kept its spaces");
            assertFalse(Files.exists(dir.resolve("out1").resolve("spaced")));

            Files.writeString(dir.resolve("blank.txt"), "spaced\n\nspaced\n");
            McctlProcess.Done blank = McctlProcess.run(dir, env, "get", "--batch", "blank.txt", "--out", "out2");
            assertEquals(ExitCodes.USAGE, blank.exitCode(), blank.err());
            assertTrue(blank.err().contains("line 2 is empty"), blank.err());
            assertFalse(Files.exists(dir.resolve("out2")), "nothing was done");

            Files.writeString(dir.resolve("keys.nul"), "two\nlines\0 spaced \0");
            McctlProcess.Done nul = McctlProcess.run(dir, env, "get", "--batch", "keys.nul", "-0", "--out", "out3");
            assertEquals(0, nul.exitCode(), nul.err());
            assertEquals("c", Files.readString(dir.resolve("out3").resolve("two%0Alines")));
            assertEquals("a", Files.readString(dir.resolve("out3").resolve("+spaced+")));

            Files.writeString(dir.resolve("missing.nul"), "gone\nkey\0");
            McctlProcess.Done missing = McctlProcess.run(dir, env, "get", "--batch", "missing.nul", "-0", "--out", "out4");
            assertEquals(ExitCodes.NOT_FOUND, missing.exitCode(), missing.err());
            assertEquals(1, missing.err().lines().count(), "a key's newline is shown escaped: " + missing.err());
            assertTrue(missing.err().startsWith("mcctl: error: gone\\nkey: "), missing.err());
        }
    }
}
