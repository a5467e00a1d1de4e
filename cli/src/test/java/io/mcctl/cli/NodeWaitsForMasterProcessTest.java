package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.proto.v1.ClientInfo;
import io.mcctl.master.proto.v1.OffloadMode;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.testkit.FreePorts;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node started before its master, each a real process: the node stays up and says it waits for the master, and once a
 * master serves on that address the node registers and serves reads and offloads.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@Tag("process")
class NodeWaitsForMasterProcessTest {

    private static final Pattern SERVING = Pattern.compile("mcctl node (\\S+) serving on (\\S+) ");

    @TempDir
    Path dir;

    @Test
    void a_node_started_before_its_master_waits_for_it_and_then_serves() throws Exception {
        int port = FreePorts.one(); // free now: nothing answers there until the master starts
        String masterAddress = "127.0.0.1:" + port;
        Path out = dir.resolve("node.out");
        Path err = dir.resolve("node.err");
        Process node = McctlProcess.builder(dir, Map.of(), "node", "start", "--master", masterAddress, "--listen", "127.0.0.1:0",
                "--local-disk", dir.resolve("disk").toString()).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        try {
            String waiting = "waiting for the master at " + masterAddress;
            awaitText(node, err, waiting);
            // It keeps trying: a few more pauses later it is still up, still waiting, and has said so once.
            Thread.sleep(3000);
            assertTrue(node.isAlive(), "the node exited while waiting: " + Files.readString(err));
            assertEquals(1, Files.readString(err).lines().filter(line -> line.contains(waiting)).count(), Files.readString(err));
            assertTrue(Files.readString(out).isEmpty(), "the node said it serves with no master: " + Files.readString(out));

            try (McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of(), "--port", String.valueOf(port), "--root",
                    dir.resolve("root").toString(), "--bucket-count", "8", "--bucket-size", "4MiB", "--page-size", "4KiB");
                 MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(10))) {
                Matcher serving = awaitServing(node, out, err);
                String clientId = serving.group(1);
                assertTrue(Files.readString(err).contains("connected to the master at " + masterAddress), Files.readString(err));
                ClientInfo info = client.listClients().getClientsList().stream().filter(c -> c.getClientId().equals(clientId))
                        .findFirst().orElseThrow(() -> new AssertionError("the master does not list node " + clientId));
                assertTrue(info.getAlive());

                byte[] data = new byte[70_000];
                new Random(7).nextBytes(data);
                try (NodeClient viaNode = new NodeClient(serving.group(2), Duration.ofSeconds(20))) {
                    assertEquals(ReplicaType.LOCAL_DISK, viaNode.write("default", "late", ByteBuffer.wrap(data), OffloadMode.PER_KEY)
                            .getReplica().getType());
                    ByteBuffer read = viaNode.get("default", "late").data();
                    byte[] back = new byte[read.remaining()];
                    read.get(back);
                    assertArrayEquals(data, back);
                }
            }
        } finally {
            node.destroy();
            if (!node.waitFor(20, TimeUnit.SECONDS)) {
                node.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /** Until {@code text} is in {@code log}; fails when the process exits first. */
    private static void awaitText(Process process, Path log, String text) throws Exception {
        while (!Files.readString(log).contains(text)) {
            assertTrue(process.isAlive(), "the node exited with " + (process.isAlive() ? "" : process.exitValue()) + ": "
                    + Files.readString(log));
            Thread.sleep(50);
        }
    }

    private static Matcher awaitServing(Process process, Path out, Path err) throws Exception {
        while (true) {
            Matcher m = SERVING.matcher(Files.readString(out));
            if (m.find()) {
                return m;
            }
            assertTrue(process.isAlive(), "the node exited with " + (process.isAlive() ? "" : process.exitValue()) + ": "
                    + Files.readString(err));
            Thread.sleep(50);
        }
    }
}
