package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.storage.layout.LayoutFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * kill -9 of a real master process in the middle of {@code mcctl layout grow}, at each step of it (the master pauses
 * there through its test hook), then a restart on the same root: everything acknowledged reads back byte-exact, fsck is
 * clean, the layout is the old one or the new one everywhere (the master, the root's record, the files), and running
 * the grow again finishes it.
 */
@Timeout(240)
@Tag("process")
class LayoutGrowCrashProcessTest {

    static final long MIB = 1 << 20;
    static final int BUCKETS = 8;

    @TempDir
    Path dir;

    private final Map<String, byte[]> acknowledged = new LinkedHashMap<>();

    private Path root() {
        return dir.resolve("root");
    }

    private McctlProcess.Master startMaster(Map<String, String> env) throws Exception {
        return McctlProcess.Master.start(dir, env, "--root", root().toString(), "--bucket-count", Integer.toString(BUCKETS),
                "--bucket-size", "1MiB", "--page-size", "4KiB", "--eviction", "false");
    }

    private void offload(MasterClient client, String prefix, int count) throws Exception {
        try (TierNode node = TierNode.connect(client, true, new ClientMetrics())) {
            TierWriter writer = new TierWriter(node);
            SplittableRandom random = new SplittableRandom(prefix.hashCode());
            for (int i = 0; i < count; i++) {
                String key = prefix + i;
                byte[] bytes = new byte[1 + random.nextInt(40_000)];
                random.nextBytes(bytes);
                TierWriter.Outcome outcome = writer.offload("t", List.of(new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(bytes)))), false)
                        .get(0);
                assertTrue(outcome.ok(), outcome.toString());
                acknowledged.put(key, bytes);
            }
        }
    }

    private void assertEverythingReadsBack(MasterClient client) throws Exception {
        try (TierNode node = TierNode.connect(client, false, new ClientMetrics())) {
            List<String> keys = new ArrayList<>(acknowledged.keySet());
            List<TierReader.Outcome> read = new TierReader(node).get("t", keys);
            for (int i = 0; i < keys.size(); i++) {
                assertTrue(read.get(i).ok(), read.get(i).toString());
                ByteBuffer data = read.get(i).data().duplicate();
                byte[] got = new byte[data.remaining()];
                data.get(got);
                assertArrayEquals(acknowledged.get(keys.get(i)), got, keys.get(i));
            }
        }
    }

    /** The master, the root's record and every file agree on one bucket size; returns it. */
    private long agreedBucketSize(MasterClient client) throws Exception {
        long served = client.layout().getBucketSize();
        assertEquals(served, LayoutFile.read(root().resolve(LayoutFile.FILE_NAME)).bucketSize(), "the record says what the master serves");
        for (int b = 0; b < BUCKETS; b++) {
            Path file = root().resolve(String.format("bucket_%02x.data", b));
            assertTrue(Files.size(file) >= served, file + " is at least the bucket size");
        }
        return served;
    }

    private void assertFsckClean(McctlProcess.Master master) throws Exception {
        McctlProcess.Done fsck = McctlProcess.run(dir, Map.of(), "fsck", "--master", master.address());
        assertEquals(0, fsck.exitCode(), fsck.out() + fsck.err());
    }

    private static void awaitLog(McctlProcess.Master master, String line) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!master.log().contains(line)) {
            assertTrue(master.process().isAlive(), "the master died before '" + line + "':\n" + master.log());
            assertTrue(System.nanoTime() < until, "no '" + line + "' in the master's log:\n" + master.log());
            Thread.sleep(20);
        }
    }

    @ParameterizedTest(name = "killed after {0}")
    @ValueSource(strings = {"extending", "extended", "logged", "recorded"})
    void a_grow_killed_at_any_step_leaves_a_tier_that_starts_reads_back_and_checks_clean(String step) throws Exception {
        McctlProcess.Master master = startMaster(Map.of("MCCTL_TEST_PAUSE_IN_GROW", step + ":120000"));
        Thread grow;
        try (MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(10))) {
            offload(client, "before-", 60);
            grow = new Thread(() -> {
                try {
                    client.growLayout(2 * MIB, false);
                } catch (RuntimeException expected) {
                    // the master is killed under it
                }
            }, "grow");
            grow.start();
            awaitLog(master, "paused after " + step);
            master.process().destroyForcibly();
            assertTrue(master.process().waitFor(30, TimeUnit.SECONDS), "the master did not die");
            grow.join(30_000);
        } finally {
            master.close();
        }

        McctlProcess.Master restarted = startMaster(Map.of());
        try (MasterClient client = new MasterClient(restarted.address(), Duration.ofSeconds(10))) {
            long size = agreedBucketSize(client);
            // Logged means durable: from then on the grow stands; before it nothing recorded it.
            assertEquals(step.equals("logged") || step.equals("recorded") ? 2 * MIB : MIB, size, "bucket size after a kill " + step);
            assertEverythingReadsBack(client);
            assertFsckClean(restarted);

            McctlProcess.Done again = McctlProcess.run(dir, Map.of(), "layout", "grow", "--bucket-size", "2MiB", "--master", restarted.address());
            assertEquals(0, again.exitCode(), again.out() + again.err());
            assertEquals(2 * MIB, agreedBucketSize(client));
            offload(client, "after-", 500); // with what is there, more than the old layout could hold
            assertEverythingReadsBack(client);
            assertFsckClean(restarted);
        } finally {
            restarted.close();
        }
    }
}
