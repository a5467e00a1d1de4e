package io.mcctl.master.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.proto.v1.ClientInfo;
import io.mcctl.master.proto.v1.ClientStatus;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetReplicaListResponse;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.master.server.MasterServer;
import io.mcctl.master.server.MasterSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The master's node registry and owner-coupled replicas, over real gRPC on loopback, with a short client_ttl (long enough that a test's calls on a busy machine fit in it; the TTL test waits it out). */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ClientRegistryOverGrpcTest {

    @TempDir
    Path dir;
    private TierCluster cluster;
    private MasterClient client;

    @BeforeEach
    void start() throws Exception {
        MasterServer.Options options = MasterServer.Options.builder(TierCluster.smallLayout(dir.resolve("root"), 4))
                .fsType("test").snapshotInterval(null).settings(Map.of(MasterSettings.CLIENT_TTL.key(), "5s")).build();
        cluster = TierCluster.start(options, 0);
        client = cluster.newClient();
    }

    @AfterEach
    void stop() throws Exception {
        cluster.close();
    }

    private static String newId() {
        return UUID.randomUUID().toString();
    }

    /** Commits a LOCAL_DISK replica of {@code key} owned by {@code owner}. */
    private void putLocal(String owner, String key, long size, int crc) {
        client.putStart(owner, "t", key, size, ReplicaType.LOCAL_DISK);
        client.putEnd(owner, "t", key, ReplicaType.LOCAL_DISK, crc);
    }

    @Test
    void a_second_registration_of_a_live_id_is_refused_in_one_line_and_changes_nothing() {
        String id = newId();
        assertEquals(5000, client.registerClient(id, "127.0.0.1:7001", "/data/a", false)); // the TTL in milliseconds
        List<ClientInfo> before = client.listClients().getClientsList();
        MasterException e = assertThrows(MasterException.class, () -> client.registerClient(id, "127.0.0.1:7002", "/data/b", true));
        assertEquals(ErrorCode.OBJECT_ALREADY_EXISTS, e.code());
        assertEquals(1, e.getMessage().lines().count());
        assertTrue(e.getMessage().contains("already registered and alive (endpoint 127.0.0.1:7001)"), e.getMessage());
        List<ClientInfo> after = client.listClients().getClientsList();
        assertEquals(1, after.size());
        assertEquals(before.get(0).getTransportEndpoint(), after.get(0).getTransportEndpoint());
        assertEquals("/data/a", after.get(0).getLocalDiskDir());
    }

    @Test
    void a_registration_with_a_bad_id_or_endpoint_is_refused_and_registers_nothing() {
        MasterException id = assertThrows(MasterException.class, () -> client.registerClient("node-a", "127.0.0.1:7001", "", true));
        assertEquals(ErrorCode.INVALID_PARAMS, id.code());
        assertTrue(id.getMessage().contains("client_id 'node-a' is not a UUID"), id.getMessage());
        MasterException endpoint = assertThrows(MasterException.class, () -> client.registerClient(newId(), "127.0.0.1", "", true));
        assertTrue(endpoint.getMessage().contains("transport_endpoint '127.0.0.1' is not host:port"), endpoint.getMessage());
        assertEquals(0, client.listClients().getClientsCount());
    }

    @Test
    void a_put_end_for_a_key_the_client_did_not_start_is_refused_and_records_nothing() {
        String a = newId();
        String b = newId();
        client.registerClient(a, "127.0.0.1:7001", "", false);
        client.registerClient(b, "127.0.0.1:7002", "", false);
        MasterException none = assertThrows(MasterException.class, () -> client.putEnd(a, "t", "never-started", ReplicaType.LOCAL_DISK, 1));
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, none.code());
        assertTrue(none.getMessage().contains("has no LOCAL_DISK PutStart of it in progress"), none.getMessage());
        // Started by a: b may not end it, and a's replica stays PROCESSING (not listed).
        client.putStart(a, "t", "k", 100, ReplicaType.LOCAL_DISK);
        MasterException other = assertThrows(MasterException.class, () -> client.putEnd(b, "t", "k", ReplicaType.LOCAL_DISK, 1));
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, other.code());
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, assertThrows(MasterException.class, () -> client.replicaList("t", "k")).code());
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, assertThrows(MasterException.class, () -> client.replicaList("t", "never-started")).code());
        // A second PutStart of the key is refused; the owner's PutEnd then commits it with the owner's crc.
        MasterException twice = assertThrows(MasterException.class, () -> client.putStart(b, "t", "k", 100, ReplicaType.LOCAL_DISK));
        assertEquals(ErrorCode.OBJECT_ALREADY_EXISTS, twice.code());
        client.putEnd(a, "t", "k", ReplicaType.LOCAL_DISK, 42);
        GetReplicaListResponse list = client.replicaList("t", "k");
        assertEquals(1, list.getReplicasCount());
        assertEquals(a, list.getReplicas(0).getLocalDisk().getClientId());
        assertEquals(42, list.getReplicas(0).getLocalDisk().getCrc32C());
    }

    @Test
    void put_start_needs_a_registered_client_and_a_local_disk_replica() {
        MasterException unknown = assertThrows(MasterException.class, () -> client.putStart(newId(), "t", "k", 10, ReplicaType.LOCAL_DISK));
        assertEquals(ErrorCode.INVALID_PARAMS, unknown.code());
        assertTrue(unknown.getMessage().contains("is not registered with this master"), unknown.getMessage());
        String a = newId();
        client.registerClient(a, "127.0.0.1:7001", "", false);
        MasterException memory = assertThrows(MasterException.class, () -> client.putStart(a, "t", "k", 10, ReplicaType.MEMORY));
        assertTrue(memory.getMessage().contains("registered no DRAM segment"), memory.getMessage());
        MasterException disk = assertThrows(MasterException.class, () -> client.putStart(a, "t", "k", 10, ReplicaType.DISTRIBUTED_DISK));
        assertTrue(disk.getMessage().contains("only LOCAL_DISK or MEMORY"), disk.getMessage());
        client.putStart(a, "t", "k", 10, ReplicaType.LOCAL_DISK);
        client.putRevoke(a, "t", "k", ReplicaType.LOCAL_DISK);
        client.putStart(a, "t", "k", 10, ReplicaType.LOCAL_DISK); // the revoke freed the key
    }

    @Test
    void a_remove_of_a_local_disk_object_says_it_is_not_built_and_changes_nothing() {
        String a = newId();
        client.registerClient(a, "127.0.0.1:7001", "/data/a", false);
        putLocal(a, "owned", 100, 5);
        MasterException e = assertThrows(MasterException.class, () -> client.remove("t", "owned"));
        assertEquals(ErrorCode.INVALID_PARAMS, e.code());
        assertEquals(1, e.getMessage().lines().count());
        assertTrue(e.getMessage().contains("is a LOCAL_DISK object of client " + a), e.getMessage());
        assertTrue(e.getMessage().contains("not built"), e.getMessage());
        assertEquals(ErrorCode.INVALID_PARAMS, client.batchRemove(List.of("owned"), List.of("t")).getResults(0).getError());
        assertEquals(a, client.replicaList("t", "owned").getReplicas(0).getLocalDisk().getClientId(), "still there");
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, assertThrows(MasterException.class, () -> client.remove("t", "nothing")).code());
    }

    @Test
    void the_replica_list_puts_distributed_disk_before_local_disk() {
        String a = newId();
        client.registerClient(a, "127.0.0.1:7001", "", false);
        putLocal(a, "both", 5000, 7);
        DistributedDiskDescriptor d = client.allocate("t", "both", 5000, false).getDistributedDisk();
        client.notifySuccess(List.of("both"), List.of("t"), List.of(d.toBuilder().setCrc32C(7).build()));
        GetReplicaListResponse list = client.replicaList("t", "both");
        assertEquals(List.of(ReplicaType.DISTRIBUTED_DISK, ReplicaType.LOCAL_DISK),
                list.getReplicasList().stream().map(r -> r.getType()).toList());
        assertTrue(list.getLeaseMs() > 0);
    }

    @Test
    void a_client_that_misses_its_ttl_loses_its_local_disk_replicas_and_nothing_else() throws Exception {
        String dying = newId();
        String living = newId();
        client.registerClient(dying, "127.0.0.1:7001", "", false);
        client.registerClient(living, "127.0.0.1:7002", "", false);
        putLocal(dying, "ld", 100, 1);
        putLocal(living, "kept", 100, 2);
        DistributedDiskDescriptor d = client.allocate("t", "dd", 5000, false).getDistributedDisk();
        client.notifySuccess(List.of("dd"), List.of("t"), List.of(d.toBuilder().setCrc32C(9).build()));
        // The living client pings; the dying one never does again.
        while (client.listClients().getClientsList().stream().anyMatch(c -> c.getClientId().equals(dying) && c.getAlive())) {
            assertEquals(ClientStatus.CLIENT_OK, client.ping(living).getClientStatus());
            Thread.sleep(100);
        }
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, assertThrows(MasterException.class, () -> client.replicaList("t", "ld")).code());
        assertEquals(living, client.replicaList("t", "kept").getReplicas(0).getLocalDisk().getClientId());
        assertEquals(ReplicaType.DISTRIBUTED_DISK, client.replicaList("t", "dd").getReplicas(0).getType());
        ClientInfo dead = client.listClients().getClientsList().stream().filter(c -> c.getClientId().equals(dying)).findFirst().orElseThrow();
        assertFalse(dead.getAlive());
        assertEquals(1, dead.getCleanedReplicas());
        // The dead client is told to register again, and may; what it owned before stays gone.
        assertEquals(ClientStatus.NEED_REGISTER, client.ping(dying).getClientStatus());
        client.registerClient(dying, "127.0.0.1:7001", "", false);
        assertEquals(ClientStatus.CLIENT_OK, client.ping(dying).getClientStatus());
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, assertThrows(MasterException.class, () -> client.replicaList("t", "ld")).code());
    }
}
