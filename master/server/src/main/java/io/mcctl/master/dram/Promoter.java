package io.mcctl.master.dram;

import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.PromotionTask;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaStatus;
import io.mcctl.master.service.Change;
import io.mcctl.master.service.ChangeLog;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.protocol.PromotionTasks;
import io.mcctl.master.service.PromotionAdmission;
import io.mcctl.master.service.Promotions;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.master.service.Result;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Promotion of DISTRIBUTED_DISK objects into nodes' DRAM segments, as the design's section 3 describes it, joining the
 * durable tasks ({@link Promotions}) to the DRAM tier ({@link MemoryTier}).
 *
 * <ul>
 *   <li>Admission: while a live node has a segment, lookups count reads in a {@link PromotionAdmission} sketch; an object
 *   read {@code admissionReads} times within its window is queued (logged), unless it is in DRAM already. An operator
 *   queues one at once with {@link #promote}.</li>
 *   <li>A queued task's holder is all zeros: any node. {@link #heartbeat} hands queued tasks to the node asking, staging
 *   a PROCESSING MEMORY replica in its segment and leasing the source's pages to it.</li>
 *   <li>{@link #succeeded} checks the copy's CRC32C against the source's, marks the staged replica COMPLETE, and ends the
 *   task (logged), which releases its pin; {@link #failed} drops the staged replica and ends the task the same way.</li>
 *   <li>A task whose holder dies, or holds it longer than {@code holdLimit}, goes back to the queue for any node.</li>
 * </ul>
 *
 * <p>Runs only on a master that serves (an HA standby has none). Its thread queues admitted objects and releases
 * overdue tasks; the RPCs run on the transport threads. It holds no lock of its own: {@link Promotions} changes tasks
 * under their keys' shard locks and {@link MemoryTier} replicas under their segments' monitors, never both at once.
 */
public final class Promoter implements AutoCloseable {

    /** Named as before the DRAM tier had a package: its log lines and a level set for the RPC side (...master.server=debug) stay. */
    private static final Logger LOG = LoggerFactory.getLogger("io.mcctl.master.server.Promoter");

    public static final int DEFAULT_ADMISSION_READS = 3;
    public static final Duration DEFAULT_HOLD_LIMIT = Duration.ofSeconds(30);
    static final int MAX_TASKS_PER_HEARTBEAT = 64;
    static final int DEFAULT_TASKS_PER_HEARTBEAT = 8;
    private static final long TICK_MILLIS = 100;

    /**
     * What the promoter asks of the master's node registry: which nodes are alive (and their segments), and to be told of
     * every death. The registry implements it, so this package never depends on the RPC rooms that hold it.
     */
    public interface Nodes {

        /** The node registered under {@code clientId} when it is alive, else null. */
        Node live(String clientId);

        /** True when the node is registered and alive (its TTL starts again), false when it must register again. */
        boolean ping(String clientId);

        /** Whether a live node has a DRAM segment: promotion is worth counting reads for only then. */
        boolean anyLiveSegment();

        /** {@code listener} is told the id of every node that died, after its replicas went. */
        void onDeath(Consumer<String> listener);

        /** {@code counter} answers how many promotion tasks each node holds, by client id, for the node list. */
        void promotionsHeld(Supplier<Map<String, Long>> counter);
    }

    private final PageService pages;
    private final Promotions tasks;
    private final Nodes clients;
    private final MemoryTier memory;
    private final Function<Placement, DistributedDiskDescriptor> describe;
    /** Null when promotion by reads is off. */
    private final PromotionAdmission admission;
    private final long holdLimitNanos;
    private final ScheduledExecutorService thread;

    /**
     * Reads are counted in {@code pages}' admission sketch (none: only {@link #promote} queues), and tasks are queued up to
     * its promotion queue's size: both as the page service was built.
     *
     * @param memory the DRAM tier of {@code clients}' segments
     * @param describe the descriptor of a placement, as lookups answer it
     */
    public Promoter(PageService pages, Nodes clients, MemoryTier memory, Duration holdLimit,
                    Function<Placement, DistributedDiskDescriptor> describe) {
        this.pages = pages;
        this.tasks = pages.promotions();
        this.clients = clients;
        this.memory = memory;
        this.describe = describe;
        this.admission = pages.admission();
        this.holdLimitNanos = holdLimit.toNanos();
        clients.onDeath(this::holderDied);
        clients.promotionsHeld(() -> tasks.list().stream().filter(t -> t.holder() != null)
                .collect(Collectors.groupingBy(Promotions.Task::holder, Collectors.counting())));
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "mcctl-master-promoter");
            t.setDaemon(true);
            return t;
        });
        thread.scheduleWithFixedDelay(this::tick, TICK_MILLIS, TICK_MILLIS, TimeUnit.MILLISECONDS);
    }

    public int admissionReads() {
        return admission == null ? 0 : admission.threshold();
    }

    private void tick() {
        try {
            if (admission != null) {
                boolean counting = clients.anyLiveSegment();
                admission.count(counting);
                if (counting) {
                    for (String scoped : admission.drain(256)) {
                        queueAdmitted(scoped);
                    }
                }
            }
            for (Promotions.Task overdue : tasks.release(null, holdLimitNanos)) {
                LOG.warn("promotion of key '{}' (tenant {}) held by client {} for over {} s: back in the queue", overdue.key(), overdue.tenant(),
                        overdue.holder(), TimeUnit.NANOSECONDS.toSeconds(holdLimitNanos));
                dropStagedOf(overdue.tenant(), overdue.key(), overdue.holder());
            }
        } catch (ChangeLog.Refused e) {
            // the master takes no changes: nothing is queued until it does
        } catch (RuntimeException e) {
            LOG.error("promoter failed; will retry", e);
        }
    }

    private void queueAdmitted(String scoped) {
        String tenant = KeyRules.tenantOf(scoped);
        String key = KeyRules.keyOf(scoped);
        if (inDram(tenant, key) || !pages.peek(tenant, key).isOk()) {
            return; // in DRAM already, or gone
        }
        Result<Promotions.Task> queued = tasks.queue(tenant, key);
        if (!queued.isOk() && queued.error() != ErrorCode.NO_AVAILABLE_HANDLE) {
            LOG.debug("admitted key '{}' (tenant {}) not queued: {}", key, tenant, queued.message());
        }
    }

    private void holderDied(String clientId) {
        List<Promotions.Task> released = tasks.release(clientId, 0);
        if (!released.isEmpty()) {
            LOG.warn("client {} died holding {} promotion tasks: back in the queue for any node", clientId, released.size());
        }
    }

    /** Drops the PROCESSING replica {@code holder} staged for (tenant, key), if it is still there. */
    private void dropStagedOf(String tenant, String key, String holder) {
        MemoryTier.MemoryReplica staged = memory.get(KeyRules.scopedKey(tenant, key));
        if (staged != null && staged.status == ReplicaStatus.PROCESSING && staged.source != null && staged.segment.owner.id().equals(holder)) {
            memory.drop(staged);
        }
    }

    // ---- the RPCs ----

    /** Queues the object now, whatever its reads (Promote). */
    public Result<PromotionTask> promote(String tenant, String key) {
        if (inDram(tenant, key)) {
            return Result.error(ErrorCode.OBJECT_ALREADY_EXISTS, "key " + Quoted.of(key) + " of tenant " + tenant + " is in DRAM already");
        }
        Result<Promotions.Task> queued = tasks.queue(tenant, key);
        return queued.isOk() ? Result.ok(toWire(queued.value(), null)) : Result.error(queued.error(), queued.message());
    }

    /** Whether the committed object of (tenant, key) has a current copy in a live node's DRAM. */
    private boolean inDram(String tenant, String key) {
        Result<Placement> mapped = pages.peek(tenant, key);
        return mapped.isOk() && memory.readable(KeyRules.scopedKey(tenant, key), mapped.value()) != null;
    }

    /** PromotionObjectHeartbeat: queued tasks handed to this node, each staged in its segment. */
    public Result<List<PromotionTask>> heartbeat(String clientId, int maxTasks) {
        if (maxTasks < 0 || maxTasks > MAX_TASKS_PER_HEARTBEAT) {
            return Result.error(ErrorCode.INVALID_PARAMS, "max_tasks " + maxTasks + " is outside 0.." + MAX_TASKS_PER_HEARTBEAT
                    + " (0: " + DEFAULT_TASKS_PER_HEARTBEAT + ")");
        }
        Node node = clients.live(clientId);
        if (node == null) {
            return Result.error(ErrorCode.INVALID_PARAMS, "client " + clientId + " is not registered with this master, or missed its TTL: "
                    + "register it first");
        }
        clients.ping(clientId); // a heartbeat is a sign of life too
        List<PromotionTask> taken = new ArrayList<>();
        MemoryTier.Segment segment = node.segment();
        if (segment == null) {
            return Result.ok(taken); // a node without DRAM takes no tasks; that is not an error
        }
        int max = maxTasks == 0 ? DEFAULT_TASKS_PER_HEARTBEAT : maxTasks;
        for (Promotions.Task task : tasks.list()) {
            if (taken.size() >= max) {
                break;
            }
            if (task.holder() != null) {
                continue;
            }
            String scoped = KeyRules.scopedKey(task.tenant(), task.key());
            memory.dropStale(scoped, task.placement());
            MemoryTier.MemoryReplica existing = memory.get(scoped);
            if (existing != null) {
                if (existing.status == ReplicaStatus.COMPLETE) {
                    tasks.end(task.tenant(), task.key(), null, Change.PromotionOutcome.CANCELLED); // in DRAM already
                }
                continue; // or being written by another node
            }
            Result<MemoryTier.MemoryReplica> staged = memory.stage(segment, scoped, task.placement().size(), task.placement());
            if (!staged.isOk()) {
                continue; // does not fit this node's segment: another node may take it
            }
            if (!tasks.take(task.tenant(), task.key(), task.placement(), clientId)) {
                memory.drop(staged.value()); // taken by another node or changed since it was listed
                continue;
            }
            taken.add(toWire(new Promotions.Task(task.tenant(), task.key(), task.placement(), task.queuedMs(), clientId, 0),
                    staged.value()));
        }
        return Result.ok(taken);
    }

    /** NotifyPromotionSuccess: the node copied the source into its staged range; the MEMORY replica becomes COMPLETE. */
    public Result<Replica> succeeded(String clientId, String tenant, String key, int crc32c) {
        Result<MemoryTier.MemoryReplica> held = stagedBy(clientId, tenant, key);
        if (!held.isOk()) {
            return Result.error(held.error(), held.message());
        }
        MemoryTier.MemoryReplica staged = held.value();
        if (crc32c != staged.source.crc32c()) {
            failed(clientId, tenant, key, "CRC32C " + Integer.toHexString(crc32c) + " of the copy");
            return Result.error(ErrorCode.INVALID_PARAMS, "the copy of key " + Quoted.of(key) + " (tenant " + tenant + ") has CRC32C "
                    + Integer.toHexString(crc32c) + ", not the source's " + Integer.toHexString(staged.source.crc32c())
                    + ": the staged replica is dropped and the task ended as failed");
        }
        Result<Placement> ended = tasks.end(tenant, key, clientId, Change.PromotionOutcome.SUCCEEDED);
        if (!ended.isOk()) {
            memory.drop(staged);
            return Result.error(ended.error(), ended.message());
        }
        if (!memory.complete(staged, crc32c)) {
            return Result.error(ErrorCode.OBJECT_NOT_FOUND, "the staged replica of key " + Quoted.of(key) + " (tenant " + tenant
                    + ") went while it was copied (its node was declared dead)");
        }
        if (admission != null) {
            admission.forget(KeyRules.scopedKey(tenant, key));
        }
        return Result.ok(staged.toWire());
    }

    /** NotifyPromotionFailure: the staged replica goes and the task ends as failed; nothing of it is left. */
    public Result<Void> failed(String clientId, String tenant, String key, String reason) {
        Result<MemoryTier.MemoryReplica> held = stagedBy(clientId, tenant, key);
        if (!held.isOk()) {
            return Result.error(held.error(), held.message());
        }
        memory.drop(held.value());
        Result<Placement> ended = tasks.end(tenant, key, clientId, Change.PromotionOutcome.FAILED);
        LOG.warn("promotion of key '{}' (tenant {}) by client {} failed: {}", key, tenant, clientId, reason.isEmpty() ? "no reason given" : reason);
        if (admission != null) {
            admission.forget(KeyRules.scopedKey(tenant, key));
        }
        return ended.isOk() || ended.error() == ErrorCode.OBJECT_NOT_FOUND ? Result.ok() : Result.error(ended.error(), ended.message());
    }

    private Result<MemoryTier.MemoryReplica> stagedBy(String clientId, String tenant, String key) {
        String bad = KeyRules.checkTenant(tenant);
        if (bad == null) {
            bad = KeyRules.checkKey(key);
        }
        if (bad == null) {
            bad = KeyRules.checkClientId(clientId);
        }
        if (bad != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, bad);
        }
        MemoryTier.MemoryReplica staged = memory.get(KeyRules.scopedKey(tenant, key));
        if (staged == null || staged.status != ReplicaStatus.PROCESSING || staged.source == null || !staged.segment.owner.id().equals(clientId)) {
            return Result.error(ErrorCode.INVALID_PARAMS, "client " + clientId + " holds no promotion task of key " + Quoted.of(key) + " (tenant "
                    + tenant + ")" + (staged != null && staged.status == ReplicaStatus.PROCESSING && staged.source != null
                    ? ": client " + staged.segment.owner.id() + " does" : ""));
        }
        return Result.ok(staged);
    }

    /** Every task, oldest first. */
    public List<PromotionTask> list() {
        List<PromotionTask> out = new ArrayList<>();
        for (Promotions.Task task : tasks.list()) {
            out.add(toWire(task, task.holder() == null ? null : memory.get(KeyRules.scopedKey(task.tenant(), task.key()))));
        }
        return out;
    }

    /** [objects, bytes] of COMPLETE MEMORY replicas on live nodes. */
    public long[] memoryTotals() {
        return memory.completeTotals();
    }

    public long memoryEvictedTotal() {
        return memory.evictedTotal();
    }

    private PromotionTask toWire(Promotions.Task task, MemoryTier.MemoryReplica staged) {
        PromotionTask.Builder wire = PromotionTask.newBuilder().setTenantId(task.tenant()).setKey(task.key()).setSize(task.placement().size())
                .setSource(describe.apply(task.placement())).setHolderId(task.holder() == null ? PromotionTasks.ANY_NODE : task.holder())
                .setAgeMs(Math.max(0, System.currentTimeMillis() - task.queuedMs()));
        if (staged != null && staged.status == ReplicaStatus.PROCESSING) {
            wire.setStaged(staged.toWire().getMemory());
        }
        return wire.build();
    }

    @Override
    public void close() {
        thread.shutdownNow();
        if (admission != null) {
            admission.count(false);
        }
    }
}
