package io.mcctl.master.service;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.storage.layout.BucketLayout;
import java.util.List;

/**
 * What every room of the page service shares: the {@link PageState} with its one apply path, the {@link ChangeLog} its
 * changes go to (given at construction), the times the service was built with, and the validate-log-apply step each
 * change of a key goes through ({@link #underKeyLock}, {@link #logAndApply}).
 *
 * <p>Validate, log, apply: a change the log refuses (it failed) is never applied. Once the log has failed no more changes
 * are taken at all ({@link #refuseChanges}); lookups go on.
 *
 * <p>Holds no lock of its own: a change is logged and applied under its key's shard lock, so the log's order is the
 * order changes of one key were applied in (see {@link PageService} for how the locks nest).
 */
final class PageContext {

    final PageState state;
    final KeyTable keys;
    final Quarantine quarantine;
    final BucketSpace space;
    final ChangeLog changeLog;
    final long allocationDeadlineNanos;
    final long allocationGraceNanos;
    final long readLeaseNanos;
    /** Where logged commits and removals of objects with engine block hashes go (serving only, never replay). */
    private final KvEventSink kvEvents;
    /** Why changes are refused (the log failed), or null while they are taken. */
    private volatile String refusal;

    PageContext(PageState state, ChangeLog changeLog, long allocationDeadlineNanos, long allocationGraceNanos, long readLeaseNanos,
                KvEventSink kvEvents) {
        this.kvEvents = kvEvents;
        this.state = state;
        this.keys = state.keys;
        this.quarantine = state.quarantine;
        this.space = state.space;
        this.changeLog = changeLog;
        this.allocationDeadlineNanos = allocationDeadlineNanos;
        this.allocationGraceNanos = allocationGraceNanos;
        this.readLeaseNanos = readLeaseNanos;
    }

    BucketLayout layout() {
        return state.layout;
    }

    /** Wall-clock milliseconds of a time on this service's clock, as its changes log it (rounded up). */
    long wallMillis(long nanos) {
        return state.wallMillis(nanos);
    }

    long nowWallMillis() {
        return state.wallMillis(state.now());
    }

    void refuseChanges(String reason) {
        if (refusal == null) {
            refusal = reason;
        }
    }

    String refusal() {
        return refusal;
    }

    void checkAccepting() {
        String why = refusal;
        if (why != null) {
            throw new ChangeLog.Refused(why, null);
        }
    }

    void logAndApply(Change change) {
        logAndApply(change, null);
    }

    /**
     * @param scopedKey the change's key as tenant, NUL, key when the caller has it, so the transition need not build it again
     * @return the change's log sequence (0 when nothing is logged)
     */
    long logAndApply(Change change, String scopedKey) {
        long sequence = changeLog.append(change);
        state.apply(change, scopedKey, sequence);
        if (Change.announcesEvent(change)) {
            kvEvents.changed(change, sequence); // under the key's lock, in the key's log order; the sink only queues
        }
        return sequence;
    }

    /** A change of one key, made under its shard lock once the request is valid and changes are taken. */
    @FunctionalInterface
    interface KeyChange<T> {
        Result<T> apply(String scopedKey, KeyTable.Shard shard, long now);
    }

    /**
     * Checks (tenant, key) and {@code problem} (null: none), refuses when changes are not taken, then runs {@code change}
     * under the key's shard lock. The calls of every offload (allocate, notify) spell this
     * out instead, so the hot path makes no lambda.
     */
    <T> Result<T> underKeyLock(Tenant tenant, String key, String problem, KeyChange<T> change) {
        String invalid = firstProblem(tenant.problem, KeyRules.checkKey(key), problem);
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        checkAccepting();
        String scoped = KeyRules.scopedKey(tenant.id, key);
        KeyTable.Shard shard = keys.shardOf(scoped);
        shard.lock.lock();
        try {
            return change.apply(scoped, shard, state.now());
        } finally {
            shard.lock.unlock();
        }
    }

