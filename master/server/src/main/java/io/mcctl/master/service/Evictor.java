package io.mcctl.master.service;

import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.eviction.EvictionPolicy;
import io.mcctl.master.service.eviction.VictimOrder;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.layout.BucketLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/**
 * The mechanism of eviction: samples the mapping tables under their shard locks, asks the {@link VictimOrder} which
 * objects go first, and evicts them through the one apply path (a logged {@link Change.Removed}), as the
 * {@link EvictionPolicy} given at construction says when. Three callers: the background watermark pass
 * ({@link #evictToWatermark}), an allocation that found no room ({@link #makeRoom}), and a tenant at its quota
 * ({@link #evictWithinQuota}). Never evicts an allocation in flight; an evicted object's pages wait out its read leases in
 * quarantine like a removed one's.
 *
 * <p>Locks: one shard lock at a time, never two; a window made for an allocation is fenced under its allocator's monitor
 * alone before anything in it is evicted. No lock of its own: the counters are adders.
 */
final class Evictor {

    /** Shards visited and mappings sampled per eviction: the oldest of about this many is the victim (approximate LRU). */
    static final int EVICTION_SAMPLES = 32;
    static final int EVICTION_SAMPLES_PER_SHARD = 4;
    /** Most of its own objects a tenant at its quota evicts for one allocation: bounded work on the caller's path. */
    static final int MAX_EVICTIONS_FOR_QUOTA = 64;
    /** Windows an allocation tries to make room in, when a concurrent change spoils one after its objects were chosen. */
    static final int ROOM_ATTEMPTS = 3;
    /** Mappings sampled for a watermark pass's threshold, and the fewest from which it is estimated at all. */
    static final int PASS_THRESHOLD_SAMPLES = 512;
    static final int MIN_PASS_THRESHOLD_SAMPLES = 16;
    private static final long NO_THRESHOLD = Long.MIN_VALUE;
    /** Evictions of a watermark pass's sweep per hold of a shard's lock. */
    static final int SWEEP_EVICTIONS_PER_HOLD = 16;
    /** Mappings looked at per shard by {@link #oldestUseAgeMillis}: its cost stays fixed whatever the table's size. */
    static final int AGE_SAMPLES_PER_SHARD = 8;

    private final PageContext context;
    private final PageState state;
    private final KeyTable keys;
    private final Quarantine quarantine;
    private final BucketSpace space;
    private final Promotions promotions;
    private final EvictionPolicy policy;
    private final VictimOrder order;
    private final Counters counters;
    private final LongAdder evictionRuns;
    private final LongAdder evictionNanos;
    private final LongAdder evictedWatermark;
    private final LongAdder evictedWatermarkBytes;
    private final LongAdder evictedAllocation;
    private final LongAdder evictedAllocationBytes;
    private final LongAdder evictedQuota;
    private final LongAdder evictedQuotaBytes;
    private final LongAdder roomsLost;

    /** What eviction counted since the start, kept by every evictor of one service whatever its policy. */
    private static final class Counters {
        final LongAdder evictionRuns = new LongAdder();
        final LongAdder evictionNanos = new LongAdder();
        final LongAdder evictedWatermark = new LongAdder();
        final LongAdder evictedWatermarkBytes = new LongAdder();
        final LongAdder evictedAllocation = new LongAdder();
        final LongAdder evictedAllocationBytes = new LongAdder();
        final LongAdder evictedQuota = new LongAdder();
        final LongAdder evictedQuotaBytes = new LongAdder();
        final LongAdder roomsLost = new LongAdder();
    }

    Evictor(PageContext context, Promotions promotions, EvictionPolicy policy, VictimOrder order) {
        this(context, promotions, policy, order, new Counters());
    }

    /** An evictor with another policy that counts into {@code same}'s counters. */
    Evictor(Evictor same, EvictionPolicy policy) {
        this(same.context, same.promotions, policy, same.order, same.counters);
    }

