package io.mcctl.master.node;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.OffloadMode;
import io.mcctl.master.proto.v1.ReplicaType;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reader takes the best replica it can reach and falls back to the next: a node that does not mount the shared root
 * reads a key's LOCAL_DISK replica through its owner, and when the owner is gone too it says why for each replica.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReplicaFallbackTest {

    @TempDir
    Path dir;

    @Test
    void a_reader_without_the_shared_root_falls_back_to_the_owner_and_names_each_replica_it_could_not_read() throws Exception {
        byte[] data = new byte[300_000];
        new Random(7).nextBytes(data);
        try (TierCluster cluster = TierCluster.start(dir.resolve("root"), 4, 0);
             MasterClient master = cluster.newClient()) {
            TierCluster.Node mounted = cluster.addNode();
            NodeServer owner = NodeServer.start(new NodeServer.Options(cluster.target(), "127.0.0.1", 0, null, dir.resolve("disk"), true,
                    Duration.ofSeconds(10), ClientSecurity.NONE));
            try (NodeClient viaOwner = new NodeClient(owner.endpoint(), Duration.ofSeconds(10));
                 ReplicaReader unmounted = new ReplicaReader(master, null, null, null, Duration.ofSeconds(5));
                 ReplicaReader direct = new ReplicaReader(master, mounted.tier(), null, null, Duration.ofSeconds(5))) {
                viaOwner.write("t", "both", ByteBuffer.wrap(data), OffloadMode.PER_KEY);
                viaOwner.write("t", "both", ByteBuffer.wrap(data), OffloadMode.PAGE_MODE);
                assertEquals(List.of(ReplicaType.DISTRIBUTED_DISK, ReplicaType.LOCAL_DISK),
                        master.replicaList("t", "both").getReplicasList().stream().map(r -> r.getType()).toList());

                NodeClient.Read best = direct.read("t", "both");
                assertEquals(ReplicaType.DISTRIBUTED_DISK, best.type());
                assertEquals(List.of(), best.skipped());

                NodeClient.Read fallback = unmounted.read("t", "both");
                assertEquals(ReplicaType.LOCAL_DISK, fallback.type());
                assertEquals(owner.clientId(), fallback.source());
                assertTrue(fallback.skipped().get(0).contains("the shared root is not mounted on this node"), fallback.skipped().toString());
                byte[] got = new byte[fallback.data().remaining()];
                fallback.data().get(got);
                assertArrayEquals(data, got);

                owner.close(); // gone, but within its TTL: the master still lists its replica
                NodeException none = assertThrows(NodeException.class, () -> unmounted.read("t", "both"));
                assertEquals(Status.Code.UNAVAILABLE, none.code());
                assertEquals(1, none.getMessage().lines().count());
                assertTrue(none.getMessage().contains("not mounted") && none.getMessage().contains("cannot reach the node at " + owner.endpoint()),
                        none.getMessage());
                assertEquals(ReplicaType.DISTRIBUTED_DISK, direct.read("t", "both").type());
            } finally {
                owner.close();
            }
        }
    }
}
