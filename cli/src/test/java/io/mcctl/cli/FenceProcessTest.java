package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.cli.bench.Signals;
import io.mcctl.cli.command.TestHooks;
import io.mcctl.master.client.MasterClient;
import io.mcctl.testkit.FreePorts;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real {@code mcctl} processes: a writer stopped (SIGSTOP) right after its allocation and continued past its deadline
 * writes nothing and says so, while every object committed meanwhile stays intact; a writer whose master is killed and
 * restarted between its write and its notify commits once the master is back.
 */
@Timeout(180)
@Tag("process")
class FenceProcessTest {

    static final byte STALLED_BYTE = (byte) 0xA7;

    @TempDir
    Path dir;

    Path root() {
        return dir.resolve("root");
    }

    McctlProcess.Master startMaster(String deadline, String grace, int port) throws Exception {
        return McctlProcess.Master.start(dir, Map.of(), "--root", root().toString(), "--bucket-count", "4", "--bucket-size", "8MiB",
                "--page-size", "4KiB", "--allocation-deadline", deadline, "--allocation-grace", grace, "--port", String.valueOf(port));
    }

    static byte[] content(String key, int size) {
        SplittableRandom random = new SplittableRandom(key.hashCode());
        byte[] bytes = new byte[size];
        random.nextBytes(bytes);
        return bytes;
    }

    /** An {@code mcctl} process started in the background, stderr to a file the test can watch. */
    record Running(Process process, Path out, Path err) {
        boolean errSays(String text) {
            try {
                return Files.readString(err, StandardCharsets.UTF_8).contains(text);
            } catch (IOException e) {
                return false;
            }
        }

        McctlProcess.Done waitFor() throws Exception {
            assertTrue(process.waitFor(90, TimeUnit.SECONDS), "mcctl did not finish");
            return new McctlProcess.Done(process.exitValue(), Files.readString(out), Files.readString(err));
        }
    }

    Running startMcctl(Map<String, String> env, String... args) throws IOException {
        Path out = Files.createTempFile(dir, "out", ".txt");
        Path err = Files.createTempFile(dir, "err", ".txt");
        Process process = McctlProcess.builder(dir, env, args).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        return new Running(process, out, err);
    }

    static boolean await(Duration limit, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + limit.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    void offload(String address, String key, byte[] bytes, Map<String, byte[]> committed) throws Exception {
        Path file = dir.resolve(key + ".bin");
        Files.write(file, bytes);
        McctlProcess.Done done = McctlProcess.run(dir, Map.of(), "offload", "--master", address, key, file.toString());
        assertEquals(0, done.exitCode(), done.err());
        committed.put(key, bytes);
    }

    void assertReadBack(String address, Map<String, byte[]> committed) throws Exception {
        for (Map.Entry<String, byte[]> e : committed.entrySet()) {
            Path back = dir.resolve(e.getKey() + ".back");
            McctlProcess.Done got = McctlProcess.run(dir, Map.of(), "get", "--master", address, e.getKey(), "--out", back.toString());
            assertEquals(0, got.exitCode(), got.err());
            assertArrayEquals(e.getValue(), Files.readAllBytes(back), e.getKey() + " reads back byte-exact");
        }
    }

    @Test
    void a_writer_stopped_past_its_deadline_writes_nothing_and_every_object_committed_meanwhile_reads_back() throws Exception {
        try (McctlProcess.Master master = startMaster("3s", "30s", 0);
             MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(10))) {
            Map<String, byte[]> committed = new LinkedHashMap<>();
            offload(master.address(), "before", content("before", 300_000), committed);

            byte[] large = new byte[6 << 20];
            Arrays.fill(large, STALLED_BYTE);
            Path largeFile = dir.resolve("large.bin");
            Files.write(largeFile, large);
            Running stalled = startMcctl(Map.of(TestHooks.PAUSE_AFTER_ALLOCATE, "2000"),
                    "offload", "--master", master.address(), "stalled", largeFile.toString());
            assertTrue(await(Duration.ofSeconds(60), () -> stalled.errSays("test hook: allocated")), "the writer never allocated");
            Signals.send(stalled.process().pid(), "STOP");

            // Other writers go on across the deadline (3 s) while the stalled one holds its descriptor.
            long stoppedAt = System.nanoTime();
            int n = 0;
            while (System.nanoTime() - stoppedAt < TimeUnit.SECONDS.toNanos(5) || n < 3) {
                offload(master.address(), "during-" + n, content("during-" + n, 200_000 + 4096 * n), committed);
                n++;
            }
            assertTrue(await(Duration.ofSeconds(30), () -> client.stats().getInFlightAllocations() == 0),
                    "the stalled writer's allocation expired");
            Signals.send(stalled.process().pid(), "CONT");
            McctlProcess.Done done = stalled.waitFor();
            assertNotEquals(0, done.exitCode(), done.err());
            assertTrue(done.err().contains("allocation expired"), done.err());
            offload(master.address(), "after", content("after", 100_000), committed);

            assertReadBack(master.address(), committed);
            for (int b = 0; b < 4; b++) {
                assertTrue(noPageOf(root().resolve(String.format("bucket_%02d.data", b)), STALLED_BYTE),
                        "not one page of the stalled writer's bytes reached bucket " + b);
            }
            CliRun fsck = CliRun.run("fsck", "--master", master.address(), "--deep").expectOk();
            assertTrue(fsck.out().length() > 0, fsck.err());
        }
    }