    private Evictor(PageContext context, Promotions promotions, EvictionPolicy policy, VictimOrder order, Counters counters) {
        this.counters = counters;
        this.evictionRuns = counters.evictionRuns;
        this.evictionNanos = counters.evictionNanos;
        this.evictedWatermark = counters.evictedWatermark;
        this.evictedWatermarkBytes = counters.evictedWatermarkBytes;
        this.evictedAllocation = counters.evictedAllocation;
        this.evictedAllocationBytes = counters.evictedAllocationBytes;
        this.evictedQuota = counters.evictedQuota;
        this.evictedQuotaBytes = counters.evictedQuotaBytes;
        this.roomsLost = counters.roomsLost;
        this.context = context;
        this.state = context.state;
        this.keys = context.keys;
        this.quarantine = context.quarantine;
        this.space = context.space;
        this.promotions = promotions;
        this.policy = policy;
        this.order = order;
    }

    EvictionPolicy policy() {
        return policy;
    }

    private BucketLayout layout() {
        return state.layout;
    }

    /** A window fenced for an allocation was let go: the allocation did not take it. */
    void roomLost() {
        roomsLost.increment();
    }


    /** Pages that stay used once quarantine drains. */
    private long pagesInUse() {
        return space.allocatedPages() - quarantine.pages();
    }

    /**
     * The background evictor's pass: when the pages in use are above the high watermark, evicts least recently used
     * objects until they are below the low watermark, at most {@code maxEvictions} in this pass. Never evicts an
     * allocation in flight; an evicted object's pages wait out its read leases in quarantine like a removed one's.
     *
     * <p>The bulk of a pass is a sweep: every unpinned object used before a threshold estimated from a sample
     * ({@link #passThreshold}) is evicted, shard by shard in the order of the shards' records, one shard lock at a time;
     * what the sweep leaves, when the estimate fell short, is evicted one sampled victim at a time.
     *
     * @return objects evicted
     */
    long evictToWatermark(int maxEvictions) {
        if (!policy.enabled() || context.refusal() != null) {
            return 0;
        }
        long total = layout().pagesPerBucket() * layout().bucketCount();
        long inUse = pagesInUse();
        if (!policy.above(inUse, total)) {
            return 0;
        }
        long began = System.nanoTime();
        long target = policy.target(total);
        long evicted = 0;
        long threshold = passThreshold(inUse - target, inUse, maxEvictions);
        if (threshold != NO_THRESHOLD) {
            int start = java.util.concurrent.ThreadLocalRandom.current().nextInt(KeyTable.SHARDS);
            for (int i = 0; i < KeyTable.SHARDS && inUse > target && evicted < maxEvictions; i++) {
                Swept swept = sweep(keys.shard((start + i) & (KeyTable.SHARDS - 1)), threshold, inUse - target, maxEvictions - evicted);
                inUse -= swept.pages();
                evicted += swept.evictions();
            }
        }
        // What the sweep left, when its threshold, a sample's estimate, was too early: one sampled victim at a time.
        while (inUse > target && evicted < maxEvictions) {
            long freed = evictOne(Change.RemoveReason.EVICTED_WATERMARK, null);
            if (freed < 0) {
                break; // nothing left to evict
            }
            if (freed > 0) {
                evicted++;
                inUse -= freed;
            }
        }
        evictionRuns.increment();
        evictionNanos.add(System.nanoTime() - began);
        return evicted;
    }

