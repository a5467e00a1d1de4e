package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.cli.bench.MasterProcess;
import io.mcctl.master.client.MasterClient;
import io.mcctl.testkit.FreePorts;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A master process whose open-file limit is smaller than the connections a crowd of clients opens: with max_connections
 * derived from that limit it refuses the connections past it, keeps serving the client it has, still opens the files a
 * snapshot needs, and says so in one log line rather than a stack trace a second.
 */
@Timeout(180)
@Tag("process")
class ConnectionLimitProcessTest {

    private static final Path PRLIMIT = Path.of("/usr/bin/prlimit");
    /** The master's open-file limit: auto then allows 1024 - 512 connections. */
    private static final int OPEN_FILES = 1024;

    @TempDir
    Path dir;

    private static double metric(int metricsPort, String series) throws Exception {
        String body = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metricsPort + "/metrics"))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()).body();
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(series) + " ([0-9.eE+-]+)$").matcher(body);
        assertTrue(m.find(), "no series " + series + " in\n" + body);
        return Double.parseDouble(m.group(1));
    }

    @Test
    void a_crowd_of_idle_connections_past_the_descriptors_is_refused_and_the_master_serves_and_snapshots() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(PRLIMIT), "needs prlimit (util-linux) to start the master with a small open-file limit");
        int metricsPort = FreePorts.one();
        int crowd = 2 * OPEN_FILES;
        try (MasterProcess master = MasterProcess.start(McctlProcess.jvmOptions("256m"), Duration.ofSeconds(60), builder -> {
            McctlProcess.prepare(builder.directory(dir.toFile()), Map.of());
            builder.command().addAll(0, List.of(PRLIMIT.toString(), "--nofile=" + OPEN_FILES + ":" + OPEN_FILES, "--"));
        }, "--root", dir.resolve("root").toString(), "--bucket-count", "16", "--bucket-size", "1MiB", "--page-size", "4KiB",
                "--metrics-port", Integer.toString(metricsPort));
             MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(20))) {
            assertEquals(1, client.batchGetMapping(List.of("a"), List.of("t")).getResultsCount());
            int allowed = (int) metric(metricsPort, "mcctl_master_max_connections");
            assertEquals(OPEN_FILES - 512, allowed, "auto: the open-file limit less the reserve");
            List<Socket> sockets = new ArrayList<>();
            try {
                for (int i = 0; i < crowd; i++) {
                    sockets.add(new Socket("127.0.0.1", master.port()));
                }
                int refused = crowd - (allowed - 1);
                assertTrue(CrashRestartProcessTest.await(Duration.ofSeconds(60),
                        () -> metricAtLeast(metricsPort, "mcctl_master_connections_refused_total", refused)), "refused: "
                        + metric(metricsPort, "mcctl_master_connections_refused_total"));

                // With every connection it allows open, the master serves its client and opens the files of a snapshot.
                assertEquals(2, client.batchGetMapping(List.of("a", "b"), Collections.nCopies(2, "t")).getResultsCount());
                assertTrue(client.createSnapshot().getPath().length() > 0);
                assertEquals(allowed, metric(metricsPort, "mcctl_master_connections"));
                assertEquals(0, metric(metricsPort, "mcctl_master_accept_failures_total"));
            } finally {
                for (Socket socket : sockets) {
                    socket.close();
                }
            }
            String log = master.log();
            assertFalse(log.contains("Too many open files"), log);
            assertFalse(log.contains("\tat "), "no stack trace:\n" + log);
            long lines = log.lines().filter(line -> line.contains("refused: all " + allowed + " connections max_connections allows are open")).count();
            assertTrue(lines >= 1 && lines <= 2, "one line for " + (crowd - (allowed - 1)) + " refusals, one more if they took 10 s:\n" + log);
        }
    }

    @Test
    void a_max_connections_that_leaves_too_few_descriptors_stops_the_start_in_one_line_and_lays_out_nothing() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(PRLIMIT), "needs prlimit (util-linux) to start the master with a small open-file limit");
        Path root = dir.resolve("tier");
        java.io.IOException refused = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
                () -> MasterProcess.start(McctlProcess.jvmOptions("256m"), Duration.ofSeconds(60), builder -> {
                    McctlProcess.prepare(builder.directory(dir.toFile()), Map.of());
                    builder.command().addAll(0, List.of(PRLIMIT.toString(), "--nofile=" + OPEN_FILES + ":" + OPEN_FILES, "--"));
                }, "--root", root.toString(), "--max-connections", "600"));
        assertEquals("the master exited with " + ExitCodes.USAGE + ": mcctl: error: max_connections 600 (from flag --max-connections) "
                + "leaves too few of the open-file limit 1024 for the master's own files: allowed is at most 512 (the limit less 512 "
                + "descriptors kept for the write-ahead log, snapshots, bucket files, metrics and etcd); lower max_connections, or raise "
                + "the limit (LimitNOFILE= in the master's systemd unit, ulimit -n in its shell)", refused.getMessage());
        assertFalse(Files.exists(root), "nothing laid out");
    }

    private static boolean metricAtLeast(int metricsPort, String series, double value) {
        try {
            return metric(metricsPort, series) >= value;
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
