package io.mcctl.master.service;

import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import io.mcctl.storage.layout.BucketLayout;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The master's page state and its one set of transitions. {@link #apply} is the only code that changes the
 * mapping table, the in-flight allocations and the quarantine: the serving path calls it after validating a
 * request and logging the change, and recovery calls it for every record it replays, so what a restart rebuilds
 * is what the master held.
 *
 * <p>Two things differ between the two callers, and only these. Serving keeps the bucket bitmaps in step with
 * each change (a range freed is cleared at once); recovery derives them once, from every claim, when it finishes,
 * because the snapshot it starts from was copied shard by shard while the master served and may hold a change
 * twice (a mapping and the quarantined range it became) until the log's records after it have replayed. For the
 * same reason each transition is guarded so that applying a change the state already holds changes nothing;
 * while serving, validation has made every guard true.
 *
 * <p>Locks: the caller holds the shard lock of the change's key (none for {@link Change.Released}, which takes the
 * quarantine lock); {@link Quarantine#lock} and the allocators' monitors nest inside it. Recovery is one thread.
 */
final class PageState {

    /** Keys and bytes of one tenant's committed mappings, and its allocations in flight. */
    static final class TenantUsage {
        final LongAdder keys = new LongAdder();
        final LongAdder bytes = new LongAdder();
        final LongAdder inFlight = new LongAdder();
        /** Bytes of its allocations in flight: they count against the quota as soon as they are handed out. */
        final LongAdder inFlightBytes = new LongAdder();
        /** The tenant's byte quota, 0 for none; set only by a logged {@link Change.QuotaSet}. */
        volatile long quotaBytes;
        /** Objects and bytes evicted, live or replayed. */
        final LongAdder evictedKeys = new LongAdder();
        final LongAdder evictedBytes = new LongAdder();
        /** Lookups that found a committed mapping, and ones that did not (live only). */
        final LongAdder hits = new LongAdder();
        final LongAdder misses = new LongAdder();
    }

    /** The layout in force: replaced (never changed in place) only by a {@link Change.LayoutGrown}, under the layout lock. */
    volatile BucketLayout layout;
    final KeyTable keys = new KeyTable();
    final Quarantine quarantine = new Quarantine();
    final BucketSpace space;
    final AtomicLong mappings = new AtomicLong();
    final AtomicLong inFlight = new AtomicLong();
    /** Committed mappings that are soft-pinned, and their bytes. */
    final AtomicLong pinnedMappings = new AtomicLong();
    final LongAdder pinnedBytes = new LongAdder();
    final ConcurrentHashMap<String, TenantUsage> tenants = new ConcurrentHashMap<>();
    /** Reservations not closed: open for allocations while serving; what recovery holds once replayed. */
    final Reservations reservations;
    /**
     * Promotion tasks by scoped key, at most one per key, each about the key's committed mapping of that moment. Filled
     * and emptied only by {@link #apply} (a task's holder excepted, which is not logged); changed under the key's shard
     * lock, read without it for listings.
     */
    final ConcurrentHashMap<String, PromotionTask> promotions = new ConcurrentHashMap<>();

    /**
     * A promotion task: what is logged ({@link Change.PromotionQueued}) and who holds it, which is not (a restart puts
     * every task back in the queue, for any node to take).
     */
    static final class PromotionTask {
        final String scopedKey;
        final Change.PromotionQueued queued;
        /** The node that took it, null while queued. Guarded by the key's shard lock. */
        String holder;
        /** When it was taken (service clock). Guarded by the key's shard lock. */
        long takenNanos;

        PromotionTask(String scopedKey, Change.PromotionQueued queued) {
            this.scopedKey = scopedKey;
            this.queued = queued;
        }
    }

    private final LongSupplier nanoClock;
    private final long wallOriginMillis;
    /** False while recovery fills the state; set once before serving. */
    private boolean bitmapsInStep = true;

    /** @param wallClock wall-clock milliseconds, read once: the log's times are taken against it */
    PageState(BucketLayout layout, LongSupplier nanoClock, LongSupplier wallClock) {
        this.layout = layout;
        this.space = new BucketSpace(layout);
        this.reservations = new Reservations(layout.bucketCount());
        // Times are kept relative to construction so they never go below zero and 0 can mean "no read lease";
        // System.nanoTime() itself may be negative.
        long origin = nanoClock.getAsLong();
        this.nanoClock = () -> nanoClock.getAsLong() - origin;
        this.wallOriginMillis = wallClock.getAsLong();
    }

    long now() {
        return nanoClock.getAsLong();
    }

    /** Wall-clock milliseconds of a time on this state's clock, rounded up: a deadline or release logged is never early. */
    long wallMillis(long nanos) {
        return wallOriginMillis + Math.floorDiv(nanos + 999_999, 1_000_000L);
    }

    /** This state's clock reading for wall-clock milliseconds. */
    long clockOf(long wallMillis) {
        return (wallMillis - wallOriginMillis) * 1_000_000L;
    }

    void startRestore() {
        bitmapsInStep = false;
    }

    void finishRestore() {
        bitmapsInStep = true;
    }

    // ---- the transitions ----

    void apply(Change change) {
        apply(change, null, 0);
    }

    void apply(Change change, String scopedKey) {
        apply(change, scopedKey, 0);
    }

    /**
     * @param scopedKey the change's key as tenant, NUL, key when the caller holds it already (serving: the very string
     *                  whose hash the table has cached), else null
     * @param sequence  the change's log sequence while serving (0 on replay, or when nothing is logged): pages it frees
     *                  are not handed out in an answer that does not wait for it ({@link BucketSpace#lastFreeSequence}),
     *                  and a mapping it commits is handed to no reader before it is durable
     *                  ({@link MappingTable#unconfirmedSequence})
     */
    void apply(Change change, String scopedKey, long sequence) {
        if (change instanceof Change.Allocated a) {
            allocated(a, scopedKey != null ? scopedKey : KeyRules.scopedKey(a.tenant(), a.key()));
        } else if (change instanceof Change.Committed c) {
            committed(c, scopedKey != null ? scopedKey : KeyRules.scopedKey(c.tenant(), c.key()), sequence);
        } else if (change instanceof Change.AllocationDropped d) {
            dropped(d, scopedKey != null ? scopedKey : KeyRules.scopedKey(d.tenant(), d.key()), sequence);
        } else if (change instanceof Change.Removed r) {
            removed(r, scopedKey != null ? scopedKey : KeyRules.scopedKey(r.tenant(), r.key()), sequence);
        } else if (change instanceof Change.Released r) {
            released(r, sequence);
        } else if (change instanceof Change.Renewed r) {
            renewed(r, scopedKey != null ? scopedKey : KeyRules.scopedKey(r.tenant(), r.key()));
        } else if (change instanceof Change.QuotaSet q) {
            usage(q.tenant()).quotaBytes = q.maxBytes();
        } else if (change instanceof Change.LayoutGrown g) {
            layoutGrown(g);
        } else if (change instanceof Change.PromotionQueued q) {
            String scoped = scopedKey != null ? scopedKey : KeyRules.scopedKey(q.tenant(), q.key());
            PromotionTask current = promotions.get(scoped);
            if (current == null || !current.queued.placement().sameRange(q.placement())) {
                promotions.put(scoped, new PromotionTask(scoped, q));
            }
        } else if (change instanceof Change.PromotionEnded e) {
            endPromotion(scopedKey != null ? scopedKey : KeyRules.scopedKey(e.tenant(), e.key()), e.placement());
        } else if (change instanceof Change.Reserved r) {
            reservations.add(r, sequence, clockOf(r.openUntilMs()));
        } else if (change instanceof Change.ReservationClosed c) {
            reservations.close(c);
        } else if (change instanceof Change.EventsSealed) {
            return; // numbers KV event batches (KvEventHistory); no page state
        } else {
            throw new IllegalArgumentException("unknown change " + change);
        }
    }

    private void allocated(Change.Allocated a, String scoped) {
        KeyTable.Shard shard = keys.shardOf(scoped);
        KeyTable.InFlight current = shard.inFlight.get(scoped);
        if (current != null) {
            if (current.placement.sameRange(a.placement())) {
                return; // a snapshot taken after this record already holds it
            }
            // Recovery only: the snapshot holds an allocation of this key that this record came before; the records
            // after this one bring the key back to where it was.
            endInFlight(shard, current, a.tenant());
        }
        KeyTable.InFlight pending = new KeyTable.InFlight(scoped, a.placement(), clockOf(a.deadlineMs()), a.overwrite(), a.pin());
        shard.inFlight.add(pending);
        shard.append(pending);
        inFlight.incrementAndGet();
        TenantUsage usage = usage(a.tenant());
        usage.inFlight.increment();
        usage.inFlightBytes.add(a.placement().size());
    }

    private void renewed(Change.Renewed r, String scoped) {
        KeyTable.Shard shard = keys.shardOf(scoped);
        KeyTable.InFlight pending = shard.inFlight.get(scoped);
        if (pending == null || !pending.placement.sameRange(r.placement())) {
            return;
        }
        // The new deadline is now plus the full deadline, the latest of the shard: moving to the end keeps the order.
        shard.unlink(pending);
        pending.deadlineNanos = clockOf(r.deadlineMs());
        shard.append(pending);
    }

    private void committed(Change.Committed c, String scoped, long sequence) {
        KeyTable.Shard shard = keys.shardOf(scoped);
        // The allocation this commit ends is in flight no more, even when the snapshot already holds the commit: its
        // Allocated record, replayed just before, has put it back.
        KeyTable.InFlight pending = shard.inFlight.get(scoped);
        if (pending != null && pending.placement.sameRange(c.placement())) {
            endInFlight(shard, pending, c.tenant());
        }
        MappingTable table = shard.mappings;
        int m = table.find(scoped);
        if (m >= 0 && table.sameAs(m, c.placement())) {
            return;
        }
        TenantUsage usage = usage(c.tenant());
        Placement placement = c.placement();
        if (m >= 0) {
            PromotionTask promoting = promotions.get(scoped);
            if (promoting != null && !promoting.queued.placement().sameRange(placement)) {
                promotions.remove(scoped, promoting); // it copied the mapping this commit replaces
            }
            noteOwner(table.placement(m), 0); // before its pages can be another's
            if (table.sameRange(m, c.replaced())) {
                release(c.replaced(), c.replacedReleaseMs(), sequence);
            }
            usage.bytes.add(-table.size(m));
            if (table.pinned(m)) {
                pinnedMappings.decrementAndGet();
                pinnedBytes.add(-table.size(m));
            }
            table.setPlacement(m, placement);
            table.setBlockHashes(m, c.blocks() != null ? c.blocks().blockHashes() : null);
            table.setUnconfirmedSequence(m, sequence); // no lease: nobody has been handed it
            table.setLastUsedNanos(m, now());
            table.setPinned(m, c.pinned());
        } else {
            mappings.incrementAndGet();
            usage.keys.increment();
            m = table.add(scoped, placement.bucket(), placement.offset(), placement.size(), placement.crc32c(), c.pinned(), now(),
                    c.blocks() != null ? c.blocks().blockHashes() : null);
            table.setUnconfirmedSequence(m, sequence);
        }
        if (c.pinned()) {
            pinnedMappings.incrementAndGet();
            pinnedBytes.add(placement.size());
        }
        usage.bytes.add(placement.size());
        noteOwner(placement, scoped.hashCode());
    }

    private void dropped(Change.AllocationDropped d, String scoped, long sequence) {
        KeyTable.Shard shard = keys.shardOf(scoped);
        KeyTable.InFlight pending = shard.inFlight.get(scoped);
        if (pending == null || !pending.placement.sameRange(d.placement())) {
            return;
        }
        endInFlight(shard, pending, d.tenant());
        release(d.placement(), d.releaseMs(), sequence);
    }

    private void removed(Change.Removed r, String scoped, long sequence) {
        KeyTable.Shard shard = keys.shardOf(scoped);
        MappingTable table = shard.mappings;
        int m = table.find(scoped);
        if (m < 0 || !table.sameRange(m, r.placement())) {
            return;
        }
        long size = table.size(m);
        TenantUsage usage = usage(r.tenant());
        usage.keys.decrement();
        usage.bytes.add(-size);
        if (r.reason() != Change.RemoveReason.REMOVED) {
            usage.evictedKeys.increment();
            usage.evictedBytes.add(size);
        }
        if (table.pinned(m)) {
            pinnedMappings.decrementAndGet();
            pinnedBytes.add(-size);
        }
        endPromotion(scoped, r.placement()); // its source is gone
        noteOwner(r.placement(), 0); // before its pages can be another's
        table.remove(m);
        mappings.decrementAndGet();
        release(r.placement(), r.releaseMs(), sequence);
    }

    /**
     * The allocators grow first, then the layout is published: a caller that sees the new size finds buckets that large.
     * A size at or below the current one (a snapshot taken after the grow) changes nothing.
     */
    private void layoutGrown(Change.LayoutGrown g) {
        BucketLayout current = layout;
        if (g.bucketSize() <= current.bucketSize()) {
            return;
        }
        BucketLayout grown = new BucketLayout(current.root(), current.bucketCount(), current.pageSize(), g.bucketSize());
        space.grow(grown, keys);
        layout = grown;
    }

    /** Ends the promotion task of {@code scoped} when it is about {@code placement}. */
    private void endPromotion(String scoped, Placement placement) {
        PromotionTask task = promotions.get(scoped);
        if (task != null && task.queued.placement().sameRange(placement)) {
            promotions.remove(scoped, task);
        }
    }

    private void released(Change.Released r, long sequence) {
        if (quarantine.remove(r.bucket(), r.firstPage(), r.pages())) {
            freePages(r.bucket(), r.firstPage(), r.pages(), sequence);
        }
    }

    private void endInFlight(KeyTable.Shard shard, KeyTable.InFlight pending, String tenant) {
        TenantUsage usage = usage(tenant);
        usage.inFlight.decrement();
        usage.inFlightBytes.add(-pending.placement.size());
        shard.unlink(pending);
        shard.inFlight.remove(pending);
        inFlight.decrementAndGet();
    }

    /** A range leaving a mapping or an allocation: free at once ({@code releaseMs} 0), or quarantined until then. */
    private void release(Placement placement, long releaseMs, long sequence) {
        long firstPage = placement.offset() / layout.pageSize();
        long pages = layout.pagesFor(placement.size());
        if (releaseMs > 0) {
            quarantine.add(new Quarantine.Range(clockOf(releaseMs), placement.bucket(), firstPage, pages));
        } else {
            freePages(placement.bucket(), firstPage, pages, sequence);
        }
    }

    /**
     * Notes in {@link BucketSpace#owners} that the key of hash {@code hash} holds {@code placement}'s pages (0: that no
     * mapping does any more). While serving only: recovery notes every mapping once, when it ends.
     */
    private void noteOwner(Placement placement, int hash) {
        if (bitmapsInStep) {
            long pageSize = layout.pageSize();
            space.owners.hold(placement.bucket(), placement.offset() / pageSize, layout.pagesFor(placement.size()), hash);
        }
    }

    private void freePages(int bucket, long firstPage, long pages, long sequence) {
        if (bitmapsInStep) {
            space.free(bucket, firstPage, pages, sequence);
        }
    }

    TenantUsage usage(String tenant) {
        TenantUsage usage = tenants.get(tenant);
        return usage != null ? usage : tenants.computeIfAbsent(tenant, t -> new TenantUsage());
    }
}