    /**
     * Makes a run of {@code pages} free pages for an allocation that found none, and fences it for that allocation
     * ({@link BitmapPageAllocator#fence}): finds the best window {@link RoomSearch} can around about
     * {@value #EVICTION_SAMPLES} sampled mappings, fences it, evicts exactly the objects in it, and checks that it is then
     * free. Null, having evicted nothing, when no window is found: the allocation is refused as before.
     *
     * <p>A window whose objects are leased (only when no other is found) is returned unfenced once its objects are evicted:
     * their pages wait out the leases in quarantine, and the allocation is answered with when they are free.
     *
     * <p>Between the choice and the evictions an object of the window may be used, replaced or removed by another call.
     * Then the window is let go: what was evicted of it stays evicted (counted in {@link #roomsLostTotal}), and another
     * window is looked for, at most {@value #ROOM_ATTEMPTS} in all. A window is fenced before anything in it is evicted,
     * so the pages evictions free there go to no other allocation.
     */
    RoomSearch.Room makeRoom(long pages) {
        for (int attempt = 0; attempt < ROOM_ATTEMPTS; attempt++) {
            RoomSearch.Room room = findRoom(pages);
            if (room == null) {
                return null;
            }
            BitmapPageAllocator allocator = space.allocators[room.bucket()];
            if (!room.leased() && !allocator.fence(room.firstPage(), pages)) {
                continue; // another allocation fenced pages of it meanwhile: nothing was evicted yet
            }
            boolean evicted = evictRoom(room);
            if (room.leased()) {
                if (evicted) {
                    return room;
                }
                roomsLost.increment();
                return null;
            }
            if (evicted && allocator.isRangeFree(room.firstPage(), pages)) {
                return room;
            }
            allocator.unfence(room.firstPage(), pages);
            roomsLost.increment();
        }
        return null;
    }

    /**
     * The best window {@link RoomSearch} finds for {@code pages} pages around about {@value #EVICTION_SAMPLES} takeable
     * mappings sampled, unleased ones first, then the least recently used; or null.
     */
    private RoomSearch.Room findRoom(long pages) {
        long now = state.now();
        boolean pinnedAllowed = state.pinnedMappings.get() >= state.mappings.get();
        record Sampled(RoomSearch.Anchor anchor, boolean leased, long used) {
        }
        List<Sampled> sampled = new ArrayList<>();
        sampleMappings(java.util.concurrent.ThreadLocalRandom.current().nextInt(KeyTable.SHARDS), 1, EVICTION_SAMPLES_PER_SHARD,
                EVICTION_SAMPLES, false, (shard, table, k) -> {
                    if (table.pinned(k) && !pinnedAllowed || beingPromoted(table, k)) {
                        return false;
                    }
                    sampled.add(new Sampled(new RoomSearch.Anchor(table.bucket(k), table.offset(k) / layout().pageSize(),
                            layout().pagesFor(table.size(k))), table.leaseUntilNanos(k) - now > 0, table.lastUsedNanos(k)));
                    return true;
                });
        // Unleased ones first, whose pages free at once; then the least recently used.
        sampled.sort((a, b) -> order.compareAnchors(a.leased(), a.used(), b.leased(), b.used()));
        List<RoomSearch.Anchor> anchors = new ArrayList<>();
        for (Sampled s : sampled) {
            anchors.add(s.anchor());
        }
        return new RoomSearch(keys, space, layout(), this::beingPromoted, now, pinnedAllowed).find(pages, anchors);
    }

    /**
     * Evicts the objects of {@code room}, each shard's under one hold of its lock, each only when it is still as it was
     * found (same pages, not used since, same pin). False, at the first that was used or changed, with what was evicted
     * before it evicted still; an object gone meanwhile (removed or replaced) is passed over.
     */
    private boolean evictRoom(RoomSearch.Room room) {
        long pageSize = layout().pageSize();
        return keys.eachShardOf(room.victims(), RoomSearch.Victim::hash, (shard, victims) -> {
            MappingTable table = shard.mappings;
            for (RoomSearch.Victim v : victims) {
                int m = table.findHolding(v.hash(), room.bucket(), v.offset() / pageSize, pageSize);
                if (m < 0 || table.offset(m) != v.offset() || table.size(m) != v.size()) {
                    continue; // gone meanwhile: its pages are no longer a mapping's
                }
                if (table.lastUsedNanos(m) != v.lastUsedNanos() || table.pinned(m) != v.pinned() || beingPromoted(table, m)) {
                    return false; // used since it was chosen: it stays, and the window cannot be made
                }
                evictLocked(table, m, Change.RemoveReason.EVICTED_ALLOCATION);
            }
            return true;
        });
    }

