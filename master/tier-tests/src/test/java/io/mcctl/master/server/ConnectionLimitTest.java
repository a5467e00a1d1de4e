package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The master's bound on connections, against a real master over real TCP: connections past max_connections are closed
 * as soon as they are accepted and counted while the master goes on serving its clients and writing snapshots, idle
 * connections are closed after connection_idle_timeout, and a max_connections that would leave the master too few
 * descriptors for its own files stops the start in one line.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ConnectionLimitTest {

    @TempDir
    Path dir;

    private static TierCluster start(Path root, Map<String, String> settings) throws IOException {
        MasterServer.Options defaults = TierCluster.options(TierCluster.smallLayout(root, 4), Duration.ofSeconds(60), Duration.ofSeconds(5),
                MasterServer.Options.DEFAULT_ALLOCATION_GRACE);
        return TierCluster.start(options(defaults, settings), 0);
    }

    private static MasterServer.Options options(MasterServer.Options defaults, Map<String, String> settings) {
        return MasterServer.Options.builder(defaults.layout()).fsType(defaults.fsType()).bindHost(defaults.bindHost())
                .allocationDeadline(defaults.allocationDeadline()).readLease(defaults.readLease())
                .durability(defaults.durability()).snapshotInterval(null).settings(settings)
                .allocationGrace(defaults.allocationGrace()).build();
    }

    private static double metric(TierCluster cluster, String series) throws IOException, InterruptedException {
        return cluster.metric(series).orElseThrow(() -> new AssertionError("no series " + series));
    }

    private static boolean atLeast(TierCluster cluster, String series, double value) {
        try {
            return metric(cluster, series) >= value;
        } catch (IOException | InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    /** Whether the master closed {@code socket}: a read ends (or is reset) rather than waiting for data that never comes. */
    private static boolean closedByMaster(Socket socket) throws IOException {
        socket.setSoTimeout(2000);
        try (InputStream in = socket.getInputStream()) {
            return in.read() == -1;
        } catch (SocketTimeoutException open) {
            return false;
        } catch (SocketException reset) {
            return true;
        }
    }

    @Test
    void connections_past_the_limit_are_closed_at_once_and_counted_while_the_master_serves_its_clients_and_snapshots() throws Exception {
        int max = 4;
        int raw = 40;
        try (TierCluster cluster = start(dir.resolve("root"), Map.of(MasterSettings.MAX_CONNECTIONS.key(), Integer.toString(max)));
             MasterClient client = cluster.newClient()) {
            assertEquals(2, client.batchGetMapping(List.of("a", "b"), Collections.nCopies(2, "t")).getResultsCount()); // its connection is open
            List<Socket> sockets = new ArrayList<>();
            try {
                for (int i = 0; i < raw; i++) {
                    sockets.add(new Socket("127.0.0.1", cluster.master().port()));
                }
                int refused = raw - (max - 1);
                assertTrue(TierCluster.await(Duration.ofSeconds(60), () -> atLeast(cluster, "mcctl_master_connections_refused_total", refused)),
                        "connections refused: " + metric(cluster, "mcctl_master_connections_refused_total"));
                assertEquals(refused, metric(cluster, "mcctl_master_connections_refused_total"));
                assertEquals(max, metric(cluster, "mcctl_master_connections"), "connections open");
                assertEquals(max, metric(cluster, "mcctl_master_max_connections"));
                int closed = 0;
                for (Socket socket : sockets) {
                    closed += closedByMaster(socket) ? 1 : 0;
                }
                assertEquals(refused, closed, "the connections past the limit were closed by the master, the others are open");

                // The client that was connected before is served, and the master still opens files for a snapshot.
                assertEquals(3, client.batchGetMapping(List.of("a", "b", "c"), Collections.nCopies(3, "t")).getResultsCount());
                assertTrue(client.createSnapshot().getPath().length() > 0);
                assertEquals(0, metric(cluster, "mcctl_master_accept_failures_total"));
            } finally {
                for (Socket socket : sockets) {
                    socket.close();
                }
            }
            // Once the crowd is gone, new clients get in again.
            assertTrue(TierCluster.await(Duration.ofSeconds(30), () -> !atLeast(cluster, "mcctl_master_connections", 2)),
                    "connections open after the crowd left");
            try (MasterClient late = cluster.newClient()) {
                assertEquals(1, late.batchGetMapping(List.of("a"), List.of("t")).getResultsCount());
            }
        }
    }

    @Test
    void a_connection_without_calls_is_closed_after_the_idle_timeout_and_a_client_connects_again_at_its_next_call() throws Exception {
        try (TierCluster cluster = start(dir.resolve("root"), Map.of(MasterSettings.CONNECTION_IDLE_TIMEOUT.key(), "1s"));
             // Unary calls only: a Session stream is a call in progress, and keeps its connection open however quiet.
             MasterClient client = new MasterClient(cluster.target(), Duration.ofSeconds(10), ClientSecurity.NONE, MasterClient.Transport.UNARY);
             Socket silent = new Socket("127.0.0.1", cluster.master().port())) {
            assertEquals(1, client.batchGetMapping(List.of("a"), List.of("t")).getResultsCount());
            silent.setSoTimeout(60_000);
            try (InputStream in = silent.getInputStream()) {
                // The master speaks first (its HTTP/2 settings), then closes the connection: read until it does.
                byte[] buffer = new byte[4096];
                while (in.read(buffer) != -1) {
                    // what the master sent before it closed
                }
            } catch (SocketException reset) {
                // closed too
            }
            assertTrue(TierCluster.await(Duration.ofSeconds(60), () -> !atLeast(cluster, "mcctl_master_connections", 1)),
                    "the client's idle connection is closed too");
            assertEquals(1, client.batchGetMapping(List.of("a"), List.of("t")).getResultsCount());
            assertEquals(3, metric(cluster, "mcctl_master_connections_accepted_total"), "the client connected again");
        }
    }

    @Test
    void a_limit_that_leaves_too_few_descriptors_for_the_masters_own_files_stops_the_start_and_holds_nothing() throws Exception {
        OptionalLong limit = ConnectionLimits.openFileLimit();
        Assumptions.assumeTrue(limit.isPresent() && limit.getAsLong() < ConnectionLimits.LARGEST, "needs /proc/self/limits and a finite limit");
        long room = limit.getAsLong() - ConnectionLimits.reserve(limit.getAsLong());
        MasterServer.Options defaults = TierCluster.options(TierCluster.smallLayout(dir.resolve("root"), 4), Duration.ofSeconds(60),
                Duration.ofSeconds(5), MasterServer.Options.DEFAULT_ALLOCATION_GRACE);
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> MasterServer.start(options(defaults,
                Map.of(MasterSettings.MAX_CONNECTIONS.key(), Long.toString(room + 1)))));
        assertEquals("max_connections " + (room + 1) + " leaves too few of the open-file limit " + limit.getAsLong() + " for the master's "
                + "own files: allowed is at most " + room + " (the limit less " + ConnectionLimits.reserve(limit.getAsLong()) + " descriptors "
                + "kept for the write-ahead log, snapshots, bucket files, metrics and etcd); lower max_connections, or raise the limit "
                + "(LimitNOFILE= in the master's systemd unit, ulimit -n in its shell)", refused.getMessage());
        // Nothing was held or laid out: a start at the limit takes the same state directory.
        try (MasterServer master = MasterServer.start(options(defaults, Map.of(MasterSettings.MAX_CONNECTIONS.key(), Long.toString(room))))) {
            assertEquals(0, master.pages().mappingCount());
        }
    }

    @Test
    void auto_keeps_a_reserve_of_the_open_file_limit_for_the_masters_own_files() {
        Map<String, String> auto = Map.of();
        assertEquals(10_000 - ConnectionLimits.FD_RESERVE, ConnectionLimits.of(Map.of(MasterSettings.MAX_CONNECTIONS.key(), "auto"),
                OptionalLong.of(10_000), null).maxConnections());
        assertEquals(ConnectionLimits.MAX_AUTO_CONNECTIONS, ConnectionLimits.of(auto, OptionalLong.of(1 << 20), null).maxConnections());
        assertEquals(ConnectionLimits.MAX_AUTO_CONNECTIONS, ConnectionLimits.of(auto, OptionalLong.of(Long.MAX_VALUE), null).maxConnections());
        assertEquals(4096 - 512, ConnectionLimits.of(auto, OptionalLong.of(4096), null).maxConnections());
        assertEquals(350, ConnectionLimits.of(auto, OptionalLong.of(700), null).maxConnections(), "half of a small limit");
        assertEquals(ConnectionLimits.AUTO_WITHOUT_LIMIT, ConnectionLimits.of(auto, OptionalLong.empty(), null).maxConnections());
        assertEquals(3584, ConnectionLimits.of(Map.of(MasterSettings.MAX_CONNECTIONS.key(), "3584"), OptionalLong.of(4096), null).maxConnections());
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> ConnectionLimits.of(Map.of(MasterSettings.MAX_CONNECTIONS.key(), "3585"), OptionalLong.of(4096), "flag --max-connections"));
        assertTrue(refused.getMessage().startsWith("max_connections 3585 (from flag --max-connections) leaves too few of the open-file limit "
                + "4096 for the master's own files: allowed is at most 3584"), refused.getMessage());
        assertEquals(Duration.ofSeconds(300), ConnectionLimits.of(auto, OptionalLong.of(4096), null).idleTimeout());
    }
}
