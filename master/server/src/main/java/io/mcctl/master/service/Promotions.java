package io.mcctl.master.service;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.protocol.Quoted;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/**
 * The durable half of promotion into the DRAM tier: which committed objects are queued to be copied into a node's
 * segment, and which node holds each task. Queuing and ending a task are logged changes ({@link Change.PromotionQueued},
 * {@link Change.PromotionEnded}) applied through {@link PageState#apply}; who holds a task is not logged, so a restart
 * puts every task back in the queue (holder all zeros: any node) and the staged MEMORY replicas, which live with the
 * master's node registry in memory, are gone with it.
 *
 * <p>A task pins its source: the evictor passes over the object while it has anything else to take, and a node that
 * takes the task gets a read lease on the pages it copies. A remove or overwrite of the object ends the task in the
 * same transition (its source is gone), so a late success for it is refused.
 *
 * <p>Locks: every change of a task is made under its key's shard lock, through {@link PageContext#underKeyLock}.
 */
public final class Promotions {

    /** A task as the master reports it; {@code holder} null while queued. */
    public record Task(String tenant, String key, Placement placement, long queuedMs, String holder, long heldNanos) {
    }

    /** Most tasks queued or held at once unless set otherwise. */
    public static final int DEFAULT_MAX_TASKS = 1024;

    private final PageContext pages;
    private final PageState state;
    private final KeyTable keys;
    private final int maxTasks;
    private final LongAdder queuedTotal = new LongAdder();
    private final LongAdder succeededTotal = new LongAdder();
    private final LongAdder failedTotal = new LongAdder();

    /** @param maxTasks the most tasks queued or held at once; at least 1 */
    Promotions(PageContext pages, int maxTasks) {
        if (maxTasks < 1) {
            throw new IllegalArgumentException("the promotion queue must hold at least one task, not " + maxTasks);
        }
        this.pages = pages;
        this.state = pages.state;
        this.keys = pages.keys;
        this.maxTasks = maxTasks;
    }

    /** The most tasks queued or held at once. */
    public int maxTasks() {
        return maxTasks;
    }

    /**
     * Queues the promotion of the committed object of (tenant, key). Answers the task already there when it has one;
     * OBJECT_NOT_FOUND when it has no committed object; NO_AVAILABLE_HANDLE when the queue is full.
     */
    public Result<Task> queue(String tenant, String key) {
        return pages.underKeyLock(new Tenant(state, tenant), key, null, (scoped, shard, now) -> {
            int m = shard.mappings.find(scoped);
            if (m < 0) {
                return Result.error(shard.inFlight.get(scoped) != null ? ErrorCode.REPLICA_IS_NOT_READY : ErrorCode.OBJECT_NOT_FOUND,
                        "key " + Quoted.of(key) + " of tenant " + Quoted.of(tenant) + " has no committed object to promote");
            }
            PageState.PromotionTask current = state.promotions.get(scoped);
            if (current != null) {
                return Result.ok(view(current, now));
            }
            if (state.promotions.size() >= maxTasks) {
                return Result.error(ErrorCode.NO_AVAILABLE_HANDLE, "the promotion queue holds " + maxTasks
                        + " tasks already (--promotion-max-tasks): key " + Quoted.of(key) + " is not queued");
            }
            pages.logAndApply(new Change.PromotionQueued(tenant, key, shard.mappings.placement(m), state.wallMillis(now)), scoped);
            queuedTotal.increment();
            return Result.ok(view(state.promotions.get(scoped), now));
        });
    }

    /** Every task, oldest first. */
    public List<Task> list() {
        long now = state.now();
        List<Task> tasks = new ArrayList<>();
        for (PageState.PromotionTask task : state.promotions.values()) {
            KeyTable.Shard shard = keys.shardOf(task.scopedKey);
            shard.lock.lock();
            try {
                tasks.add(view(task, now));
            } finally {
                shard.lock.unlock();
            }
        }
        tasks.sort(Comparator.comparingLong(Task::queuedMs).thenComparing(Task::tenant).thenComparing(Task::key));
        return tasks;
    }

    /** Tasks queued or held. */
    public int count() {
        return state.promotions.size();
    }