    /** Evicts the tenant's own least recently used objects until {@code size} more bytes fit its quota; never another tenant's. */
    void evictWithinQuota(String tenant, PageState.TenantUsage usage, long size, long quota) {
        String prefix = KeyRules.scopedKey(tenant, "");
        for (int i = 0; i < MAX_EVICTIONS_FOR_QUOTA && usage.bytes.sum() + usage.inFlightBytes.sum() + size > quota; i++) {
            if (evictOne(Change.RemoveReason.EVICTED_QUOTA, prefix) < 0) {
                return;
            }
        }
    }

    /**
     * Evicts the least recently used of about {@value #EVICTION_SAMPLES} committed mappings sampled from shards taken
     * from a random start (each under its own lock, one at a time), after checking under its lock again that it has not
     * changed. Returns the pages it took out of use, 0 when the chosen one changed meanwhile, -1 when no shard holds a
     * committed mapping. {@code onlyPrefix}: only mappings whose scoped key starts with it (a tenant's own), or null.
     */
    private long evictOne(Change.RemoveReason reason, String onlyPrefix) {
        // The victim is remembered by its shard and mapping number, and its key and placement are read only once it is
        // checked again under its lock: a sample costs the reads of its record, not a string and an object each.
        final class Victim {
            KeyTable.Shard shard;
            int number = -1;
            long used;
            boolean pinned;
            long age = Long.MAX_VALUE;
        }
        Victim victim = new Victim();
        // For a quota, every mapping of a shard is looked at (from a random point) for the tenant's own: a random sample
        // could miss a small tenant's few keys among many.
        sampleMappings(java.util.concurrent.ThreadLocalRandom.current().nextInt(KeyTable.SHARDS), 1, EVICTION_SAMPLES_PER_SHARD,
                EVICTION_SAMPLES, onlyPrefix != null, (shard, table, k) -> {
                    if (onlyPrefix != null && !table.keyStartsWith(k, onlyPrefix)) {
                        return false; // another tenant's: a quota evicts only its own tenant's objects
                    }
                    boolean pinned = table.pinned(k);
                    long used = table.lastUsedNanos(k);
                    long age = order.rank(used, pinned, !pinned && beingPromoted(table, k));
                    if (victim.shard == null || age < victim.age) {
                        victim.age = age;
                        victim.shard = shard;
                        victim.number = k;
                        victim.used = used;
                        victim.pinned = pinned;
                    }
                    return true;
                });
        if (victim.shard == null) {
            return -1;
        }
        if (victim.pinned && onlyPrefix == null && state.pinnedMappings.get() < state.mappings.get()) {
            return 0; // only pinned ones sampled while unpinned ones exist elsewhere: sample again
        }
        victim.shard.lock.lock();
        try {
            MappingTable table = victim.shard.mappings;
            int m = victim.number;
            // A removal meanwhile gives the number to the shard's last mapping; a use changes the time it was last used.
            if (m >= table.size() || table.lastUsedNanos(m) != victim.used || table.pinned(m) != victim.pinned) {
                return 0; // changed or used since it was sampled: the next sample decides
            }
            return evictLocked(table, m, reason);
        } finally {
            victim.shard.lock.unlock();
        }
    }

    /** Whether mapping {@code m} is the source of a promotion in progress, whose task pins it while anything else can go. */
    private boolean beingPromoted(MappingTable table, int m) {
        return promotions.any() && promotions.pinned(table.key(m));
    }

    /** What a sweep of one shard took out of use: pages and objects. */
    private record Swept(long pages, long evictions) {
    }

