package io.mcctl.master.service;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.master.service.PageService.KeyDetail;
import java.util.ArrayList;
import java.util.List;

/**
 * The read side of the page RPCs: lookups of committed mappings, one key or a batch, with the read lease each grants, the
 * tenant's hit and miss counts, and the read counted for promotion.
 *
 * <p>A change is applied as soon as it is appended, before the log's group commit makes it durable, so a lookup may meet
 * a mapping whose commit the log does not hold yet. It never hands one out: each mapping remembers the sequence of the
 * commit that made it until a lookup finds that durable ({@link MappingTable#unconfirmedSequence}). A lookup that can wait
 * notes the sequence in its {@link AnswerBarrier} and answers that key {@link #waitsForLog}: its caller looks it up again
 * once the log holds it (or has failed, when the key is a miss). A lookup that cannot wait answers a miss. So readers see
 * only what the log holds, and a restart after the log failed brings back what they saw.
 *
 * <p>Locks: the key's shard lock, one at a time; the promotion sketch is counted after it is let go, without a lock.
 */
final class Lookups {

    private final PageContext context;
    private final PageState state;
    private final KeyTable keys;
    /** Counts reads for promotion; null when promotion by reads is off. */
    private final PromotionAdmission admission;

    Lookups(PageContext context, PromotionAdmission admission) {
        this.context = context;
        this.state = context.state;
        this.keys = context.keys;
        this.admission = admission;
    }

    private Tenant tenant(String id) {
        return new Tenant(state, id);
    }

    /** The committed mapping of (tenant, key), granting a read lease on its pages. */
    Result<Placement> getMapping(String tenant, String key) {
        return getMapping(tenant(tenant), key);
    }

    Result<Placement> getMapping(Tenant tenant, String key) {
        return lookup(tenant, key, true, COMMITTED, null);
    }

    /**
     * {@link #getMapping(Tenant, String)} for a caller that can wait for the log: a mapping whose commit the log does not
     * hold yet is answered {@link #waitsForLog}, with the commit's sequence noted in {@code wait} (else a miss).
     */
    Result<Placement> getMapping(Tenant tenant, String key, AnswerBarrier wait) {
        return lookup(tenant, key, true, COMMITTED, wait);
    }

    /**
     * Whether {@code found} is the answer of a lookup that met a mapping whose commit the log does not hold yet: the key
     * is to be looked up again (with no barrier) once the sequence the lookup's barrier noted is durable, or the log
     * failed, when that lookup answers a miss. It carries no lease and counted no hit.
     */
    static boolean waitsForLog(Result<?> found) {
        return found == WAITS_FOR_LOG;
    }

    private static final Result<Object> WAITS_FOR_LOG = Result.error(ErrorCode.REPLICA_IS_NOT_READY,
            "the key's last change is not durable yet: look it up again once it is");

    @SuppressWarnings("unchecked")
    private static <T> Result<T> waitingForLog() {
        return (Result<T>) WAITS_FOR_LOG;
    }

    /**
     * The committed mapping of (tenant, key) with how long ago it was last used (before this call, which uses it and
     * grants a read lease like {@link #getMapping}) and whether it is pinned.
     */
    Result<KeyDetail> getMappingDetail(String tenant, String key) {
        return getMappingDetail(tenant, key, null);
    }

    /** {@link #getMappingDetail(String, String)} for a caller that can wait for the log, as {@link #getMapping(Tenant, String, AnswerBarrier)}. */
    Result<KeyDetail> getMappingDetail(String tenant, String key, AnswerBarrier wait) {
        return lookup(tenant(tenant), key, true, (table, m, previousUse) -> new KeyDetail(table.placement(m),
                Math.max(0, (state.now() - previousUse) / 1_000_000), table.pinned(m)), wait);
    }

    /** The committed mapping without a lease (for stat and existence checks: no descriptor is handed out). */
    Result<Placement> peek(String tenant, String key) {
        return peek(tenant(tenant), key);
    }

    Result<Placement> peek(Tenant tenant, String key) {
        return lookup(tenant, key, false, COMMITTED, null);
    }

    /** What a lookup answers, read from mapping {@code m} under its shard lock; {@code previousUse} is its use before this lookup. */
    @FunctionalInterface
    private interface MappingView<T> {
        T of(MappingTable table, int m, long previousUse);
    }

    private static final MappingView<Placement> COMMITTED = (table, m, previousUse) -> table.placement(m);

    /**
     * {@link #getMapping} of each key of a batch, {@code tenantIds.get(i)}'s {@code keys.get(i)}, in order. The
     * batch's index slots, records and key bytes are read ahead first ({@link KeyTable#touch}), so that the cache
     * misses of its keys overlap: per key, the same lookup, lease and counting as {@link #getMapping}.
     */
    List<Result<Placement>> getMappings(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList) {
        return lookupAll(tenants, tenantIds, keyList, true, null);
    }

    /** {@link #getMappings} for a caller that can wait for the log, each key as {@link #getMapping(Tenant, String, AnswerBarrier)}. */
    List<Result<Placement>> getMappings(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, AnswerBarrier wait) {
        return lookupAll(tenants, tenantIds, keyList, true, wait);
    }