    /**
     * 0 when mapping {@code m} may be handed out: the commit that made it is durable. Else that commit's log sequence,
     * which a lookup waits for, or, when it cannot, answers a miss. A commit found durable is remembered, so that the
     * next lookups of the mapping ask nothing of the log. Caller holds the table's shard lock.
     */
    long notDurable(MappingTable table, int m) {
        long made = table.unconfirmedSequence(m);
        if (made == 0) {
            return 0;
        }
        if (made > changeLog.durableSequence()) {
            return made;
        }
        table.setUnconfirmedSequence(m, 0);
        return 0;
    }

    /** Whether a lookup that met a mapping the log does not hold yet is to wait for it: it can, and the log has not failed. */
    boolean mayWait(AnswerBarrier wait) {
        return wait != null && refusal == null;
    }

    /** Leases mapping {@code m}'s pages to readers for a lease period from now. Caller holds the table's shard lock. */
    void grantLease(MappingTable table, int m) {
        grantLease(table, m, state.now());
    }

    /** {@link #grantLease(MappingTable, int)} from {@code now}, a reading of this service's clock. */
    void grantLease(MappingTable table, int m, long now) {
        long until = now + readLeaseNanos;
        if (until - table.leaseUntilNanos(m) > 0) {
            table.setLeaseUntilNanos(m, until);
        }
        table.setLastUsedNanos(m, now); // handed out: recently used, for eviction
    }

    /**
     * The release time logged for the committed mapping's pages: when its last read lease runs out, or 0 when
     * they are freed at once.
     */
    long releaseMillis(MappingTable table, int m, long now) {
        long until = table.leaseUntilNanos(m);
        return until - now > 0 ? state.wallMillis(until) : 0;
    }

    /** A descriptor that names other pages than the key's allocation: refused, nothing changed. */
    <T> Result<T> mismatch(String key, Placement given, KeyTable.InFlight allocation) {
        return Result.error(ErrorCode.INVALID_PARAMS, "descriptor " + describe(given) + " does not match the allocation of key "
                + Quoted.of(key) + " at " + describe(allocation.placement));
    }

    String describe(Placement p) {
        // The size is a uint64 on the wire: a client's 2^64-1 is printed as it sent it, not as the long it became.
        BucketLayout layout = layout();
        return p.bucket() >= 0 && p.bucket() < layout.bucketCount()
                ? space.path(p.bucket()) + "@" + p.offset() + "+" + Long.toUnsignedString(p.size())
                : "bucket " + p.bucket() + "@" + p.offset() + "+" + Long.toUnsignedString(p.size());
    }

    static String describeKey(String scoped) {
        return "key " + Quoted.of(KeyRules.keyOf(scoped)) + " of tenant " + Quoted.of(KeyRules.tenantOf(scoped));
    }

    /** The first of the problems found, or null; spelled out rather than varargs, so no array is made per key. */
    static String firstProblem(String first, String second, String third) {
        return first != null ? first : second != null ? second : third;
    }

    /**
     * A batch's tenants, and the scoped key of each key that is valid for its tenant ({@code otherProblem} of the key's
     * index null too), else null: what the table is asked for, its index slots, records and key bytes read ahead
     * ({@link KeyTable#touch}) so that the cache misses of the batch's keys overlap instead of queueing.
     */
    record ReadAhead(Tenant[] owners, String[] scoped) {
    }

    ReadAhead readAhead(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, java.util.function.IntFunction<String> otherProblem) {
        int n = keyList.size();
        Tenant[] owners = new Tenant[n];
        String[] scoped = new String[n];
        for (int i = 0; i < n; i++) {
            owners[i] = tenants.of(tenantIds.get(i));
            String key = keyList.get(i);
            if (firstProblem(owners[i].problem, KeyRules.checkKey(key), otherProblem.apply(i)) == null) {
                scoped[i] = KeyRules.scopedKey(owners[i].id, key);
            }
        }
        if (n > 1) {
            keys.touch(scoped);
        }
        return new ReadAhead(owners, scoped);
    }
}