    /**
     * A watermark pass's sweep of one shard: evicts, in the order of the shard's records, every unpinned object used no
     * later than {@code threshold} and not being promoted, until {@code pagesToFree} pages or {@code maxEvictions}
     * objects are out of use, taking the shard's lock for at most {@value #SWEEP_EVICTIONS_PER_HOLD} evictions at a time
     * so that its lookups wait little.
     */
    private Swept sweep(KeyTable.Shard shard, long threshold, long pagesToFree, long maxEvictions) {
        long pages = 0;
        long evictions = 0;
        int m = 0;
        while (m >= 0 && pages < pagesToFree && evictions < maxEvictions && !shard.mappings.isEmptyHint()) {
            shard.lock.lock();
            try {
                MappingTable table = shard.mappings;
                for (int held = 0; m < table.size() && held < SWEEP_EVICTIONS_PER_HOLD && pages < pagesToFree && evictions < maxEvictions; ) {
                    if (table.pinned(m) || table.lastUsedNanos(m) - threshold > 0 || beingPromoted(table, m)) {
                        m++;
                        continue;
                    }
                    pages += evictLocked(table, m, Change.RemoveReason.EVICTED_WATERMARK);
                    evictions++;
                    held++; // the shard's last mapping now has number m: it is looked at next
                }
                if (m >= table.size()) {
                    m = -1;
                }
            } finally {
                shard.lock.unlock();
            }
        }
        return new Swept(pages, evictions);
    }

    /** Evicts mapping {@code m} of {@code table}, whose shard's lock the caller holds; the pages it took out of use. */
    private long evictLocked(MappingTable table, int m, Change.RemoveReason reason) {
        String victimKey = table.key(m);
        Placement victim = table.placement(m);
        String tenant = KeyRules.tenantOf(victimKey);
        context.logAndApply(new Change.Removed(tenant, KeyRules.keyOf(victimKey), victim, context.releaseMillis(table, m, state.now()), reason,
                table.blockHashes(m)), victimKey);
        evictedCount(reason).increment();
        evictedBytes(reason).add(victim.size());
        return layout().pagesFor(victim.size());
    }

    /**
     * The time of last use up to which a watermark pass evicts everything unpinned, so that what it evicts adds up to
     * about {@code pagesToFree} of the {@code pagesInUse}, or to {@code maxEvictions} objects when those are fewer: from
     * a sample of {@value #PASS_THRESHOLD_SAMPLES} committed unpinned mappings, the time at which the oldest of them hold
     * that share of the sample's pages, as the {@link VictimOrder} estimates it.
     * {@link #NO_THRESHOLD} when too few mappings were found to estimate it.
     */
    private long passThreshold(long pagesToFree, long pagesInUse, long maxEvictions) {
        long[] used = new long[PASS_THRESHOLD_SAMPLES];
        long[] pages = new long[PASS_THRESHOLD_SAMPLES];
        int[] count = {0};
        sampleMappings(java.util.concurrent.ThreadLocalRandom.current().nextInt(KeyTable.SHARDS), 1, EVICTION_SAMPLES_PER_SHARD,
                PASS_THRESHOLD_SAMPLES, false, (shard, table, k) -> {
                    if (table.pinned(k)) {
                        return false;
                    }
                    used[count[0]] = table.lastUsedNanos(k);
                    pages[count[0]] = layout().pagesFor(table.size(k));
                    count[0]++;
                    return true;
                });
        int sampled = count[0];
        if (sampled < MIN_PASS_THRESHOLD_SAMPLES) {
            return NO_THRESHOLD;
        }
        return order.passThreshold(used, pages, sampled, pagesToFree, pagesInUse, maxEvictions);
    }

    /** Looks at one sampled mapping under its shard's lock; whether it counts toward the sample's size. */
    private interface MappingSampler {
        boolean sample(KeyTable.Shard shard, MappingTable table, int mapping);
    }

