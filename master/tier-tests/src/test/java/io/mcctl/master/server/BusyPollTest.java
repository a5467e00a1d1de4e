package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A master whose transport loops poll before they sleep ({@code busy_poll}): it serves offloads and reads over the
 * stream and unary calls from several callers as any master does, and once the calls stop its loops sleep rather than
 * poll on.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BusyPollTest {

    @TempDir
    Path dir;

    @Test
    void a_master_that_polls_serves_every_caller_and_its_loops_sleep_once_the_calls_stop() throws Exception {
        MasterServer.Options defaults = TierCluster.options(TierCluster.smallLayout(dir.resolve("root"), 8), Duration.ofSeconds(60),
                Duration.ofSeconds(5), MasterServer.Options.DEFAULT_ALLOCATION_GRACE);
        MasterServer.Options options = MasterServer.Options.builder(defaults.layout()).fsType(defaults.fsType())
                .bindHost(defaults.bindHost()).allocationDeadline(defaults.allocationDeadline()).readLease(defaults.readLease())
                .durability(defaults.durability()).snapshotInterval(null)
                .settings(Map.of(MasterSettings.BUSY_POLL.key(), "1ms")).allocationGrace(defaults.allocationGrace()).build();
        try (TierCluster cluster = TierCluster.start(options, 0)) {
            List<TierCluster.Node> nodes = List.of(cluster.addNode(true, MasterClient.Transport.STREAM),
                    cluster.addNode(true, MasterClient.Transport.UNARY));
            ExecutorService callers = Executors.newFixedThreadPool(4);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int c = 0; c < 4; c++) {
                    TierCluster.Node node = nodes.get(c % 2);
                    String prefix = "caller" + c + "-";
                    done.add(callers.submit(() -> {
                        for (int i = 0; i < 40; i++) {
                            String key = prefix + i;
                            TierWriter.Outcome written = node.writer().offload("t", List.of(TestObjects.object(key, 3000 + i)), false).get(0);
                            assertTrue(written.ok(), key + ": " + written.message());
                            TierReader.Outcome read = node.reader().get("t", List.of(key)).get(0);
                            assertTrue(read.ok(), key + ": " + read.message());
                            assertArrayEquals(TestObjects.content(key, 3000 + i), TestObjects.bytesOf(read.data()), key);
                        }
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get(60, TimeUnit.SECONDS);
                }
            } finally {
                callers.shutdownNow();
            }
            assertEquals(160, cluster.master().pages().mappingCount());

            // Idle: a loop that polled on would spend about all of the wait's time on its CPU; sleeping loops spend none.
            Thread.sleep(100); // past the last burst's polling
            long before = transportCpuNanos();
            Thread.sleep(2000);
            long spent = transportCpuNanos() - before;
            assertTrue(spent < 300_000_000L, "the transport loops spent " + spent / 1_000_000 + " ms of CPU in 2 s without a call");
        }
    }

    @Test
    void a_busy_poll_outside_0_to_1ms_is_refused_with_what_is_allowed() {
        assertEquals(Duration.ofNanos(50_000), MasterSettings.parseBusyPoll("50us"));
        assertEquals(Duration.ZERO, MasterSettings.parseBusyPoll("0s"));
        assertEquals(Duration.ofMillis(1), MasterSettings.parseBusyPoll("1000us"));
        assertThrows(IllegalArgumentException.class, () -> MasterSettings.parseBusyPoll("1001us"));
        assertThrows(IllegalArgumentException.class, () -> MasterSettings.parseBusyPoll("2ms"));
        assertThrows(IllegalArgumentException.class, () -> MasterSettings.parseBusyPoll("50"));
        assertTrue(MasterSettings.BUSY_POLL.allowed().contains("0s (off) to 1ms"), MasterSettings.BUSY_POLL.allowed());
    }

    /** CPU time of the master's transport loops so far. */
    private static long transportCpuNanos() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long total = 0;
        int loops = 0;
        for (ThreadInfo info : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (info != null && info.getThreadName().startsWith("mcctl-master-transport")) {
                long cpu = threads.getThreadCpuTime(info.getThreadId());
                if (cpu > 0) {
                    total += cpu;
                    loops++;
                }
            }
        }
        assertTrue(loops > 0, "no transport loop found");
        return total;
    }
}
