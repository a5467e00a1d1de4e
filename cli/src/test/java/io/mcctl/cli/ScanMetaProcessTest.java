package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.cli.bench.NodeProcess;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.proto.v1.OffloadMode;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.testkit.FreePorts;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * ScanMeta with real processes: a node reports the per-key files it holds after every registration, so a kill -9 of
 * the master, or of the node restarted over the same directory, does not lose LOCAL_DISK objects whose files are intact.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@Tag("process")
class ScanMetaProcessTest {

    @TempDir
    Path dir;

    private McctlProcess.Master master(int port) throws Exception {
        return McctlProcess.Master.start(dir, Map.of(), "--root", dir.resolve("root").toString(), "--bucket-count", "4",
                "--bucket-size", "4MiB", "--page-size", "4KiB", "--client-ttl", "2s", "--port", String.valueOf(port));
    }

    private NodeProcess node(String master, String disk) throws Exception {
        return NodeProcess.start(McctlProcess.jvmOptions("128m"), Duration.ofSeconds(60), b -> McctlProcess.prepare(b.directory(dir.toFile()), Map.of()),
                master, "--local-disk", dir.resolve(disk).toString());
    }

    @Test
    void local_disk_objects_come_back_after_a_master_kill_9_and_after_their_node_restarts() throws Exception {
        byte[] data = new byte[150_000];
        new Random(9).nextBytes(data);
        int port = FreePorts.one();
        McctlProcess.Master first = master(port);
        McctlProcess.Master second = null;
        NodeProcess a = node(first.address(), "disk-a");
        NodeProcess b = node(first.address(), "disk-b");
        NodeProcess again = null;
        try (NodeClient viaA = new NodeClient(a.endpoint(), Duration.ofSeconds(20));
             NodeClient viaB = new NodeClient(b.endpoint(), Duration.ofSeconds(20))) {
            viaA.write("default", "ld", ByteBuffer.wrap(data), OffloadMode.PER_KEY);
            CrashRestartProcessTest.kill9(first);
            second = master(port);
            try (MasterClient client = new MasterClient(second.address(), Duration.ofSeconds(10))) {
                String owner = a.clientId();
                assertTrue(PromotionProcessTest.await(() -> ownedBy(client, owner)), "A never reported its file again: " + a.log());
                // B's channel to the master may still be backing off from the master's downtime (gRPC reconnects on its
                // own schedule): its read is asked until the channel is back.
                NodeClient.Read[] got = new NodeClient.Read[1];
                assertTrue(PromotionProcessTest.await(() -> (got[0] = viaB.get("default", "ld")) != null), "B never read 'ld': " + b.log());
                NodeClient.Read read = got[0];
                assertEquals(ReplicaType.LOCAL_DISK, read.type());
                assertEquals(a.clientId(), read.source());
                assertArrayEquals(data, bytes(read));

                // A dies and a new node starts over its directory: once the old registration's TTL has removed its replica,
                // the new one's report records the intact file under the new id.
                a.kill();
                assertTrue(PromotionProcessTest.await(() -> missing(client)), "A's replica outlived its TTL");
                again = node(second.address(), "disk-a");
                String newOwner = again.clientId();
                assertTrue(PromotionProcessTest.await(() -> ownedBy(client, newOwner)), "the restarted node never reported the file: " + again.log());
                assertArrayEquals(data, bytes(viaB.get("default", "ld")));
            }
        } finally {
            for (NodeProcess node : new NodeProcess[] {a, b, again}) {
                if (node != null) {
                    node.close();
                }
            }
            first.close();
            if (second != null) {
                second.close();
            }
        }
    }

    private static boolean missing(MasterClient client) {
        try {
            client.replicaList("default", "ld");
            return false;
        } catch (io.mcctl.master.client.MasterException e) {
            return e.code() == io.mcctl.master.proto.v1.ErrorCode.OBJECT_NOT_FOUND;
        }
    }

    private static boolean ownedBy(MasterClient client, String owner) {
        var list = client.replicaList("default", "ld");
        for (Replica replica : list.getReplicasList()) {
            if (replica.getType() == ReplicaType.LOCAL_DISK && replica.getLocalDisk().getClientId().equals(owner)) {
                return true;
            }
        }
        return false;
    }

    private static byte[] bytes(NodeClient.Read read) {
        ByteBuffer data = read.data().duplicate();
        byte[] out = new byte[data.remaining()];
        data.get(out);
        return out;
    }
}