    /**
     * Samples the mappings of every {@code stride}-th shard from {@code start} on, each shard under its own lock, one at
     * a time: all of a shard's mappings when it holds at most {@code perShard}, else {@code perShard} drawn at random
     * (with {@code wholeShards}, every mapping from a random point on until {@code perShard} of them counted), until
     * {@code sampler} has counted {@code limit} of them or every such shard was visited.
     */
    private void sampleMappings(int start, int stride, int perShard, int limit, boolean wholeShards, MappingSampler sampler) {
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        int counted = 0;
        for (int i = 0; i < KeyTable.SHARDS && counted < limit; i += stride) {
            KeyTable.Shard shard = keys.shard((start + i) & (KeyTable.SHARDS - 1));
            if (shard.mappings.isEmptyHint()) {
                continue; // a hint read without the lock: an empty shard is passed over cheaply
            }
            shard.lock.lock();
            try {
                MappingTable table = shard.mappings;
                int n = table.size();
                int tries = wholeShards ? n : Math.min(n, perShard);
                int from = wholeShards && n > 0 ? random.nextInt(n) : 0;
                int countedHere = 0;
                for (int j = 0; j < tries && countedHere < perShard && counted < limit; j++) {
                    int k = wholeShards ? (from + j) % n : n <= perShard ? j : random.nextInt(n);
                    if (sampler.sample(shard, table, k)) {
                        countedHere++;
                        counted++;
                    }
                }
            } finally {
                shard.lock.unlock();
            }
        }
    }

    private LongAdder evictedCount(Change.RemoveReason reason) {
        return switch (reason) {
            case EVICTED_WATERMARK -> evictedWatermark;
            case EVICTED_ALLOCATION -> evictedAllocation;
            case EVICTED_QUOTA -> evictedQuota;
            case REMOVED -> throw new IllegalArgumentException("a remove is not an eviction");
        };
    }

    private LongAdder evictedBytes(Change.RemoveReason reason) {
        return switch (reason) {
            case EVICTED_WATERMARK -> evictedWatermarkBytes;
            case EVICTED_ALLOCATION -> evictedAllocationBytes;
            case EVICTED_QUOTA -> evictedQuotaBytes;
            case REMOVED -> throw new IllegalArgumentException("a remove is not an eviction");
        };
    }

    /** Objects evicted since start, for every reason. */
    long evictedTotal() {
        return evictedWatermark.sum() + evictedAllocation.sum() + evictedQuota.sum();
    }

    long evictedBytesTotal() {
        return evictedWatermarkBytes.sum() + evictedAllocationBytes.sum() + evictedQuotaBytes.sum();
    }

    long evictedTotal(Change.RemoveReason reason) {
        return evictedCount(reason).sum();
    }

    long evictedBytesTotal(Change.RemoveReason reason) {
        return evictedBytes(reason).sum();
    }

    /**
     * Windows an allocation evicted objects for and then let go, since another call used, replaced or removed one of
     * their objects meanwhile (or changed the allocation's key): the one way an allocation evicts and is not placed there.
     */
    long roomsLostTotal() {
        return roomsLost.sum();
    }

    long evictionRunsTotal() {
        return evictionRuns.sum();
    }

    double evictionSeconds() {
        return evictionNanos.sum() / 1e9;
    }

    /**
     * Milliseconds since the least recently used committed mapping was used, estimated from a fixed sample (every
     * shard, a few mappings of each): GetStats and every scrape ask for it. 0 when there is none.
     */
    long oldestUseAgeMillis() {
        long now = state.now();
        long[] oldestUse = {Long.MAX_VALUE};
        sampleMappings(0, 1, AGE_SAMPLES_PER_SHARD, Integer.MAX_VALUE, false, (shard, table, k) -> {
            oldestUse[0] = Math.min(oldestUse[0], table.lastUsedNanos(k));
            return true;
        });
        long oldest = oldestUse[0];
        return oldest == Long.MAX_VALUE ? 0 : Math.max(0, (now - oldest) / 1_000_000);
    }
}
