package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.mcctl.cli.bench.NodeProcess;
import io.mcctl.cli.bench.Signals;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.node.NodeException;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ListPromotionsRequest;
import io.mcctl.master.proto.v1.ListPromotionsResponse;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.proto.v1.MemoryDescriptor;
import io.mcctl.master.proto.v1.OffloadMode;
import io.mcctl.master.proto.v1.PromoteRequest;
import io.mcctl.master.proto.v1.PromotionTask;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaStatus;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.testkit.FreePorts;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Promotion into a node's DRAM segment with real processes: a master, node A with a segment and node B without. An
 * object promoted to A is read from A's segment through B, and from the bucket file once A is killed with kill -9; a
 * source that fails its CRC32C leaves nothing behind; a task queued while the only memory node is stopped survives a
 * kill -9 of the master and is taken when the node resumes; offloads straight into the segment.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
@Tag("process")
class PromotionProcessTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration DEADLINE = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    private McctlProcess.Master startMaster(String... more) {
        List<String> args = new java.util.ArrayList<>(List.of("--root", dir.resolve("root").toString(), "--bucket-count", "4",
                "--bucket-size", "4MiB", "--page-size", "4KiB", "--client-ttl", "2s", "--promotion-reads", "0")); // only Promote queues
        args.addAll(List.of(more));
        try {
            return McctlProcess.Master.start(dir, Map.of(), args.toArray(String[]::new));
        } catch (Exception e) {
            throw new AssertionError(e.getMessage(), e);
        }
    }

    private NodeProcess node(String master, String... args) throws Exception {
        return node(Map.of(), master, args);
    }

    /** A node whose environment has {@code env} too. */
    private NodeProcess node(Map<String, String> env, String master, String... args) throws Exception {
        return NodeProcess.start(McctlProcess.jvmOptions("128m"), Duration.ofSeconds(60), builder -> McctlProcess.prepare(builder.directory(dir.toFile()),
                env), master, args);
    }

    /** The environment of a node moving bucket-file bytes through {@code io}; for usrbio the root is made a stand-in 3FS mount. */
    private Map<String, String> io(String io) throws Exception {
        if (io.equals("posix")) {
            return Map.of("MOONCAKE_DISTRIBUTED_IO", "posix");
        }
        Standin.markMount(dir.resolve("root"));
        return Map.of("MOONCAKE_DISTRIBUTED_IO", "usrbio", "MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY", Standin.library().toString());
    }

    private static byte[] bytes(int size, long seed) {
        byte[] data = new byte[size];
        new Random(seed).nextBytes(data);
        return data;
    }

    /** The master's promotion RPCs, called as an operator's tool would. */
    private record Promotions(ManagedChannel channel, MasterServiceGrpc.MasterServiceBlockingStub stub) implements AutoCloseable {
        static Promotions of(String address) {
            ManagedChannel channel = NettyChannelBuilder.forTarget(address).usePlaintext().build();
            return new Promotions(channel, MasterServiceGrpc.newBlockingStub(channel));
        }

        PromotionTask promote(String key) {
            return stub.withDeadlineAfter(10, TimeUnit.SECONDS).promote(PromoteRequest.newBuilder().setTenantId("default").setKey(key).build())
                    .getTask();
        }

        ListPromotionsResponse list() {
            return stub.withDeadlineAfter(10, TimeUnit.SECONDS).listPromotions(ListPromotionsRequest.getDefaultInstance());
        }

        boolean holdsTaskFor(String key) {
            return list().getTasksList().stream().anyMatch(t -> t.getKey().equals(key));
        }

        @Override
        public void close() {
            channel.shutdownNow();
        }
    }

    /** Polls {@code condition} until it holds (a failing call counts as not yet) or the deadline passes. */
    static boolean await(Callable<Boolean> condition) throws InterruptedException {
        long end = System.nanoTime() + DEADLINE.toNanos();
        while (System.nanoTime() - end < 0) {
            try {
                if (condition.call()) {
                    return true;
                }
            } catch (Exception e) {
                // the master restarting, say: try again
            }
            Thread.sleep(100);
        }
        return false;
    }

    private static Optional<Replica> replica(MasterClient client, String key, ReplicaType type) {
        return client.replicaList("default", key).getReplicasList().stream().filter(r -> r.getType() == type).findFirst();
    }

    private static boolean completeMemoryOn(MasterClient client, String key, String clientId) {
        return replica(client, key, ReplicaType.MEMORY).filter(r -> r.getStatus() == ReplicaStatus.COMPLETE
                && r.getMemory().getClientId().equals(clientId)).isPresent();
    }

    private JsonNode nodeStatus(String master, String clientId) throws Exception {
        McctlProcess.Done status = McctlProcess.run(dir, Map.of(), "node", "status", "--master", master, "-o", "json");
        assertEquals(0, status.exitCode(), status.err());
        for (JsonNode node : JSON.readTree(status.out()).get("nodes")) {
            if (node.get("client_id").asText().equals(clientId)) {
                return node;
            }
        }
        throw new AssertionError("node " + clientId + " is not in " + status.out());
    }

    private JsonNode getThrough(NodeProcess node, String key, byte[] expected) throws Exception {
        Path out = dir.resolve(key + ".out");
        McctlProcess.Done get = McctlProcess.run(dir, Map.of(), "node", "get", "--node", node.endpoint(), key, "--out", out.toString(),
                "-o", "json");
        assertEquals(0, get.exitCode(), get.err());
        assertArrayEquals(expected, Files.readAllBytes(out), key + " read through " + node.clientId());
        return JSON.readTree(get.out());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "usrbio"})
    void a_promoted_object_is_read_from_the_holders_segment_and_from_the_bucket_file_once_the_holder_is_killed(String io) throws Exception {
        Map<String, String> env = io(io);
        try (McctlProcess.Master master = startMaster();
             MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(10));
             Promotions promotions = Promotions.of(master.address());
             NodeProcess a = node(env, master.address(), "--memory", "8MiB", "--promotion-interval", "100ms");
             NodeProcess b = node(env, master.address());
             NodeClient viaB = new NodeClient(b.endpoint(), Duration.ofSeconds(20))) {
            byte[] data = bytes(300_000, 1); // more than one message of the stream
            assertEquals(ReplicaType.DISTRIBUTED_DISK, viaB.write("default", "hot", ByteBuffer.wrap(data), OffloadMode.PAGE_MODE)
                    .getReplica().getType());
            promotions.promote("hot");
            assertTrue(await(() -> completeMemoryOn(client, "hot", a.clientId())), "no COMPLETE MEMORY replica on A: " + a.log());
            assertTrue(a.log().contains("bucket-file IO " + io + ": "), a.log());
            assertEquals(ReplicaType.MEMORY, client.replicaList("default", "hot").getReplicas(0).getType(), "MEMORY is listed first");
            assertTrue(await(() -> !promotions.holdsTaskFor("hot")), "the task ended");

            JsonNode read = getThrough(b, "hot", data);
            assertEquals("MEMORY", read.get("replica_type").asText(), read.toString());
            assertEquals(a.clientId(), read.get("source").asText());
            NodeClient.Read own;
            try (NodeClient viaA = new NodeClient(a.endpoint(), Duration.ofSeconds(20))) {
                own = viaA.get("default", "hot");
            }
            assertEquals(ReplicaType.MEMORY, own.type(), "A reads its own segment");
            JsonNode statusA = nodeStatus(master.address(), a.clientId());
            assertEquals(8 << 20, statusA.get("memory_bytes").asLong(), statusA.toString());
            assertEquals(1, statusA.get("memory_objects").asLong(), statusA.toString());
            assertTrue(statusA.get("memory_used_bytes").asLong() >= data.length, statusA.toString());
            assertEquals(0, nodeStatus(master.address(), b.clientId()).get("memory_bytes").asLong());

            a.kill();
            JsonNode fallback = getThrough(b, "hot", data);
            assertEquals("DISTRIBUTED_DISK", fallback.get("replica_type").asText(), fallback.toString());
            if (replica(client, "hot", ReplicaType.MEMORY).isPresent()) { // the read came before A's TTL passed
                assertTrue(fallback.get("skipped").toString().contains("MEMORY on client " + a.clientId()), fallback.toString());
            }
            assertTrue(await(() -> replica(client, "hot", ReplicaType.MEMORY).isEmpty()), "the master kept A's MEMORY replica");
            assertEquals("DISTRIBUTED_DISK", getThrough(b, "hot", data).get("replica_type").asText());
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "usrbio"})
    void a_promotion_whose_source_fails_its_checksum_leaves_no_task_no_replica_and_no_segment_bytes(String io) throws Exception {
        Map<String, String> env = io(io);
        try (McctlProcess.Master master = startMaster();
             MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(10));
             Promotions promotions = Promotions.of(master.address());
             NodeProcess a = node(env, master.address(), "--memory", "4MiB", "--promotion-interval", "100ms");
             NodeClient viaA = new NodeClient(a.endpoint(), Duration.ofSeconds(20))) {
            byte[] data = bytes(100_000, 2);
            DistributedDiskDescriptor place = viaA.write("default", "rotten", ByteBuffer.wrap(data), OffloadMode.PAGE_MODE).getReplica()
                    .getDistributedDisk();
            try (FileChannel bucket = FileChannel.open(Path.of(place.getFilePath()), StandardOpenOption.WRITE)) {
                bucket.write(ByteBuffer.wrap(bytes(64, 99)), place.getOffset() + 4096); // garbage inside the object
            }
            long failedBefore = promotions.list().getFailedTotal();
            promotions.promote("rotten");
            assertTrue(await(() -> promotions.list().getFailedTotal() > failedBefore), "the promotion never failed: " + a.log());
            assertTrue(await(() -> !promotions.holdsTaskFor("rotten")), "the failed task stayed");
            assertTrue(a.log().contains("CRC mismatch"), a.log());
            assertTrue(replica(client, "rotten", ReplicaType.MEMORY).isEmpty(), "a MEMORY replica of a failed promotion");
            assertTrue(await(() -> nodeStatus(master.address(), a.clientId()).get("memory_used_bytes").asLong() == 0),
                    "segment bytes held after the failure");
            JsonNode status = nodeStatus(master.address(), a.clientId());
            assertEquals(0, status.get("memory_objects").asLong(), status.toString());
            assertEquals(0, status.get("promotions_held").asLong(), status.toString());
            NodeException notHeld = assertThrows(NodeException.class, () -> viaA.readLocal("default", "rotten", ReplicaType.MEMORY));
            assertEquals(Status.Code.NOT_FOUND, notHeld.code());
        }
    }

    @Test
    void a_task_queued_while_the_only_memory_node_is_stopped_survives_a_master_kill_9_and_is_taken_when_the_node_resumes()
            throws Exception {
        int port = FreePorts.one();
        byte[] data = bytes(200_000, 3);
        McctlProcess.Master first = startMaster("--port", String.valueOf(port));
        NodeProcess a = node(first.address(), "--memory", "4MiB", "--promotion-interval", "100ms");
        McctlProcess.Master second = null;
        try {
            try (NodeClient viaA = new NodeClient(a.endpoint(), Duration.ofSeconds(20))) {
                viaA.write("default", "queued", ByteBuffer.wrap(data), OffloadMode.PAGE_MODE);
            }
            Signals.send(a.process().pid(), "STOP");
            try (Promotions promotions = Promotions.of(first.address())) {
                PromotionTask task = promotions.promote("queued");
                assertEquals("queued", task.getKey());
                assertTrue(promotions.holdsTaskFor("queued"));
            }
            CrashRestartProcessTest.kill9(first);
            first.close();
            second = startMaster("--port", String.valueOf(port));
            try (Promotions promotions = Promotions.of(second.address());
                 MasterClient client = new MasterClient(second.address(), Duration.ofSeconds(10))) {
                assertTrue(promotions.holdsTaskFor("queued"), "the queued task did not survive the restart");
                Signals.send(a.process().pid(), "CONT");
                assertTrue(await(() -> completeMemoryOn(client, "queued", a.clientId())), "A never promoted it: " + a.log());
                assertTrue(await(() -> !promotions.holdsTaskFor("queued")), "the task stayed");
                try (NodeClient viaA = new NodeClient(a.endpoint(), Duration.ofSeconds(20))) {
                    NodeClient.Read read = viaA.get("default", "queued");
                    assertEquals(ReplicaType.MEMORY, read.type());
                    assertArrayEquals(data, array(read.data()));
                }
            }
        } finally {
            Signals.send(a.process().pid(), "CONT");
            a.close();
            first.close();
            if (second != null) {
                second.close();
            }
        }
    }

    @Test
    void an_offload_into_a_segment_reads_back_through_any_node_and_a_node_without_one_refuses_it() throws Exception {
        try (McctlProcess.Master master = startMaster();
             MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(10));
             NodeProcess a = node(master.address(), "--memory", "4MiB");
             NodeProcess b = node(master.address())) {
            byte[] data = bytes(70_000, 4);
            Path file = dir.resolve("in-memory");
            Files.write(file, data);
            McctlProcess.Done offload = McctlProcess.run(dir, Map.of(), "node", "offload", "--node", a.endpoint(), "--mode", "memory",
                    "mem", file.toString(), "-o", "json");
            assertEquals(0, offload.exitCode(), offload.err());
            assertEquals("MEMORY", JSON.readTree(offload.out()).get("replica_type").asText(), offload.out());
            MemoryDescriptor held = replica(client, "mem", ReplicaType.MEMORY).orElseThrow().getMemory();
            assertEquals(a.clientId(), held.getClientId());
            assertEquals(data.length, held.getSize());

            JsonNode read = getThrough(b, "mem", data);
            assertEquals("MEMORY", read.get("replica_type").asText());
            assertEquals(a.clientId(), read.get("source").asText());

            McctlProcess.Done refused = McctlProcess.run(dir, Map.of(), "node", "offload", "--node", b.endpoint(), "--mode", "memory",
                    "mem-b", file.toString());
            assertEquals(ExitCodes.USAGE, refused.exitCode(), refused.err());
            assertEquals(1, refused.err().lines().count(), refused.err());
            assertTrue(refused.err().contains("has no DRAM segment"), refused.err());
            assertFalse(client.exists("default", "mem-b"));

            McctlProcess.Done bogus = McctlProcess.run(dir, Map.of(), "node", "offload", "--node", a.endpoint(), "--mode", "ram",
                    "mem-c", file.toString());
            assertEquals(ExitCodes.USAGE, bogus.exitCode(), bogus.err());
            assertTrue(bogus.err().contains("invalid --mode 'ram': allowed is page, per-key or memory"), bogus.err());
            assertFalse(client.exists("default", "mem-c"));
        }
    }

    private static byte[] array(ByteBuffer buffer) {
        byte[] out = new byte[buffer.remaining()];
        buffer.duplicate().get(out);
        return out;
    }
}
