package io.mcctl.master.server;

import io.mcctl.master.dram.MemoryTier;
import io.mcctl.master.dram.Node;
import io.mcctl.master.dram.Promoter;
import io.mcctl.master.proto.v1.ClientInfo;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.LocalDiskDescriptor;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaStatus;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.master.service.Result;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The master's nodes (Mooncake's clients: a client id, a transport endpoint, a ping within every TTL) and the
 * owner-coupled LOCAL_DISK replicas they write with PutStart / PutEnd / PutRevoke. A client the master has not heard
 * from within the TTL is dead, and {@link #cleanupStaleHandles} removes every MEMORY and LOCAL_DISK replica it owned,
 * as Mooncake's CleanupStaleHandles does, although a LOCAL_DISK object's file may be intact: the behaviour page mode
 * exists to fix. DISTRIBUTED_DISK mappings live in the page service and are never touched here.
 *
 * <p>All of this is in memory, as in Mooncake's master: after a master restart nodes register again (Ping answers
 * NEED_REGISTER) and report the per-key files they hold again (ScanMeta); the MEMORY replicas recorded before are gone.
 *
 * <p>MEMORY replicas, in the DRAM segments nodes register, are kept by {@link MemoryTier}; a dead client's go with its
 * LOCAL_DISK ones. The DRAM tier sees the clients through {@link Node} and {@link Promoter.Nodes}, which this registry
 * implements.
 *
 * <p>Thread-safe without a global lock. {@link #clients} and {@link #replicas} are concurrent maps; each
 * {@link ClientState}'s monitor guards its {@code alive} flag, and a PutStart checks that flag and inserts its
 * replica under that monitor, so a replica is never added for a client after it was marked dead. Lock order: a
 * client's monitor, then its segment's monitor or a map's bin lock (never the other way). Replicas point at the
 * {@link ClientState} that made them, not its id, so the cleanup of a dead client never removes replicas of its
 * re-registration.
 */
public final class ClientRegistry implements Promoter.Nodes, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ClientRegistry.class);

    /** Mooncake's client_ttl default. */
    public static final Duration DEFAULT_TTL = Duration.ofSeconds(10);
    /** Dead clients kept for status, the most recent first. */
    static final int DEAD_KEPT = 64;
    /** Largest LOCAL_DISK object a PutStart takes. */
    public static final long MAX_OBJECT_BYTES = 64L << 30;

    /** One registration of a client id. */
    static final class ClientState implements Node {
        final String id;
        final String endpoint;
        final String localDiskDir;
        final boolean pageMode;
        /** Its DRAM segment, or null when it has none. */
        final MemoryTier.Segment segment;
        final long registeredNanos;
        volatile long lastPingNanos;
        /** Guarded by this object's monitor for writes; read without it for status. */
        volatile boolean alive = true;
        volatile long diedNanos;
        volatile long cleaned;

        ClientState(String id, String endpoint, String localDiskDir, boolean pageMode, long memoryBytes, long now) {
            this.id = id;
            this.endpoint = endpoint;
            this.localDiskDir = localDiskDir;
            this.pageMode = pageMode;
            this.segment = memoryBytes == 0 ? null : MemoryTier.segment(this, memoryBytes);
            this.registeredNanos = now;
            this.lastPingNanos = now;
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public String endpoint() {
            return endpoint;
        }

        @Override
        public boolean alive() {
            return alive;
        }

        @Override
        public MemoryTier.Segment segment() {
            return segment;
        }
    }

    /** A replica a client owns; immutable, replaced on PutEnd. */
    record OwnedReplica(ClientState owner, ReplicaType type, long size, ReplicaStatus status, int crc32c) {
        Replica toWire() {
            return Replica.newBuilder().setType(type).setStatus(status).setLocalDisk(LocalDiskDescriptor.newBuilder()
                    .setClientId(owner.id).setTransportEndpoint(owner.endpoint).setObjectSize(size).setCrc32C(crc32c)).build();
        }
    }

    private final Duration ttl;
    private final LongSupplier nanoClock;
    private final ConcurrentHashMap<String, ClientState> clients = new ConcurrentHashMap<>();
    /** LOCAL_DISK replicas by scoped key (tenant and key); one per key, as a per-key file has one owner. */
    private final ConcurrentHashMap<String, OwnedReplica> replicas = new ConcurrentHashMap<>();
    private final ScheduledExecutorService sweeper;
    private final MemoryTier memory;
    /** Told the id of every client that died, after its replicas went (the promoter puts its tasks back in the queue). */
    private volatile java.util.function.Consumer<String> onDeath = id -> { };

    /** A registry whose sweeper checks every client's last ping four times per TTL (at least every 500 ms). */
    public ClientRegistry(Duration ttl, LongSupplier nanoClock) {
        if (ttl.isNegative() || ttl.isZero()) {
            throw new IllegalArgumentException("client_ttl must be positive, not " + ttl);
        }
        this.ttl = ttl;
        this.nanoClock = nanoClock;
        this.memory = new MemoryTier(nanoClock);
        this.sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "mcctl-master-client-monitor");
            thread.setDaemon(true);
            return thread;
        });
        long every = Math.max(10, Math.min(500, ttl.toMillis() / 4));
        sweeper.scheduleWithFixedDelay(() -> {
            try {
                cleanupStaleHandles();
            } catch (RuntimeException e) {
                LOG.error("client monitor failed; will retry", e);
            }
        }, every, every, TimeUnit.MILLISECONDS);
    }

    public Duration ttl() {
        return ttl;
    }

    /** The DRAM tier: the nodes' segments and the MEMORY replicas in them. */
    MemoryTier memory() {
        return memory;
    }

    @Override
    public void onDeath(java.util.function.Consumer<String> listener) {
        this.onDeath = listener;
    }

    /** The client registered under {@code clientId} when it is alive, else null. */
    @Override
    public Node live(String clientId) {
        ClientState client = clients.get(clientId);
        return client != null && client.alive ? client : null;
    }

    /** [live clients, bytes of their DRAM segments]. */
    long[] liveTotals() {
        long alive = 0;
        long segments = 0;
        for (ClientState client : clients.values()) {
            if (client.alive) {
                alive++;
                segments += client.segment == null ? 0 : client.segment.bytes();
            }
        }
        return new long[] {alive, segments};
    }

    /** Whether a live client has a DRAM segment: promotion is worth counting reads for only then. */
    @Override
    public boolean anyLiveSegment() {
        return liveTotals()[1] > 0;
    }

    // ---- clients ----

    /** RegisterClient: a new id, or the id of a client that died (it lost its TTL and comes back); a live id is refused. */
    public Result<Void> register(String clientId, String endpoint, String localDiskDir, boolean pageMode) {
        return register(clientId, endpoint, localDiskDir, pageMode, 0);
    }

    /** RegisterClient with a DRAM segment of {@code memoryBytes} (0: none), all of it free. */
    public Result<Void> register(String clientId, String endpoint, String localDiskDir, boolean pageMode, long memoryBytes) {
        String bad = KeyRules.checkClientId(clientId);
        if (bad == null) {
            bad = checkEndpoint(endpoint);
        }
        if (bad == null) {
            bad = MemoryTier.checkSegment(memoryBytes);
        }
        if (bad != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, bad);
        }
        long now = nanoClock.getAsLong();
        ClientState fresh = new ClientState(clientId, endpoint, localDiskDir, pageMode, memoryBytes, now);
        ClientState[] refusedBy = {null};
        clients.compute(clientId, (id, existing) -> {
            if (existing != null && existing.alive) {
                refusedBy[0] = existing;
                return existing;
            }
            return fresh;
        });
        if (refusedBy[0] != null) {
            return Result.error(ErrorCode.OBJECT_ALREADY_EXISTS, "client " + clientId + " is already registered and alive (endpoint "
                    + refusedBy[0].endpoint + "): a node takes a new client id at every start; stop the other one first");
        }
        LOG.info("client {} registered: endpoint {}{}{}", clientId, endpoint, localDiskDir.isEmpty() ? "" : ", local disk " + localDiskDir,
                memoryBytes == 0 ? "" : ", DRAM segment of " + memoryBytes + " bytes");
        trimDead();
        return Result.ok();
    }

    /** Ping: true when the client is registered and alive (its TTL starts again), false when it must register again. */
    @Override
    public boolean ping(String clientId) {
        ClientState client = clients.get(clientId);
        if (client == null || !client.alive) {
            return false;
        }
        client.lastPingNanos = nanoClock.getAsLong();
        return true;
    }

    /**
     * CleanupStaleHandles: every client not heard from within the TTL is marked dead, then its MEMORY and LOCAL_DISK
     * replicas are removed. Returns how many clients died.
     */
    public int cleanupStaleHandles() {
        long now = nanoClock.getAsLong();
        int died = 0;
        for (ClientState client : clients.values()) {
            if (!client.alive || now - client.lastPingNanos <= ttl.toNanos()) {
                continue;
            }
            synchronized (client) {
                if (!client.alive) {
                    continue;
                }
                client.alive = false;
                client.diedNanos = now;
            }
            long removed = 0;
            for (Map.Entry<String, OwnedReplica> entry : replicas.entrySet()) {
                if (entry.getValue().owner() == client && replicas.remove(entry.getKey(), entry.getValue())) {
                    removed++;
                }
            }
            if (client.segment != null) {
                removed += memory.dropSegment(client.segment);
            }
            client.cleaned = removed;
            died++;
            onDeath.accept(client.id);
            LOG.warn("client {} ({}) missed its TTL of {} ms: dead; CleanupStaleHandles removed {} of its replicas", client.id,
                    client.endpoint, ttl.toMillis(), removed);
        }
        if (died > 0) {
            trimDead();
        }
        return died;
    }

    private void trimDead() {
        List<ClientState> dead = new ArrayList<>();
        for (ClientState client : clients.values()) {
            if (!client.alive) {
                dead.add(client);
            }
        }
        if (dead.size() > DEAD_KEPT) {
            dead.sort(Comparator.comparingLong((ClientState c) -> c.diedNanos).reversed());
            for (ClientState old : dead.subList(DEAD_KEPT, dead.size())) {
                clients.remove(old.id, old);
            }
        }
    }

    /** ListClients: live clients first (oldest registration first), then dead ones (most recent death first). */
    public List<ClientInfo> list() {
        long now = nanoClock.getAsLong();
        Map<ClientState, long[]> held = new HashMap<>();
        for (OwnedReplica replica : replicas.values()) {
            if (replica.status() == ReplicaStatus.COMPLETE) {
                long[] counts = held.computeIfAbsent(replica.owner(), c -> new long[2]);
                counts[0]++;
                counts[1] += replica.size();
            }
        }
        List<ClientState> all = new ArrayList<>(clients.values());
        all.sort(Comparator.comparing((ClientState c) -> !c.alive)
                .thenComparingLong(c -> c.alive ? c.registeredNanos : -c.diedNanos));
        Map<String, Long> promoting = promotionsHeld.get(); // once for the list, not once per client
        List<ClientInfo> infos = new ArrayList<>(all.size());
        for (ClientState c : all) {
            long[] counts = held.getOrDefault(c, new long[2]);
            infos.add(ClientInfo.newBuilder().setClientId(c.id).setTransportEndpoint(c.endpoint).setAlive(c.alive)
                    .setLastPingAgeMs(TimeUnit.NANOSECONDS.toMillis(now - c.lastPingNanos))
                    .setRegisteredAgeMs(TimeUnit.NANOSECONDS.toMillis(now - c.registeredNanos))
                    .setLocalDiskDir(c.localDiskDir).setPageMode(c.pageMode)
                    .setLocalDiskObjects(counts[0]).setLocalDiskBytes(counts[1]).setCleanedReplicas(c.cleaned)
                    .setMemoryBytes(c.segment == null ? 0 : c.segment.bytes())
                    .setMemoryUsedBytes(c.segment == null || !c.alive ? 0 : c.segment.usedBytes())
                    .setMemoryObjects(c.segment == null || !c.alive ? 0 : c.segment.completeObjects())
                    .setPromotionsHeld(promoting.getOrDefault(c.id, 0L)).build());
        }
        return infos;
    }

    /** How many promotion tasks each client holds, by client id (set by the promoter). */
    private volatile java.util.function.Supplier<Map<String, Long>> promotionsHeld = Map::of;

    @Override
    public void promotionsHeld(java.util.function.Supplier<Map<String, Long>> counter) {
        this.promotionsHeld = counter;
    }

    // ---- owner-coupled replicas ----

    /**
     * PutStart: a PROCESSING replica of (tenant, key) owned by a live client: LOCAL_DISK (a file of its own), or MEMORY
     * (a range of its DRAM segment, answered as where to write).
     */
    public Result<Replica> putStart(String clientId, String tenant, String key, long size, ReplicaType type) {
        String bad = checkReplica(tenant, key, type);
        if (bad == null && (size < 1 || size > MAX_OBJECT_BYTES)) {
            bad = "size " + Long.toUnsignedString(size) + " is outside 1.." + MAX_OBJECT_BYTES + " bytes";
        }
        if (bad != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, bad);
        }
        ClientState client = clients.get(clientId);
        if (client == null || !client.alive) {
            return notRegistered(clientId);
        }
        String scoped = KeyRules.scopedKey(tenant, key);
        if (type == ReplicaType.MEMORY) {
            if (client.segment == null) {
                return Result.error(ErrorCode.INVALID_PARAMS, "client " + clientId + " registered no DRAM segment (mcctl node start --memory SIZE)");
            }
            synchronized (client) {
                if (!client.alive) {
                    return notRegistered(clientId);
                }
                return memory.put(client.segment, scoped, size);
            }
        }
        OwnedReplica[] existing = {null};
        synchronized (client) {
            if (!client.alive) {
                return notRegistered(clientId);
            }
            replicas.compute(scoped, (k, current) -> {
                if (current != null) {
                    existing[0] = current;
                    return current;
                }
                return new OwnedReplica(client, type, size, ReplicaStatus.PROCESSING, 0);
            });
        }
        if (existing[0] != null) {
            OwnedReplica other = existing[0];
            return Result.error(ErrorCode.OBJECT_ALREADY_EXISTS, "key " + Quoted.of(key) + " of tenant " + tenant + " already has a "
                    + other.status() + " " + other.type() + " replica owned by client " + other.owner().id);
        }
        return Result.ok(replicas.get(scoped).toWire());
    }

    /** PutEnd: the PROCESSING replica this client started becomes COMPLETE. */
    public Result<Void> putEnd(String clientId, String tenant, String key, ReplicaType type, int crc32c) {
        if (type == ReplicaType.MEMORY) {
            return finishMemory(clientId, tenant, key, "PutEnd", scoped -> memory.endPut(clientId, scoped, crc32c));
        }
        return finish(clientId, tenant, key, type, current -> new OwnedReplica(current.owner(), current.type(), current.size(),
                ReplicaStatus.COMPLETE, crc32c), "PutEnd");
    }

    /** PutRevoke: the PROCESSING replica this client started goes. */
    public Result<Void> putRevoke(String clientId, String tenant, String key, ReplicaType type) {
        if (type == ReplicaType.MEMORY) {
            return finishMemory(clientId, tenant, key, "PutRevoke", scoped -> memory.revokePut(clientId, scoped));
        }
        return finish(clientId, tenant, key, type, current -> null, "PutRevoke");
    }

    private Result<Void> finish(String clientId, String tenant, String key, ReplicaType type,
                                java.util.function.UnaryOperator<OwnedReplica> change, String call) {
        String bad = checkReplica(tenant, key, type);
        if (bad != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, bad);
        }
        boolean[] done = {false};
        replicas.computeIfPresent(KeyRules.scopedKey(tenant, key), (k, current) -> {
            if (!current.owner().id.equals(clientId) || !current.owner().alive || current.status() != ReplicaStatus.PROCESSING
                    || current.type() != type) {
                return current;
            }
            done[0] = true;
            return change.apply(current);
        });
        if (!done[0]) {
            return Result.error(ErrorCode.OBJECT_NOT_FOUND, call + " of key " + Quoted.of(key) + " (tenant " + tenant + ") by client " + clientId
                    + ": that client has no " + type + " PutStart of it in progress");
        }
        return Result.ok();
    }

    /** PutEnd or PutRevoke of a MEMORY replica this client put into its own segment (not a promotion's staged copy). */
    private Result<Void> finishMemory(String clientId, String tenant, String key, String call,
                                      java.util.function.Predicate<String> change) {
        String bad = checkReplica(tenant, key, ReplicaType.MEMORY);
        if (bad != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, bad);
        }
        if (!change.test(KeyRules.scopedKey(tenant, key))) {
            return Result.error(ErrorCode.OBJECT_NOT_FOUND, call + " of key " + Quoted.of(key) + " (tenant " + tenant + ") by client " + clientId
                    + ": that client has no MEMORY PutStart of it in progress");
        }
        return Result.ok();
    }

    /** The COMPLETE owner-coupled replicas of (tenant, key), for GetReplicaList. */
    public List<Replica> replicasOf(String tenant, String key) {
        OwnedReplica replica = replicas.get(KeyRules.scopedKey(tenant, key));
        return replica == null || replica.status() != ReplicaStatus.COMPLETE ? List.of() : List.of(replica.toWire());
    }

    private static <T> Result<T> notRegistered(String clientId) {
        return Result.error(ErrorCode.INVALID_PARAMS, "client " + clientId
                + " is not registered with this master, or missed its TTL and is dead: register it (mcctl node start) first");
    }

    private static String checkReplica(String tenant, String key, ReplicaType type) {
        String bad = KeyRules.checkTenant(tenant);
        if (bad == null) {
            bad = KeyRules.checkKey(key);
        }
        if (bad == null && type != ReplicaType.LOCAL_DISK && type != ReplicaType.MEMORY) {
            bad = "replica_type " + type + " is not taken here: only LOCAL_DISK or MEMORY (DISTRIBUTED_DISK objects are written with "
                    + "BatchAllocateDistributedPage)";
        }
        return bad;
    }

    static String checkEndpoint(String endpoint) {
        int colon = endpoint.lastIndexOf(':');
        if (colon > 0 && colon < endpoint.length() - 1) {
            try {
                int port = Integer.parseInt(endpoint.substring(colon + 1));
                if (port > 0 && port <= 65535) {
                    return null;
                }
            } catch (NumberFormatException e) {
                // fall through
            }
        }
        return "transport_endpoint " + Quoted.of(endpoint) + " is not host:port with a port from 1 to 65535";
    }

    /** Closed with this registry: what serves on it (the promoter). */
    private volatile AutoCloseable closedWith;

    void closeWith(AutoCloseable dependent) {
        this.closedWith = dependent;
    }

    @Override
    public void close() {
        sweeper.shutdownNow();
        AutoCloseable dependent = closedWith;
        if (dependent != null) {
            try {
                dependent.close();
            } catch (Exception e) {
                LOG.warn("could not stop {}", dependent, e);
            }
        }
    }
}
