package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@code mcctl offload} of what a directory or a path really holds, against a real master on a loopback port. */
@Timeout(120)
class OffloadCommandTest {

    static final long BUCKET = 1 << 20;

    @TempDir
    Path dir;

    MasterServer master;
    MasterClient client;
    String address;

    @BeforeEach
    void start() throws Exception {
        master = MasterServer.start(new MasterServer.Options(new BucketLayout(dir.resolve("root"), 4, 4096, BUCKET), "posix", "127.0.0.1", 0, 0,
                Duration.ofSeconds(60), Duration.ofSeconds(5)));
        address = "127.0.0.1:" + master.port();
        client = new MasterClient(address, Duration.ofSeconds(10));
    }

    @AfterEach
    void stop() {
        client.close();
        master.close();
    }

    /** A directory of two good files and one of each kind of entry that cannot be an object. */
    Path mixedDirectory() throws Exception {
        Path in = Files.createDirectories(dir.resolve("in"));
        Files.writeString(in.resolve("a"), "first object");
        Files.writeString(in.resolve("b"), "second object");
        Files.createDirectories(in.resolve("sub"));
        Files.createFile(in.resolve("empty"));
        Files.createSymbolicLink(in.resolve("link"), dir.resolve("nowhere"));
        Files.write(in.resolve("huge"), new byte[(int) BUCKET + 1]);
        Process mkfifo = new ProcessBuilder("mkfifo", in.resolve("fifo").toString()).inheritIO().start();
        assertEquals(0, mkfifo.waitFor(), "mkfifo");
        return in;
    }

    @Test
    void a_batch_stores_what_it_can_and_names_each_entry_it_refused() throws Exception {
        Path in = mixedDirectory();
        CliRun run = CliRun.run("offload", "--master", address, "--batch", in.toString()).expectExit(ExitCodes.FAILED);
        List<String> err = run.err().lines().toList();
        assertTrue(err.contains("mcctl: skipped sub/: is a directory"), run.err());
        assertTrue(err.contains("mcctl: skipped fifo: not a regular file"), run.err());
        assertTrue(err.contains("mcctl: skipped link: dangling symlink to " + dir.resolve("nowhere")), run.err());
        assertTrue(err.contains("mcctl: refused empty: empty file (objects are at least 1 byte)"), run.err());
        assertTrue(err.stream().anyMatch(l -> l.startsWith("mcctl: refused huge: " + (BUCKET + 1) + " bytes")
                && l.contains("larger than a bucket of " + BUCKET + " bytes")), run.err());
        assertEquals(5, err.size(), run.err());
        assertEquals("offloaded 2 of 7 (5 refused): 25 bytes", run.out().strip(), run.out());

        assertEquals(2, client.stats().getMappings());
        Path back = dir.resolve("back");
        CliRun.run("get", "--master", address, "b", "--out", back.toString()).expectOk();
        assertArrayEquals("second object".getBytes(), Files.readAllBytes(back));
    }

