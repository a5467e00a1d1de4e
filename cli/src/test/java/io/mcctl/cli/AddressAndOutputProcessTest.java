package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Master addresses that cannot work, and text output of keys that hold control characters, as a user sees them. */
@Timeout(180)
@Tag("process")
class AddressAndOutputProcessTest {

    @TempDir
    Path dir;

    private McctlProcess.Master startMaster() throws Exception {
        return McctlProcess.Master.start(dir, Map.of(), "--root", dir.resolve("root").toString(), "--bucket-count", "64",
                "--bucket-size", "1MiB", "--page-size", "4KiB");
    }

    @Test
    void a_master_host_that_does_not_resolve_is_one_line_and_exit_4() throws Exception {
        McctlProcess.Done stat = McctlProcess.run(dir, Map.of(), "stat", "k", "--master", "nosuchhost.invalid:50051");
        assertEquals(ExitCodes.UNAVAILABLE, stat.exitCode(), stat.err());
        assertEquals(1, stat.err().lines().count(), "grpc-java's own warning is silenced:\n" + stat.err());
        assertTrue(stat.err().startsWith("mcctl: error: cannot resolve host nosuchhost.invalid"), stat.err());
    }

    @Test
    void a_master_address_at_an_http_port_such_as_the_metrics_port_says_it_does_not_speak_grpc() throws Exception {
        // What the master's metrics port is: an HTTP/1.1 server.
        com.sun.net.httpserver.HttpServer http = com.sun.net.httpserver.HttpServer.create(
                new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        http.createContext("/", exchange -> {
            exchange.sendResponseHeaders(404, -1);
            exchange.close();
        });
        http.start();
        try {
            String metrics = "127.0.0.1:" + http.getAddress().getPort();
            McctlProcess.Done ls = McctlProcess.run(dir, Map.of(), "ls", "--master", metrics);
            assertEquals(ExitCodes.UNAVAILABLE, ls.exitCode(), ls.err());
            assertEquals(1, ls.err().lines().count(), ls.err());
            assertTrue(ls.err().startsWith("mcctl: error: " + metrics + " does not speak gRPC: is it the metrics port?"), ls.err());
        } finally {
            http.stop(0);
        }
    }

    @Test
    void ls_and_stat_escape_control_characters_and_stat_shows_the_bucket_in_decimal_beside_its_file() throws Exception {
        String key = "a\nb\tc\u001b[31mred\\";
        try (McctlProcess.Master master = startMaster()) {
            DistributedDiskDescriptor place = null;
            String statKey = null;
            try (MasterClient client = new MasterClient(master.address());
                 TierNode node = TierNode.connect(client, true, new ClientMetrics())) {
                TierWriter writer = new TierWriter(node);
                TierWriter.Outcome outcome = writer.offload("default",
                        List.of(new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(new byte[] {1, 2})))), false).get(0);
                assertTrue(outcome.ok(), outcome.message());
                // stat a key whose bucket number reads differently in hex and in decimal (10 or more)
                for (int i = 0; place == null; i++) {
                    TierWriter.Outcome other = writer.offload("default",
                            List.of(new TierWriter.ObjectSource("z" + i, List.of(ByteBuffer.wrap(new byte[] {3})))), false).get(0);
                    assertTrue(other.ok(), other.message());
                    String name = Path.of(other.descriptor().getFilePath()).getFileName().toString();
                    if (Integer.parseInt(name.substring("bucket_".length(), name.indexOf('.')), 16) >= 10) {
                        place = other.descriptor();
                        statKey = "z" + i;
                    }
                }
            }
            Map<String, String> env = Map.of("MCCTL_MASTER", master.address());
            McctlProcess.Done ls = McctlProcess.run(dir, env, "ls");
            assertEquals(0, ls.exitCode(), ls.err());
            assertTrue(ls.out().contains("a\\nb\\tc\\e[31mred\\\\ "), ls.out());
            assertFalse(ls.out().contains("\u001b") || ls.out().contains("\t"), ls.out());
            assertTrue(ls.out().lines().noneMatch(line -> line.startsWith("b")), "the key is one line:\n" + ls.out());

            McctlProcess.Done json = McctlProcess.run(dir, env, "ls", "-o", "json");
            assertTrue(json.out().contains("a\\nb\\tc\\u001B[31mred\\\\"), json.out());

            McctlProcess.Done stat = McctlProcess.run(dir, env, "stat", statKey);
            assertEquals(0, stat.exitCode(), stat.err());
            String fileName = Path.of(place.getFilePath()).getFileName().toString(); // bucket_HH.data
            int bucket = Integer.parseInt(fileName.substring("bucket_".length(), fileName.indexOf('.')), 16);
            String row = stat.out().lines().skip(1).findFirst().orElseThrow();
            assertEquals(Integer.toString(bucket), row.trim().split("\\s+")[5], "BUCKET column of:\n" + stat.out());
        }
    }
}
