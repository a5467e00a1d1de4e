package io.mcctl.master.dram;

import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.protocol.PromotionTasks;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.ClientInfo;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetReplicaListResponse;
import io.mcctl.master.proto.v1.ListPromotionsResponse;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.master.proto.v1.PromotionTask;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaStatus;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.master.server.MasterServer;
import io.mcctl.master.server.MasterSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Promotion into the DRAM tier through the master's real RPCs on loopback: the test plays the node's part (register with
 * a segment, heartbeat, notify), as a node process does; the node's own copy is tested with real node processes.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class PromotionTest {

    @TempDir
    Path dir;
    private TierCluster cluster;
    private MasterClient client;
    private final String node = UUID.randomUUID().toString();

    @BeforeEach
    void start() throws Exception {
        startWithClientTtl("60s"); // no node here misses it between calls on a loaded machine, unless a test says otherwise
    }

    private void startWithClientTtl(String ttl) throws Exception {
        cluster = TierCluster.start(options(Map.of(MasterSettings.CLIENT_TTL.key(), ttl, MasterSettings.PROMOTION_READS.key(), "3")), 1);
        client = cluster.newClient();
    }

    /** The master stopped (its state directory kept) and started again with this client TTL. */
    private void restartWithClientTtl(String ttl) throws Exception {
        client.close();
        client = null;
        cluster.close();
        startWithClientTtl(ttl);
    }

    private MasterServer.Options options(Map<String, String> settings) {
        return MasterServer.Options.builder(TierCluster.smallLayout(dir.resolve("root"), 4)).fsType("test")
                .stateDir(dir.resolve("state")).snapshotInterval(null).settings(settings).build();
    }

    @AfterEach
    void stop() throws Exception {
        if (client != null) {
            client.close();
        }
        cluster.close();
    }

    private DistributedDiskDescriptor offload(String key, int size) {
        TierWriter.Outcome written = cluster.node(0).writer().offload("t", List.of(object(key, size)), true).get(0);
        assertTrue(written.ok(), written.toString());
        return written.descriptor();
    }

    private void registerNode(String id, long memoryBytes) {
        client.registerClient(id, "127.0.0.1:7001", "", true, memoryBytes);
    }

    private ClientInfo info(String id) {
        return client.listClients().getClientsList().stream().filter(c -> c.getClientId().equals(id)).findFirst().orElseThrow();
    }

    @Test
    void a_promoted_object_is_staged_in_the_takers_segment_then_listed_first_as_a_complete_MEMORY_replica() {
        DistributedDiskDescriptor source = offload("hot", 100_000);
        registerNode(node, 8L << 20);
        PromotionTask queued = client.promote("t", "hot");
        assertEquals(PromotionTasks.ANY_NODE, queued.getHolderId(), "a queued task may be taken by any node");
        assertEquals(source.getOffset(), queued.getSource().getOffset());

        List<PromotionTask> taken = client.promotionHeartbeat(node, 0);
        assertEquals(1, taken.size());
        PromotionTask task = taken.get(0);
        assertEquals(node, task.getHolderId());
        assertEquals(source.getCrc32C(), task.getSource().getCrc32C());
        assertEquals(100_000, task.getStaged().getSize());
        assertEquals(node, task.getStaged().getClientId());
        assertEquals(1, info(node).getPromotionsHeld());
        assertTrue(info(node).getMemoryUsedBytes() >= 100_000);
        assertEquals(List.of(), client.promotionHeartbeat(node, 0), "a held task is not handed out twice");
        // Staged, not complete: readers do not see it yet.
        assertEquals(List.of(ReplicaType.DISTRIBUTED_DISK), types(client.replicaList("t", "hot")));

        Replica complete = client.notifyPromotionSuccess(node, "t", "hot", source.getCrc32C());
        assertEquals(ReplicaStatus.COMPLETE, complete.getStatus());
        assertEquals(List.of(ReplicaType.MEMORY, ReplicaType.DISTRIBUTED_DISK), types(client.replicaList("t", "hot")));
        MappingResult mapped = client.batchGetMapping(List.of("hot"), List.of("t")).getResults(0);
        assertEquals(1, mapped.getMemoryCount(), "lookups name the DRAM copy beside the descriptor");
        assertEquals(task.getStaged().getBufferAddress(), mapped.getMemory(0).getMemory().getBufferAddress());
        assertEquals(source.getCrc32C(), mapped.getMemory(0).getMemory().getCrc32C());
        io.mcctl.master.proto.v1.BatchGetDistributedPageMappingResponse packed = client.batchGetMappingPacked(List.of("cold", "hot"),
                List.of("t", "t"));
        assertEquals(Set.of(1), packed.getMemoryMap().keySet(), "a packed answer names the DRAM copy by the key's index");
        assertEquals(mapped.getMemoryList(), packed.getMemoryOrThrow(1).getReplicasList());
        ListPromotionsResponse after = client.listPromotions();
        assertEquals(0, after.getTasksCount(), "the task and its pin are gone");
        assertEquals(1, after.getSucceededTotal());
        assertEquals(1, after.getMemoryObjects());
        assertEquals(0, info(node).getPromotionsHeld());
        assertEquals(1, info(node).getMemoryObjects());
        io.mcctl.master.proto.v1.GetStatsResponse stats = client.stats();
        assertEquals(1, stats.getNodesAlive());
        assertEquals(8L << 20, stats.getMemorySegmentBytes());
        assertEquals(1, stats.getMemoryObjects());
        assertEquals(100_000, stats.getMemoryBytes());
        assertEquals(0, stats.getPromotionTasks());
        assertEquals(1, stats.getPromotionsSucceeded());
        assertThrows(MasterException.class, () -> client.promote("t", "hot"), "in DRAM already");
    }

    @Test
    void a_copy_with_the_wrong_checksum_leaves_no_task_no_staged_replica_and_no_segment_bytes_behind() {
        DistributedDiskDescriptor source = offload("bad-copy", 50_000);
        registerNode(node, 8L << 20);
        client.promote("t", "bad-copy");
        assertEquals(1, client.promotionHeartbeat(node, 0).size());
        MasterException e = assertThrows(MasterException.class, () -> client.notifyPromotionSuccess(node, "t", "bad-copy", source.getCrc32C() + 1));
        assertEquals(ErrorCode.INVALID_PARAMS, e.code());
        assertTrue(e.getMessage().contains("not the source's"), e.getMessage());
        assertNothingLeft("bad-copy");
        assertEquals(1, client.listPromotions().getFailedTotal());
    }

    @Test
    void a_notified_failure_leaves_nothing_behind() {
        offload("fails", 50_000);
        registerNode(node, 8L << 20);
        client.promote("t", "fails");
        assertEquals(1, client.promotionHeartbeat(node, 0).size());
        client.notifyPromotionFailure(node, "t", "fails", "short read");
        assertNothingLeft("fails");
    }

    private void assertNothingLeft(String key) {
        assertEquals(0, client.listPromotions().getTasksCount());
        assertEquals(List.of(ReplicaType.DISTRIBUTED_DISK), types(client.replicaList("t", key)));
        assertEquals(0, info(node).getMemoryUsedBytes());
        assertEquals(0, info(node).getPromotionsHeld());
    }

    @Test
    void a_notify_for_a_task_the_node_does_not_hold_is_refused_and_changes_nothing() {
        DistributedDiskDescriptor source = offload("held", 50_000);
        String other = UUID.randomUUID().toString();
        registerNode(node, 8L << 20);
        registerNode(other, 8L << 20);
        client.promote("t", "held");
        assertEquals(1, client.promotionHeartbeat(node, 0).size());
        MasterException e = assertThrows(MasterException.class, () -> client.notifyPromotionSuccess(other, "t", "held", source.getCrc32C()));
        assertEquals(ErrorCode.INVALID_PARAMS, e.code());
        assertEquals(1, e.getMessage().lines().count());
        assertTrue(e.getMessage().contains("client " + other + " holds no promotion task of key 'held'"), e.getMessage());
        assertThrows(MasterException.class, () -> client.notifyPromotionFailure(other, "t", "held", "not mine"));
        assertThrows(MasterException.class, () -> client.notifyPromotionSuccess(node, "t", "never-queued", 1));
        List<PromotionTask> tasks = client.listPromotions().getTasksList();
        assertEquals(1, tasks.size());
        assertEquals(node, tasks.get(0).getHolderId(), "still held by the node that took it");
        assertEquals(0, info(other).getMemoryUsedBytes());
        client.notifyPromotionSuccess(node, "t", "held", source.getCrc32C());
        assertEquals(ReplicaType.MEMORY, client.replicaList("t", "held").getReplicas(0).getType());
    }

    @Test
    void bad_segments_and_heartbeats_are_refused_in_one_line_and_a_node_without_DRAM_takes_no_task() {
        MasterException small = assertThrows(MasterException.class, () -> registerNode(node, 4096));
        assertEquals(ErrorCode.INVALID_PARAMS, small.code());
        assertTrue(small.getMessage().contains("memory_bytes 4096 is outside"), small.getMessage());
        assertEquals(0, client.listClients().getClientsCount(), "nothing registered");
        MasterException unknown = assertThrows(MasterException.class, () -> client.promotionHeartbeat(node, 0));
        assertTrue(unknown.getMessage().contains("not registered"), unknown.getMessage());
        registerNode(node, 0);
        offload("k", 10_000);
        client.promote("t", "k");
        assertEquals(List.of(), client.promotionHeartbeat(node, 0));
        assertThrows(MasterException.class, () -> client.promotionHeartbeat(node, 65));
        assertEquals(PromotionTasks.ANY_NODE, client.listPromotions().getTasks(0).getHolderId(), "still queued for a node with DRAM");
        MasterException missing = assertThrows(MasterException.class, () -> client.promote("t", "no-such-key"));
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, missing.code());
    }

    @Test
    void a_remove_while_the_copy_runs_ends_the_task_and_the_late_success_is_refused() {
        DistributedDiskDescriptor source = offload("removed", 50_000);
        registerNode(node, 8L << 20);
        client.promote("t", "removed");
        assertEquals(1, client.promotionHeartbeat(node, 0).size());
        client.remove("t", "removed");
        assertEquals(0, client.listPromotions().getTasksCount(), "the remove ended the task with its source");
        MasterException e = assertThrows(MasterException.class, () -> client.notifyPromotionSuccess(node, "t", "removed", source.getCrc32C()));
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, e.code());
        assertEquals(0, info(node).getMemoryUsedBytes());
        assertThrows(MasterException.class, () -> client.replicaList("t", "removed"));
    }

    @Test
    void an_overwrite_hides_the_DRAM_copy_of_the_old_object() {
        DistributedDiskDescriptor source = offload("v", 50_000);
        registerNode(node, 8L << 20);
        client.promote("t", "v");
        client.promotionHeartbeat(node, 0);
        client.notifyPromotionSuccess(node, "t", "v", source.getCrc32C());
        assertEquals(ReplicaType.MEMORY, client.replicaList("t", "v").getReplicas(0).getType());
        offload("v", 60_000);
        assertEquals(List.of(ReplicaType.DISTRIBUTED_DISK), types(client.replicaList("t", "v")), "the copy is of the old object");
        assertEquals(0, client.batchGetMapping(List.of("v"), List.of("t")).getResults(0).getMemoryCount());
        assertEquals(0, info(node).getMemoryUsedBytes(), "and its pages are free");
    }

    /** Promotes {@code key} into {@code node}'s segment through the RPCs a node calls. */
    private void promoteInto(String id, String key, DistributedDiskDescriptor source) {
        client.promote("t", key);
        assertEquals(1, client.promotionHeartbeat(id, 1).size(), key);
        client.notifyPromotionSuccess(id, "t", key, source.getCrc32C());
    }

    private boolean inDram(String key) {
        return client.batchGetMapping(List.of(key), List.of("t")).getResults(0).getMemoryCount() == 1;
    }

    @Test
    void a_full_segment_evicts_its_least_recently_read_copies_down_to_the_low_watermark() {
        registerNode(node, 1L << 20); // 256 pages of 4 KiB: three objects of 74 pages pass 95% with a fourth
        Map<String, DistributedDiskDescriptor> sources = new java.util.LinkedHashMap<>();
        for (String key : List.of("a", "b", "c", "d")) {
            sources.put(key, offload(key, 300_000));
        }
        for (String key : List.of("a", "b", "c")) {
            promoteInto(node, key, sources.get(key));
        }
        assertTrue(inDram("a")); // read: the most recently used copy
        promoteInto(node, "d", sources.get("d"));
        assertTrue(inDram("a"), "the copy read last stays");
        assertTrue(inDram("d"), "the new copy is in");
        assertFalse(inDram("b"));
        assertFalse(inDram("c"));
        ListPromotionsResponse listed = client.listPromotions();
        assertEquals(2, listed.getMemoryEvictedTotal(), "down to the low watermark: two went for one");
        assertEquals(2, listed.getMemoryObjects());
        assertTrue(info(node).getMemoryUsedBytes() <= 0.85 * (1 << 20), "used " + info(node).getMemoryUsedBytes());
        assertEquals(List.of(ReplicaType.DISTRIBUTED_DISK), types(client.replicaList("t", "b")), "an evicted copy leaves its object");
    }

    @Test
    void a_remove_takes_the_keys_DRAM_copy_with_it_whether_put_or_promoted() {
        registerNode(node, 8L << 20);
        Replica put = client.putStart(node, "t", "in-dram", 5000, ReplicaType.MEMORY);
        assertEquals(ReplicaStatus.PROCESSING, put.getStatus());
        client.putEnd(node, "t", "in-dram", ReplicaType.MEMORY, 77);
        assertEquals(List.of(ReplicaType.MEMORY), types(client.replicaList("t", "in-dram")));
        client.remove("t", "in-dram"); // no DISTRIBUTED_DISK object, yet the remove finds the key
        assertThrows(MasterException.class, () -> client.replicaList("t", "in-dram"));
        DistributedDiskDescriptor source = offload("promoted", 50_000);
        promoteInto(node, "promoted", source);
        assertTrue(info(node).getMemoryUsedBytes() > 0);
        client.batchRemove(List.of("promoted"), List.of("t"));
        assertEquals(0, info(node).getMemoryUsedBytes(), "the copy's DRAM is free at once");
        MasterException again = assertThrows(MasterException.class, () -> client.remove("t", "promoted"));
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, again.code());
    }

    @Test
    void objects_read_often_enough_are_queued_while_a_node_has_DRAM() throws Exception {
        offload("often", 10_000);
        offload("once", 10_000);
        registerNode(node, 8L << 20);
        // The promoter turns counting on within a tick of a segment appearing; reads keep coming until it has queued.
        assertTrue(TierCluster.await(Duration.ofSeconds(30), () -> {
            client.batchGetMapping(List.of("often", "often", "often"), List.of("t", "t", "t"));
            return client.listPromotions().getTasksList().stream().anyMatch(t -> t.getKey().equals("often"));
        }));
        client.batchGetMapping(List.of("once"), List.of("t"));
        assertFalse(client.listPromotions().getTasksList().stream().anyMatch(t -> t.getKey().equals("once")), "read once: not admitted");
        assertEquals(3, client.listPromotions().getAdmissionReads());
    }

    @Test
    void the_tasks_of_a_node_that_dies_go_back_to_the_queue_for_any_node() throws Exception {
        restartWithClientTtl("2s"); // short, for the node to die of it; long enough to register, promote and heartbeat
        offload("orphan", 10_000);
        registerNode(node, 8L << 20);
        client.promote("t", "orphan");
        assertEquals(1, client.promotionHeartbeat(node, 0).size());
        // No more pings: the 2 s TTL runs out, CleanupStaleHandles drops its segment and the task is queued again.
        assertTrue(TierCluster.await(Duration.ofSeconds(20), () -> PromotionTasks.ANY_NODE.equals(client.listPromotions().getTasks(0).getHolderId())));
        String next = UUID.randomUUID().toString();
        registerNode(next, 8L << 20);
        assertEquals(1, client.promotionHeartbeat(next, 0).size());
    }

    @Test
    void queued_tasks_survive_a_restart_and_a_snapshot() throws Exception {
        offload("a", 10_000);
        offload("b", 10_000);
        registerNode(node, 8L << 20);
        client.promote("t", "a");
        client.createSnapshot();
        client.promote("t", "b");
        assertEquals(1, client.promotionHeartbeat(node, 1).size(), "one is held when the master goes");
        restartWithClientTtl("60s");
        List<PromotionTask> tasks = client.listPromotions().getTasksList();
        assertEquals(List.of("a", "b"), tasks.stream().map(PromotionTask::getKey).toList());
        assertTrue(tasks.stream().allMatch(t -> t.getHolderId().equals(PromotionTasks.ANY_NODE)), "every task is queued again: " + tasks);
        registerNode(node, 8L << 20); // the master forgot it: it registers again, with its segment free
        assertEquals(2, client.promotionHeartbeat(node, 0).size());
    }

    private static List<ReplicaType> types(GetReplicaListResponse list) {
        return list.getReplicasList().stream().map(Replica::getType).toList();
    }
}
