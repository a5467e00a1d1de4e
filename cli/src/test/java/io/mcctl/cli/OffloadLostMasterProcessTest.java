package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.cli.bench.Signals;
import io.mcctl.cli.command.TestHooks;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A batch offload whose master is lost part way, as real processes: the writer says how many keys were stored
 * (acknowledged), which keys are in doubt and how to check them, and exits 4.
 */
@Timeout(180)
@Tag("process")
class OffloadLostMasterProcessTest {

    @TempDir
    Path dir;

    McctlProcess.Master startMaster(String deadline) throws Exception {
        return McctlProcess.Master.start(dir, Map.of(), "--root", dir.resolve("root").toString(), "--bucket-count", "4",
                "--bucket-size", "8MiB", "--page-size", "4KiB", "--allocation-deadline", deadline, "--allocation-grace", "5s");
    }

    /** 30 files blk-00 .. blk-29 of a few KiB each. */
    Path thirtyFiles() throws Exception {
        Path in = Files.createDirectories(dir.resolve("in"));
        for (int i = 0; i < 30; i++) {
            Files.write(in.resolve(String.format("blk-%02d", i)), FenceProcessTest.content("blk-" + i, 3000 + i));
        }
        return in;
    }

    /** An offload of {@code in} in batches of 10 that pauses before each notify, returned once its second pause is announced. */
    FenceProcessTest.Running offloadPausingBeforeEachNotify(String address, Path in, String timeout, String pauseMillis) throws Exception {
        Path out = Files.createTempFile(dir, "out", ".txt");
        Path err = Files.createTempFile(dir, "err", ".txt");
        Process process = McctlProcess.builder(dir, Map.of(TestHooks.PAUSE_BEFORE_NOTIFY, pauseMillis), "offload", "--master", address,
                "--timeout", timeout, "--batch", in.toString(), "--batch-size", "10").redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        FenceProcessTest.Running running = new FenceProcessTest.Running(process, out, err);
        assertTrue(FenceProcessTest.await(Duration.ofSeconds(60), () -> pausesAnnounced(err) >= 2), "the second batch was never written");
        return running;
    }

    static int pausesAnnounced(Path err) {
        try {
            return (int) Files.readString(err, StandardCharsets.UTF_8).lines().filter(l -> l.contains("test hook: written")).count();
        } catch (java.io.IOException e) {
            return 0;
        }
    }

    @Test
    void a_master_that_stops_answering_under_a_notify_leaves_that_batch_in_doubt_and_says_how_many_were_stored() throws Exception {
        Path in = thirtyFiles();
        try (McctlProcess.Master master = startMaster("60s")) {
            FenceProcessTest.Running writer = offloadPausingBeforeEachNotify(master.address(), in, "2s", "3000");
            Signals.send(master.process().pid(), "STOP"); // the second batch's notify goes out and no answer comes
            McctlProcess.Done done;
            try {
                done = writer.waitFor();
            } finally {
                Signals.send(master.process().pid(), "CONT");
            }
            assertEquals(ExitCodes.UNAVAILABLE, done.exitCode(), done.out() + done.err());
            assertTrue(done.err().contains("mcctl: error: 10 key(s) were stored before that (each acknowledged by the master); "
                    + "10 were not stored: offload them again"), done.err());
            assertTrue(done.err().contains("mcctl: error: 10 keys, blk-10 to blk-19: the outcome is unknown: check with mcctl stat blk-10"),
                    done.err());
            assertTrue(done.out().contains("offloaded 10 of 30 (0 refused, 10 in doubt, 10 not stored)"), done.out());

            // What was acknowledged is there.
            Path back = dir.resolve("back");
            McctlProcess.Done get = McctlProcess.run(dir, Map.of(), "get", "--master", master.address(), "blk-09", "--out", back.toString());
            assertEquals(0, get.exitCode(), get.err());
            assertArrayEquals(Files.readAllBytes(in.resolve("blk-09")), Files.readAllBytes(back));
        }
    }

    @Test
    void a_master_killed_under_a_batch_says_how_many_were_stored_and_that_the_rest_were_not() throws Exception {
        Path in = thirtyFiles();
        McctlProcess.Master master = startMaster("5s");
        McctlProcess.Done done;
        try {
            FenceProcessTest.Running writer = offloadPausingBeforeEachNotify(master.address(), in, "10s", "1500");
            master.process().destroyForcibly(); // kill -9: the notify finds no master until the allocation deadline
            assertTrue(master.process().waitFor(30, TimeUnit.SECONDS));
            done = writer.waitFor();
        } finally {
            master.close();
        }
        assertEquals(ExitCodes.UNAVAILABLE, done.exitCode(), done.out() + done.err());
        assertTrue(done.err().contains("mcctl: error: the master was lost: "), done.err());
        assertTrue(done.err().contains("10 key(s) were stored before that (each acknowledged by the master); 20 were not stored"), done.err());
        assertTrue(!done.err().contains("outcome is unknown"), done.err());
        assertTrue(done.out().contains("offloaded 10 of 30 (0 refused, 0 in doubt, 20 not stored)"), done.out());
    }
}