    @Test
    void a_batch_reports_its_refusals_in_json_too() throws Exception {
        Path in = mixedDirectory();
        CliRun run = CliRun.run("offload", "--master", address, "--batch", in.toString(), "-o", "json").expectExit(ExitCodes.FAILED);
        JsonNode report = new ObjectMapper().readTree(run.out());
        assertEquals(7, report.get("entries").asInt());
        assertEquals(2, report.get("offloaded").asInt());
        assertEquals(5, report.get("refused").size());
        assertEquals("sub/", report.get("refused").get(4).get("entry").asText(), report.toString());
        assertEquals("is a directory", report.get("refused").get(4).get("reason").asText());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "usrbio"})
    void a_batch_offloaded_and_read_back_through_either_io_is_byte_exact(String io) throws Exception {
        if (io.equals("usrbio")) {
            Standin.markMount(dir); // the root, dir/root, is on a 3FS mount to the stand-in
        }
        Path in = Files.createDirectories(dir.resolve("objects"));
        java.util.Random random = new java.util.Random(7);
        java.util.Map<String, byte[]> written = new java.util.TreeMap<>();
        for (int size : new int[] {1, 4095, 70_000, 300_000}) {
            byte[] bytes = new byte[size];
            random.nextBytes(bytes);
            written.put("k" + size, bytes);
            Files.write(in.resolve("k" + size), bytes);
        }
        List<String> flags = Standin.ioFlags(io);
        List<String> offload = new java.util.ArrayList<>(List.of("offload", "--master", address, "--batch", in.toString()));
        offload.addAll(flags);
        CliRun.run(offload.toArray(String[]::new)).expectOk();
        Path keys = Files.writeString(dir.resolve("keys"), String.join("\n", written.keySet()) + "\n");
        List<String> get = new java.util.ArrayList<>(List.of("get", "--master", address, "--batch", keys.toString(), "--out",
                dir.resolve("back").toString()));
        get.addAll(flags);
        CliRun.run(get.toArray(String[]::new)).expectOk();
        for (java.util.Map.Entry<String, byte[]> e : written.entrySet()) {
            assertArrayEquals(e.getValue(), Files.readAllBytes(dir.resolve("back").resolve(e.getKey())), e.getKey());
        }
        CliRun refused = CliRun.run("get", "--master", address, "k1", "--io", "usrbio", "--usrbio-library", dir.resolve("none.so").toString())
                .expectExit(ExitCodes.USAGE);
        assertEquals("mcctl: error: io is usrbio (flag --io) but USRBIO library " + dir.resolve("none.so") + " cannot be loaded: no such file",
                refused.err().strip());
    }

    @Test
    void a_batch_of_good_files_exits_zero() throws Exception {
        Path in = Files.createDirectories(dir.resolve("good"));
        Files.writeString(in.resolve("x"), "x");
        Files.writeString(in.resolve("y"), "yy");
        CliRun run = CliRun.run("offload", "--master", address, "--batch", in.toString()).expectOk();
        assertEquals("offloaded 2 of 2 (0 refused): 3 bytes", run.out().strip());
        assertTrue(run.err().isEmpty(), run.err());
    }

    @Test
    void an_empty_directory_says_so_and_exits_three() throws Exception {
        Path empty = Files.createDirectories(dir.resolve("nothing"));
        CliRun run = CliRun.run("offload", "--master", address, "--batch", empty.toString()).expectExit(ExitCodes.NOT_FOUND);
        assertEquals("mcctl: error: nothing to offload: " + empty + " is empty", run.err().strip());
        assertEquals(0, client.stats().getMappings());
    }

    @Test
    void a_single_path_that_is_not_a_regular_file_says_what_it_is() throws Exception {
        Path sub = Files.createDirectories(dir.resolve("sub"));
        CliRun isDir = CliRun.run("offload", "--master", address, "k", sub.toString()).expectExit(ExitCodes.USAGE);
        assertEquals("mcctl: error: cannot offload " + sub + ": is a directory", isDir.err().strip());
        CliRun device = CliRun.run("offload", "--master", address, "k", "/dev/null").expectExit(ExitCodes.USAGE);
        assertEquals("mcctl: error: cannot offload /dev/null: not a regular file", device.err().strip());
        CliRun missing = CliRun.run("offload", "--master", address, "k", dir.resolve("absent").toString()).expectExit(ExitCodes.NOT_FOUND);
        assertEquals("mcctl: error: cannot offload " + dir.resolve("absent") + ": no such file", missing.err().strip());
        assertEquals(0, client.stats().getMappings());
    }

    @Test
    void a_file_larger_than_a_bucket_is_refused_before_anything_is_allocated() throws Exception {
        Path big = dir.resolve("big");
        Files.write(big, new byte[(int) BUCKET + 4096]);
        long lookups = client.stats().getPageAllocationsTotal();
        CliRun run = CliRun.run("offload", "--master", address, "k", big.toString()).expectExit(ExitCodes.USAGE);
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().contains("cannot offload " + big + ": " + (BUCKET + 4096) + " bytes (1.0 MiB) is larger than a bucket of "
                + BUCKET + " bytes (1 MiB)"), run.err());
        assertEquals(lookups, client.stats().getPageAllocationsTotal());
        assertEquals(0, client.stats().getMappings());
    }
}
