package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.Status;
import io.mcctl.cli.bench.NodeProcess;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.node.NodeException;
import io.mcctl.master.proto.v1.ClientInfo;
import io.mcctl.master.proto.v1.OffloadMode;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.storage.perkey.PerKeyStore;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A master and two nodes, each a real process: offloads through node A in both modes, reads from node B (a pread of
 * the shared file for DISTRIBUTED_DISK, the RPC hop through A for LOCAL_DISK), and A killed with kill -9.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Tag("process")
class NodeProcessTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    static Path dir;
    private McctlProcess.Master master;
    private NodeProcess a;
    private NodeProcess b;
    private MasterClient client;
    private NodeClient viaA;
    private NodeClient viaB;

    /** One master and node B for the class (they start in seconds each, on two cores); a fresh node A for every test. */
    @BeforeAll
    void startMasterAndB() throws Exception {
        master = McctlProcess.Master.start(dir, Map.of(), "--root", dir.resolve("root").toString(), "--bucket-count", "8",
                "--bucket-size", "4MiB", "--page-size", "4KiB", "--client-ttl", "2s");
        b = node("b");
        client = new MasterClient(master.address(), Duration.ofSeconds(10));
        viaB = new NodeClient(b.endpoint(), Duration.ofSeconds(20));
    }

    @BeforeEach
    void startA() throws Exception {
        String name = "a-" + nodes++;
        diskA = dir.resolve("disk-" + name);
        a = node(name);
        viaA = new NodeClient(a.endpoint(), Duration.ofSeconds(20));
    }

    private int nodes;
    private Path diskA;

    private NodeProcess node(String name) throws Exception {
        return NodeProcess.start(McctlProcess.jvmOptions("128m"), Duration.ofSeconds(60), builder -> McctlProcess.prepare(builder.directory(dir.toFile()), Map.of()),
                master.address(), "--local-disk", dir.resolve("disk-" + name).toString());
    }

    @AfterEach
    void stopA() throws Exception {
        viaA.close();
        a.close();
    }

    @AfterAll
    void stopMasterAndB() throws Exception {
        viaB.close();
        client.close();
        b.close();
        master.close();
    }

    private static byte[] bytes(int size, long seed) {
        byte[] data = new byte[size];
        new Random(seed).nextBytes(data);
        return data;
    }

    private static byte[] array(ByteBuffer buffer) {
        byte[] out = new byte[buffer.remaining()];
        buffer.duplicate().get(out);
        return out;
    }

    @Test
    void node_b_reads_what_node_a_wrote_in_both_modes() throws Exception {
        byte[] perKey = bytes(300_000, 1); // more than one chunk of the stream
        byte[] paged = bytes(70_000, 2);
        assertEquals(ReplicaType.LOCAL_DISK, viaA.write("default", "ld", ByteBuffer.wrap(perKey), OffloadMode.PER_KEY).getReplica().getType());
        Files.write(dir.resolve("paged"), paged);
        McctlProcess.Done offload = McctlProcess.run(dir, Map.of(), "node", "offload", "--node", a.endpoint(), "--page-mode", "true",
                "dd", dir.resolve("paged").toString());
        assertEquals(0, offload.exitCode(), offload.err());
        assertTrue(offload.out().contains("DISTRIBUTED_DISK replica in"), offload.out());

        // The per-key file is under A's local disk, in its hashed directory.
        PerKeyStore storeA = PerKeyStore.open(diskA);
        assertEquals(perKey.length, storeA.find("default", "ld").size());
        assertTrue(storeA.fileOf("default", "ld").getParent().getParent().equals(storeA.root()));

        NodeClient.Read local = viaB.get("default", "ld");
        assertEquals(ReplicaType.LOCAL_DISK, local.type());
        assertEquals(a.clientId(), local.source(), "read through its owner, node A");
        assertArrayEquals(perKey, array(local.data()));

        McctlProcess.Done get = McctlProcess.run(dir, Map.of(), "node", "get", "--node", b.endpoint(), "dd", "--out",
                dir.resolve("dd.out").toString(), "-o", "json");
        assertEquals(0, get.exitCode(), get.err());
        JsonNode report = JSON.readTree(get.out());
        assertEquals("DISTRIBUTED_DISK", report.get("replica_type").asText());
        assertTrue(report.get("source").asText().startsWith(dir.resolve("root").toString()), get.out());
        assertArrayEquals(paged, Files.readAllBytes(dir.resolve("dd.out")));

        McctlProcess.Done status = McctlProcess.run(dir, Map.of(), "node", "status", "--master", master.address(), "-o", "json");
        assertEquals(0, status.exitCode(), status.err());
        int alive = 0;
        for (JsonNode node : JSON.readTree(status.out()).get("nodes")) {
            String id = node.get("client_id").asText();
            if (id.equals(a.clientId()) || id.equals(b.clientId())) {
                alive++;
                assertTrue(node.get("alive").asBoolean(), status.out());
                assertEquals(id.equals(a.clientId()) ? 1 : 0, node.get("local_disk_objects").asInt(), status.out());
            }
        }
        assertEquals(2, alive, status.out());
    }

    @Test
    void kill_9_of_the_owner_loses_its_local_disk_objects_and_none_in_page_mode() throws Exception {
        byte[] perKey = bytes(65_536, 3);
        byte[] paged = bytes(1 << 20, 4);
        viaA.write("default", "ld2", ByteBuffer.wrap(perKey), OffloadMode.PER_KEY);
        viaA.write("default", "dd2", ByteBuffer.wrap(paged), OffloadMode.PAGE_MODE);
        a.kill();
        while (alive(a.clientId())) {
            Thread.sleep(100); // until the master's client monitor finds A's TTL passed
        }
        ClientInfo dead = info(a.clientId());
        assertEquals(1, dead.getCleanedReplicas());

        NodeException gone = assertThrows(NodeException.class, () -> viaB.get("default", "ld2"));
        assertEquals(Status.Code.NOT_FOUND, gone.code());
        assertEquals(1, gone.getMessage().lines().count());
        // The metadata is gone although the bytes are intact on A's disk: the owner coupling the RFC criticises.
        assertEquals(perKey.length, PerKeyStore.open(diskA).find("default", "ld2").size());

        assertArrayEquals(paged, array(viaB.get("default", "dd2").data()));
        assertTrue(info(b.clientId()).getAlive());
    }

    @Test
    void bad_input_gets_one_line_and_changes_nothing() throws Exception {
        NodeException notHeld = assertThrows(NodeException.class, () -> viaA.readLocal("default", "nothing-here"));
        assertEquals(Status.Code.NOT_FOUND, notHeld.code());
        assertTrue(notHeld.getMessage().contains("holds no LOCAL_DISK object for key 'nothing-here'"), notHeld.getMessage());

        viaA.write("default", "taken", ByteBuffer.wrap(bytes(1000, 5)), OffloadMode.PER_KEY);
        NodeException twice = assertThrows(NodeException.class,
                () -> viaB.write("default", "taken", ByteBuffer.wrap(bytes(1000, 6)), OffloadMode.PER_KEY));
        assertEquals(Status.Code.ALREADY_EXISTS, twice.code());
        assertTrue(twice.getMessage().contains("owned by client " + a.clientId()), twice.getMessage());
        assertEquals(a.clientId(), client.replicaList("default", "taken").getReplicas(0).getLocalDisk().getClientId());
        assertEquals(null, PerKeyStore.open(dir.resolve("disk-b")).find("default", "taken"));

        long registered = client.listClients().getClientsCount();
        Map<String, String> refusals = Map.of("0", "invalid --memory '0': 0 is too small for a DRAM segment: allowed is at least 1MiB",
                "bogus", "invalid --memory 'bogus' (not a size): allowed is a whole number of bytes",
                "64GiB", "is more than this JVM may allocate off-heap");
        for (Map.Entry<String, String> refusal : refusals.entrySet()) {
            McctlProcess.Done memory = McctlProcess.run(dir, Map.of(), "node", "start", "--master", master.address(), "--memory",
                    refusal.getKey());
            assertEquals(ExitCodes.USAGE, memory.exitCode(), memory.err());
            assertEquals(1, memory.err().lines().count(), memory.err());
            assertTrue(memory.err().contains(refusal.getValue()), memory.err());
            assertFalse(memory.out().contains("serving"));
        }
        assertEquals(registered, client.listClients().getClientsCount());
    }

    private boolean alive(String clientId) {
        return info(clientId).getAlive();
    }

    private ClientInfo info(String clientId) {
        return client.listClients().getClientsList().stream().filter(c -> c.getClientId().equals(clientId)).findFirst().orElseThrow();
    }
}