    /**
     * {@link #exists} of each key of a batch, {@code tenantIds.get(i)}'s {@code keys.get(i)}, in order, its lines read
     * ahead as {@link #getMappings} reads them.
     */
    List<Result<Boolean>> existsAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList) {
        return existsAll(tenants, tenantIds, keyList, null);
    }

    /** {@link #existsAll} for a caller that can wait for the log, each key as {@link #getMapping(Tenant, String, AnswerBarrier)}. */
    List<Result<Boolean>> existsAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, AnswerBarrier wait) {
        List<Result<Placement>> found = lookupAll(tenants, tenantIds, keyList, false, wait);
        List<Result<Boolean>> results = new ArrayList<>(found.size());
        for (Result<Placement> one : found) {
            results.add(existence(one));
        }
        return results;
    }

    /** The committed mapping of each key of a batch, leased when {@code lease}, after the batch's lines are read ahead. */
    private List<Result<Placement>> lookupAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, boolean lease,
                                              AnswerBarrier wait) {
        PageContext.ReadAhead batch = context.readAhead(tenants, tenantIds, keyList, i -> null);
        List<Result<Placement>> results = new ArrayList<>(keyList.size());
        // One clock reading for the batch's leases: each still starts no earlier than the client asked, which is what
        // the client counts its lease from; and the batch's hits and misses go to each tenant's counters at once.
        long now = state.now();
        HitTally tally = new HitTally();
        try {
            for (int i = 0; i < keyList.size(); i++) {
                results.add(batch.scoped()[i] == null ? lookup(batch.owners()[i], keyList.get(i), lease, COMMITTED, wait) // answers what is wrong
                        : lookupScoped(batch.owners()[i], keyList.get(i), batch.scoped()[i], lease, COMMITTED, now, tally, wait));
            }
        } finally {
            tally.flush();
        }
        return results;
    }

    /** The hits and misses of a run of lookups of one tenant, added to its counters when the tenant changes or at the end. */
    private static final class HitTally {
        private Tenant tenant;
        private long hits;
        private long misses;

        void count(Tenant of, boolean hit) {
            if (of != tenant) {
                flush();
                tenant = of;
            }
            if (hit) {
                hits++;
            } else {
                misses++;
            }
        }

        void flush() {
            if (tenant != null) {
                PageState.TenantUsage usage = tenant.usage();
                if (hits != 0) {
                    usage.hits.add(hits);
                }
                if (misses != 0) {
                    usage.misses.add(misses);
                }
            }
            hits = 0;
            misses = 0;
        }
    }

    private <T> Result<T> lookup(Tenant tenant, String key, boolean lease, MappingView<T> view, AnswerBarrier wait) {
        String invalid = tenant.problem != null ? tenant.problem : KeyRules.checkKey(key);
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        HitTally tally = new HitTally();
        try {
            return lookupScoped(tenant, key, KeyRules.scopedKey(tenant.id, key), lease, view, state.now(), tally, wait);
        } finally {
            tally.flush();
        }
    }

    /**
     * {@link #lookup} of a valid key of a valid tenant, {@code scoped} being the two as the table keys them; a lease
     * granted runs from {@code now}, and a leased lookup counts its hit or miss in {@code tally}. A mapping whose commit
     * the log does not hold yet is {@link #waitsForLog} when {@code wait} is given (and the log has not failed), else a miss.
     */
    private <T> Result<T> lookupScoped(Tenant tenant, String key, String scoped, boolean lease, MappingView<T> view, long now, HitTally tally,
                                       AnswerBarrier wait) {
        KeyTable.Shard shard = keys.shardOf(scoped);
        Result<T> hit;
        shard.lock.lock();
        try {
            MappingTable table = shard.mappings;
            int m = table.find(scoped);
            long notDurable = m < 0 ? 0 : context.notDurable(table, m);
            if (notDurable != 0) {
                if (context.mayWait(wait)) {
                    wait.needs(notDurable);
                    return waitingForLog();
                }
                m = -1; // a miss: the log does not hold it yet, and this lookup cannot wait (or the log failed: it never will)
            }
            if (m < 0) {
                if (lease) {
                    tally.count(tenant, false);
                }
                if (shard.inFlight.get(scoped) != null) {
                    return Result.error(ErrorCode.REPLICA_IS_NOT_READY, "key " + Quoted.of(key) + " is still being written");
                }
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, KeyRules.notFound(tenant.id, key));
            }
            long previousUse = table.lastUsedNanos(m);
            if (lease) {
                context.grantLease(table, m, now);
                tally.count(tenant, true);
            }
            hit = Result.ok(view.of(table, m, previousUse));
        } finally {
            shard.lock.unlock();
        }
        PromotionAdmission counting = admission;
        if (lease && counting != null && counting.counting()) {
            counting.read(scoped); // lock-free: counted after the shard lock is let go
        }
        return hit;
    }

    Result<Boolean> exists(String tenant, String key) {
        return exists(tenant(tenant), key);
    }

    Result<Boolean> exists(Tenant tenant, String key) {
        return existence(peek(tenant, key));
    }

    /** {@link #exists(String, String)} for a caller that can wait for the log, as {@link #getMapping(Tenant, String, AnswerBarrier)}. */
    Result<Boolean> exists(String tenant, String key, AnswerBarrier wait) {
        return existence(lookup(tenant(tenant), key, false, COMMITTED, wait));
    }

    /** A key exists when it has a committed mapping; bad input is an error, anything else a no. */
    private static Result<Boolean> existence(Result<Placement> found) {
        if (waitsForLog(found)) {
            return waitingForLog();
        }
        if (found.isOk()) {
            return Result.ok(true);
        }
        return found.error() == ErrorCode.INVALID_PARAMS ? found.cast() : Result.ok(false);
    }
}