    /**
     * Hands the queued task of (tenant, key) to {@code holder}, when it is still queued and still about {@code placement},
     * and leases the source's pages to the holder for its copy. False when another node took it or its source changed.
     */
    public boolean take(String tenant, String key, Placement placement, String holder) {
        Result<Boolean> taken = pages.underKeyLock(new Tenant(state, tenant), key, null, (scoped, shard, now) -> {
            PageState.PromotionTask task = state.promotions.get(scoped);
            int m = shard.mappings.find(scoped);
            if (task == null || task.holder != null || !task.queued.placement().sameRange(placement)
                    || m < 0 || !shard.mappings.sameRange(m, placement)) {
                return Result.ok(false);
            }
            if (pages.notDurable(shard.mappings, m) != 0) {
                return Result.ok(false); // its commit is not in the log yet: the holder would copy what may be lost; taken later
            }
            task.holder = holder;
            task.takenNanos = now;
            pages.grantLease(shard.mappings, m);
            return Result.ok(true);
        });
        return taken.isOk() && taken.value();
    }

    /**
     * Puts tasks back in the queue for any node: those {@code holder} holds (it died), or, with {@code holder} null,
     * those held longer than {@code heldNanos}. Not logged: holders are not. Returns the tasks released.
     */
    public List<Task> release(String holder, long heldNanos) {
        List<Task> released = new ArrayList<>();
        for (PageState.PromotionTask task : state.promotions.values()) {
            KeyTable.Shard shard = keys.shardOf(task.scopedKey);
            shard.lock.lock();
            try {
                long now = state.now();
                if (task.holder != null && (holder != null ? task.holder.equals(holder) : now - task.takenNanos > heldNanos)) {
                    released.add(view(task, now));
                    task.holder = null;
                }
            } finally {
                shard.lock.unlock();
            }
        }
        return released;
    }

    /**
     * Ends the task of (tenant, key) that {@code holder} holds (null: a queued one nobody holds) with {@code outcome},
     * logged. Answers the source it was about. OBJECT_NOT_FOUND when the object has no task (never queued, or its source
     * was removed or overwritten meanwhile, which ended it); INVALID_PARAMS when someone else holds it.
     */
    public Result<Placement> end(String tenant, String key, String holder, Change.PromotionOutcome outcome) {
        return pages.underKeyLock(new Tenant(state, tenant), key, null, (scoped, shard, now) -> {
            PageState.PromotionTask task = state.promotions.get(scoped);
            if (task == null) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key " + Quoted.of(key) + " of tenant " + Quoted.of(tenant) + " has no promotion task"
                        + " (it was never queued, it ended, or the object was removed or overwritten while it was copied)");
            }
            if (holder == null ? task.holder != null : !holder.equals(task.holder)) {
                return Result.error(ErrorCode.INVALID_PARAMS, "the promotion task of key " + Quoted.of(key) + " (tenant " + tenant + ") is "
                        + (task.holder == null ? "queued, not taken by client " + holder : "held by client " + task.holder
                        + (holder == null ? "" : ", not by client " + holder)));
            }
            Placement source = task.queued.placement();
            pages.logAndApply(new Change.PromotionEnded(tenant, key, source, outcome), scoped);
            (outcome == Change.PromotionOutcome.SUCCEEDED ? succeededTotal : failedTotal).increment();
            return Result.ok(source);
        });
    }

    public long queuedTotal() {
        return queuedTotal.sum();
    }

    public long succeededTotal() {
        return succeededTotal.sum();
    }

    public long failedTotal() {
        return failedTotal.sum();
    }

    /** Whether any object has a task: when none does, eviction need not ask about each key it samples. */
    boolean any() {
        return !state.promotions.isEmpty();
    }

    /** Whether the committed object of {@code scopedKey} has a task (it is pinned). */
    boolean pinned(String scopedKey) {
        return state.promotions.get(scopedKey) != null;
    }

    /** The tasks a snapshot holds: every one, queued again on restore. */
    public List<Change.PromotionQueued> export() {
        List<Change.PromotionQueued> tasks = new ArrayList<>();
        for (PageState.PromotionTask task : state.promotions.values()) {
            tasks.add(task.queued);
        }
        return tasks;
    }

    /** Recovery: drops tasks whose source the restored tables do not hold (a fuzzy snapshot's leftovers). */
    void dropOrphans() {
        state.promotions.values().removeIf(task -> {
            MappingTable table = keys.shardOf(task.scopedKey).mappings;
            int m = table.find(task.scopedKey);
            return m < 0 || !table.sameRange(m, task.queued.placement());
        });
    }

    private static Task view(PageState.PromotionTask task, long now) {
        Change.PromotionQueued q = task.queued;
        return new Task(q.tenant(), q.key(), q.placement(), q.queuedMs(), task.holder, task.holder == null ? 0 : now - task.takenNanos);
    }
}