    @Test
    void a_notify_retried_against_a_restarted_master_within_the_deadline_commits() throws Exception {
        // kill -9 between the write and the notify: the notify goes out while no master listens (it never reaches
        // one), then again with backoff.
        notifyAcrossARestart("survivor", 500_000, 500, first -> { });
    }

    @Test
    void a_notify_whose_connection_breaks_under_it_is_sent_again_to_the_restarted_master_and_commits() throws Exception {
        notifyAcrossARestart("cut-off", 300_000, 4000, first -> {
            Signals.send(first.process().pid(), "STOP"); // within the hook's pause: the notify goes out to a master that reads nothing
            Thread.sleep(5500); // past the pause: the notify is on the connection, unanswered, when the kill resets it
        });
    }

    interface BeforeTheKill {
        void run(McctlProcess.Master first) throws Exception;
    }

    /**
     * Offloads {@code key} with the writer pausing {@code pauseMillis} between its write and its notify; once it has
     * written, {@code beforeTheKill} runs and the master is killed (kill -9), then started again on the same port and
     * state: the writer must still be trying, and must commit against the new master.
     */
    void notifyAcrossARestart(String key, int size, int pauseMillis, BeforeTheKill beforeTheKill) throws Exception {
        int port = FreePorts.one();
        byte[] bytes = content(key, size);
        Path file = dir.resolve(key + ".bin");
        Files.write(file, bytes);
        McctlProcess.Master first = startMaster("40s", "10s", port);
        Running writer = startMcctl(Map.of(TestHooks.PAUSE_BEFORE_NOTIFY, String.valueOf(pauseMillis)),
                "offload", "--master", first.address(), "--timeout", "30s", key, file.toString());
        try {
            assertTrue(await(Duration.ofSeconds(60), () -> writer.errSays("test hook: written")), "the writer never finished writing");
            beforeTheKill.run(first);
            first.process().destroyForcibly();
            assertTrue(first.process().waitFor(30, TimeUnit.SECONDS));
        } finally {
            first.close();
        }
        Thread.sleep(3000);
        assertTrue(writer.process().isAlive(), "the writer is still trying to notify, not gone with an error");
        try (McctlProcess.Master second = startMaster("40s", "10s", port)) {
            McctlProcess.Done done = writer.waitFor();
            assertEquals(0, done.exitCode(), done.out() + done.err());
            assertTrue(done.out().contains("offloaded " + key), done.out());
            assertReadBack(second.address(), Map.of(key, bytes));
        }
    }

    @Test
    void a_notify_the_master_stops_answering_says_its_outcome_is_unknown() throws Exception {
        byte[] bytes = content("unsure", 100_000);
        Path file = dir.resolve("unsure.bin");
        Files.write(file, bytes);
        try (McctlProcess.Master master = startMaster("60s", "10s", 0)) {
            Running writer = startMcctl(Map.of(TestHooks.PAUSE_BEFORE_NOTIFY, "1000"),
                    "offload", "--master", master.address(), "--timeout", "2s", "unsure", file.toString());
            assertTrue(await(Duration.ofSeconds(60), () -> writer.errSays("test hook: written")), "the writer never finished writing");
            Signals.send(master.process().pid(), "STOP"); // the notify goes out, and no answer comes
            McctlProcess.Done done;
            try {
                done = writer.waitFor();
            } finally {
                Signals.send(master.process().pid(), "CONT");
            }
            assertNotEquals(0, done.exitCode());
            assertTrue(done.err().contains("the outcome is unknown: check with mcctl stat unsure"), done.err());
        }
    }

    /** Whether no 4 KiB page of {@code file} is entirely {@code fill}. */
    static boolean noPageOf(Path file, byte fill) throws IOException {
        byte[] page = new byte[4096];
        byte[] all = new byte[4096];
        Arrays.fill(all, fill);
        try (var in = Files.newInputStream(file)) {
            while (in.readNBytes(page, 0, page.length) == page.length) {
                if (Arrays.equals(page, all)) {
                    return false;
                }
            }
        }
        return true;
    }
}
