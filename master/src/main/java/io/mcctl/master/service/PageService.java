package io.mcctl.master.service;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.PendingDropped;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.Released;
import io.mcctl.master.proto.v1.Removed;
import io.mcctl.master.proto.v1.Renewed;
import io.mcctl.master.proto.v1.WalRecord;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.alloc.PageAllocator;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * The master's page bookkeeping: one allocator per bucket, the mapping table, in-flight allocations with
 * deadlines, and freed ranges in quarantine behind read leases. No network and no file IO.
 *
 * <p>Every allocated page is, at any moment, in exactly one of: a committed mapping; an in-flight
 * allocation with a deadline; a quarantined range with a release time. Pages return to the allocator only
 * from an in-flight allocation its writer freed, or from quarantine once its release time has passed: the last
 * read lease of a removed or replaced mapping, or the deadline plus the allocation grace of an allocation that
 * expired or was dropped (its writer may still be writing). So no reader ever sees a page reused under it, and
 * a writer stalled past its deadline for less than the grace cannot land its bytes on a newer object.
 *
 * <p>Locks, and what they guard:
 * <ul>
 *   <li>{@link Shard#lock} (one of {@value #SHARDS}, chosen by the scoped key's hash): that shard's map and
 *       every {@link ObjectEntry} in it.</li>
 *   <li>each bucket's allocator monitor: that bucket's bitmap.</li>
 *   <li>{@link #quarantineLock}: {@link #quarantine}.</li>
 * </ul>
 * Order: shard lock, then the quarantine lock, then a bucket monitor. Only {@link #checkPages} may hold more than
 * one shard lock (to confirm an overlap), and it takes them in index order, so it cannot deadlock with a caller
 * holding one.
 */
public final class PageService {

    static final int SHARD_BITS = 11;
    static final int SHARDS = 1 << SHARD_BITS;
    static final int STAMP_REGION_PAGES = 512;
    public static final int MAX_LIST_PAGE = 10_000;

    /**
     * One key's state, kept small because there is one per live mapping: the committed placement inline
     * ({@code bucket < 0} when there is none) and the in-flight allocation, if any, as a separate object.
     * Guarded by its shard's lock.
     */
    static final class ObjectEntry {
        int bucket = -1;
        long offset;
        long size;
        int crc32c;
        long leaseUntilNanos;
        Pending pending;

        boolean hasCommitted() {
            return bucket >= 0;
        }

        Placement committed() {
            return bucket < 0 ? null : new Placement(bucket, offset, size, crc32c);
        }

        void commit(Placement placement) {
            bucket = placement.bucket();
            offset = placement.offset();
            size = placement.size();
            crc32c = placement.crc32c();
        }

        void clearCommitted() {
            bucket = -1;
            leaseUntilNanos = 0;
        }
    }

    /**
     * An allocation waiting for its notify. Linked into its shard's list in deadline order (deadlines are
     * taken under the shard lock from a monotonic clock plus a constant, so appending keeps the order), and
     * unlinked the moment it is committed or freed: nothing lingers until its deadline.
     */
    static final class Pending {
        final String scopedKey;
        final ObjectEntry owner;
        final Placement placement;
        /** Moved later only by {@link #renew}, which also moves this allocation to its shard's tail. */
        long deadlineNanos;
        final boolean overwrite;
        Pending prev;
        Pending next;

        Pending(String scopedKey, ObjectEntry owner, Placement placement, long deadlineNanos, boolean overwrite) {
            this.scopedKey = scopedKey;
            this.owner = owner;
            this.placement = placement;
            this.deadlineNanos = deadlineNanos;
            this.overwrite = overwrite;
        }
    }

    static final class Shard {
        final ReentrantLock lock = new ReentrantLock();
        /** Replaced only by {@link Restorer#putAll}, before serving. */
        HashMap<String, ObjectEntry> entries = new HashMap<>();
        /** Oldest in-flight allocation first. */
        Pending head;
        Pending tail;

        void append(Pending pending) {
            pending.prev = tail;
            if (tail == null) {
                head = pending;
            } else {
                tail.next = pending;
            }
            tail = pending;
        }

        void unlink(Pending pending) {
            if (pending.prev == null) {
                head = pending.next;
            } else {
                pending.prev.next = pending.next;
            }
            if (pending.next == null) {
                tail = pending.prev;
            } else {
                pending.next.prev = pending.prev;
            }
            pending.prev = null;
            pending.next = null;
        }
    }

    private record Quarantined(long releaseNanos, int bucket, long firstPage, long pages) {
    }

    private final BucketLayout layout;
    private final String[] bucketPaths;
    private final Map<String, Integer> bucketByPath = new HashMap<>();
    private final BitmapPageAllocator[] allocators;
    private final Shard[] shards = new Shard[SHARDS];
    private final long allocationDeadlineNanos;
    /**
     * How long past its deadline an expired or dropped allocation's pages stay out of the allocator: its writer may
     * still be in a pwrite it began before the deadline, and no new object may get those pages under it.
     */
    private final long allocationGraceNanos;
    private final long readLeaseNanos;
    private final LongSupplier nanoClock;

    private final ReentrantLock quarantineLock = new ReentrantLock();
    /**
     * Per bucket, per region of {@value #STAMP_REGION_PAGES} pages: the second on this service's clock (rounded up,
     * plus one so that 0 means never) of the latest allocation there, so a check can tell a leak from pages allocated
     * moments ago. Written under the allocating key's shard lock (two shards may race on one slot, both with
     * "about now"), read by {@link #checkPages} after it has taken every shard lock once, which orders it after every
     * write made before the check began.
     */
    private final int[] allocationStamps;
    private final int stampRegionsPerBucket;
    private final PriorityQueue<Quarantined> quarantine = new PriorityQueue<>((a, b) -> Long.compare(a.releaseNanos, b.releaseNanos));

    private final long wallOriginMillis;
    /** Set once, before serving; read on every change. */
    private volatile ChangeLog changeLog = ChangeLog.NONE;

    private final AtomicLong mappings = new AtomicLong();
    private final AtomicLong inFlight = new AtomicLong();
    private final AtomicLong quarantinedPages = new AtomicLong();
    private final LongAdder pageAllocations = new LongAdder();
    private final LongAdder pageFrees = new LongAdder();
    private final LongAdder allocationFailures = new LongAdder();
    private final LongAdder spills = new LongAdder();
    private final LongAdder expiredAllocations = new LongAdder();

    /** The allocation grace when none is given (the default of the master's {@code allocation_grace}). */
    public static final Duration DEFAULT_ALLOCATION_GRACE = Duration.ofSeconds(10);

    public PageService(BucketLayout layout, Duration allocationDeadline, Duration readLease, LongSupplier nanoClock) {
        this(layout, allocationDeadline, readLease, DEFAULT_ALLOCATION_GRACE, nanoClock);
    }

    public PageService(BucketLayout layout, Duration allocationDeadline, Duration readLease, Duration allocationGrace, LongSupplier nanoClock) {
        if (allocationGrace.isNegative() || allocationGrace.isZero()) {
            throw new IllegalArgumentException("allocation grace must be positive, not " + allocationGrace);
        }
        this.layout = layout;
        this.allocationDeadlineNanos = allocationDeadline.toNanos();
        this.allocationGraceNanos = allocationGrace.toNanos();
        this.readLeaseNanos = readLease.toNanos();
        // Times are kept relative to construction so they never go below zero and 0 can mean "no read lease";
        // System.nanoTime() itself may be negative, and then a lease-free mapping would wait in quarantine until
        // the clock passed 0 while a lease granted below 0 would never be recorded.
        long origin = nanoClock.getAsLong();
        this.nanoClock = () -> nanoClock.getAsLong() - origin;
        this.wallOriginMillis = System.currentTimeMillis();
        this.bucketPaths = new String[layout.bucketCount()];
        this.allocators = new BitmapPageAllocator[layout.bucketCount()];
        for (int b = 0; b < layout.bucketCount(); b++) {
            bucketPaths[b] = layout.bucketPath(b).toString();
            bucketByPath.put(bucketPaths[b], b);
            allocators[b] = new BitmapPageAllocator(layout.pagesPerBucket());
        }
        for (int s = 0; s < SHARDS; s++) {
            shards[s] = new Shard();
        }
        this.stampRegionsPerBucket = (int) ((layout.pagesPerBucket() + STAMP_REGION_PAGES - 1) / STAMP_REGION_PAGES);
        this.allocationStamps = new int[layout.bucketCount() * stampRegionsPerBucket];
    }

    public PageService(BucketLayout layout, Duration allocationDeadline, Duration readLease) {
        this(layout, allocationDeadline, readLease, System::nanoTime);
    }

    public PageService(BucketLayout layout, Duration allocationDeadline, Duration readLease, Duration allocationGrace) {
        this(layout, allocationDeadline, readLease, allocationGrace, System::nanoTime);
    }

    public BucketLayout layout() {
        return layout;
    }

    /** Sends every later state change to {@code log}. */
    public void setChangeLog(ChangeLog log) {
        this.changeLog = log;
    }

    /** Wall-clock milliseconds of a time on this service's clock. */
    long wallMillis(long nanos) {
        return wallOriginMillis + Math.floorDiv(nanos, 1_000_000L);
    }

    /** This service's clock reading for wall-clock milliseconds. */
    long clockOf(long wallMillis) {
        return (wallMillis - wallOriginMillis) * 1_000_000L;
    }

    /** Absolute path of a bucket's file, as descriptors carry it. */
    public String bucketPath(int bucket) {
        return bucketPaths[bucket];
    }

    /** The bucket a descriptor's file path names, or -1. */
    public int bucketOfPath(String filePath) {
        Integer bucket = bucketByPath.get(filePath);
        if (bucket != null) {
            return bucket;
        }
        try {
            return layout.bucketOf(Path.of(filePath)).orElse(-1); // the same file spelled another way
        } catch (java.nio.file.InvalidPathException e) {
            return -1;
        }
    }

    public long allocationDeadlineMillis() {
        return allocationDeadlineNanos / 1_000_000;
    }

    public long readLeaseMillis() {
        return readLeaseNanos / 1_000_000;
    }

    public long allocationGraceMillis() {
        return allocationGraceNanos / 1_000_000;
    }

    // ---- the page RPCs ----

    /**
     * Allocates pages for {@code size} bytes under (tenant, key), in the key's home bucket or, when no run
     * fits there, in the next bucket (home+1, home+2, ... wrapping) that has one.
     */
    public Result<Placement> allocate(String tenant, String key, long size, boolean overwrite) {
        String invalid = firstProblem(KeyRules.checkTenant(tenant), KeyRules.checkKey(key), KeyRules.checkSize(size, layout.bucketSize()));
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        String scoped = KeyRules.scopedKey(tenant, key);
        Shard shard = shardOf(scoped);
        int home = layout.homeBucket(key);
        long pages = layout.pagesFor(size);
        shard.lock.lock();
        try {
            long now = nanoClock.getAsLong();
            ObjectEntry entry = shard.entries.get(scoped);
            if (entry != null && entry.pending != null) {
                if (entry.pending.deadlineNanos - now > 0) {
                    return Result.error(ErrorCode.REPLICA_IS_NOT_READY, "key '" + key + "' has an allocation in flight; notify or free it first");
                }
                dropPending(shard, entry.pending, PendingDropped.Reason.EXPIRED);
            }
            if (entry != null && entry.hasCommitted() && !overwrite) {
                return Result.error(ErrorCode.OBJECT_ALREADY_EXISTS, "key '" + key + "' already exists in tenant '" + tenant
                        + "'; remove it or allocate with overwrite");
            }
            for (int i = 0; i < allocators.length; i++) {
                int bucket = (home + i) % allocators.length;
                long first = allocators[bucket].allocate(pages);
                if (first != PageAllocator.NO_RUN_FITS) {
                    if (i > 0) {
                        spills.increment();
                    }
                    pageAllocations.add(pages);
                    stampAllocation(bucket, first, pages, now);
                    if (entry == null) {
                        entry = new ObjectEntry();
                        shard.entries.put(scoped, entry);
                    }
                    Placement placement = new Placement(bucket, first * layout.pageSize(), size, 0);
                    entry.pending = new Pending(scoped, entry, placement, now + allocationDeadlineNanos, overwrite);
                    shard.append(entry.pending);
                    changeLog.allocated(tenant, key, placement, wallMillis(entry.pending.deadlineNanos), overwrite);
                    inFlight.incrementAndGet();
                    return Result.ok(placement);
                }
            }
            allocationFailures.increment();
            if (entry != null) {
                removeIfEmpty(shard, scoped, entry);
            }
            return Result.error(ErrorCode.NO_AVAILABLE_HANDLE, "no bucket has " + pages + " free consecutive pages for " + size + " bytes");
        } finally {
            shard.lock.unlock();
        }
    }

    /** Gives up the in-flight allocation of (tenant, key); when {@code expected} is given it must be that allocation. */
    public Result<Void> free(String tenant, String key, Placement expected) {
        String invalid = firstProblem(KeyRules.checkTenant(tenant), KeyRules.checkKey(key));
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        String scoped = KeyRules.scopedKey(tenant, key);
        Shard shard = shardOf(scoped);
        shard.lock.lock();
        try {
            ObjectEntry entry = shard.entries.get(scoped);
            if (entry == null || entry.pending == null) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key '" + key + "' has no allocation in flight (freed, expired, or committed)");
            }
            if (expected != null && !entry.pending.placement.sameRange(expected)) {
                return Result.error(ErrorCode.INVALID_PARAMS, "descriptor " + describe(expected) + " does not match the allocation of key '"
                        + key + "' at " + describe(entry.pending.placement));
            }
            dropPending(shard, entry.pending, PendingDropped.Reason.FREED);
            removeIfEmpty(shard, scoped, entry);
            return Result.ok();
        } finally {
            shard.lock.unlock();
        }
    }

    /**
     * Extends the in-flight allocation of (tenant, key), which must be {@code expected} and not yet past its deadline,
     * to a full allocation deadline from now, so a long write renews instead of racing its deadline. An allocation
     * already past its deadline is refused and left as it is (the reaper ends it).
     *
     * @return the milliseconds the writer now has
     */
    public Result<Long> renew(String tenant, String key, Placement expected) {
        String invalid = firstProblem(KeyRules.checkTenant(tenant), KeyRules.checkKey(key),
                expected == null ? "no descriptor for key '" + key + "'" : null);
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        String scoped = KeyRules.scopedKey(tenant, key);
        Shard shard = shardOf(scoped);
        shard.lock.lock();
        try {
            long now = nanoClock.getAsLong();
            ObjectEntry entry = shard.entries.get(scoped);
            Result<Void> notHeld = notHeld(entry, key, expected, "to renew (expired, freed, or committed)");
            if (notHeld != null) {
                return notHeld.cast();
            }
            Pending pending = entry.pending;
            if (pending.deadlineNanos - now <= 0) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "the allocation of key '" + key + "' expired before the renew; its writer must stop");
            }
            // now + deadline is the latest deadline in the shard (taken under its lock from a monotonic clock), so
            // moving the allocation to the tail keeps the list in deadline order.
            pending.deadlineNanos = now + allocationDeadlineNanos;
            shard.unlink(pending);
            shard.append(pending);
            changeLog.record(WalRecord.newBuilder().setRenewed(Renewed.newBuilder().setTenantId(tenant).setKey(key)
                    .setPlacement(record(pending.placement)).setDeadlineMs(wallMillis(pending.deadlineNanos))));
            return Result.ok(allocationDeadlineNanos / 1_000_000);
        } finally {
            shard.lock.unlock();
        }
    }

    /** Why {@code entry} holds no in-flight allocation matching {@code expected}, or null when it does. Caller holds the shard lock. */
    private Result<Void> notHeld(ObjectEntry entry, String key, Placement expected, String missing) {
        if (entry == null || entry.pending == null) {
            return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key '" + key + "' has no allocation in flight " + missing);
        }
        if (!entry.pending.placement.sameRange(expected)) {
            return Result.error(ErrorCode.INVALID_PARAMS, "descriptor " + describe(expected) + " does not match the allocation of key '"
                    + key + "' at " + describe(entry.pending.placement));
        }
        return null;
    }

    /** What {@link #dropInFlight} did: the allocation it ended, and until when (wall clock) its pages are quarantined, or 0. */
    public record InFlightDrop(Placement placement, long quarantinedUntilMs) {
    }

    /**
     * An operator's drop of the in-flight allocation of (tenant, key): the key may be allocated again at once, while its
     * pages stay quarantined until the allocation's deadline plus the grace, since its writer may still be writing.
     */
    public Result<InFlightDrop> dropInFlight(String tenant, String key) {
        String invalid = firstProblem(KeyRules.checkTenant(tenant), KeyRules.checkKey(key));
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        String scoped = KeyRules.scopedKey(tenant, key);
        Shard shard = shardOf(scoped);
        shard.lock.lock();
        try {
            ObjectEntry entry = shard.entries.get(scoped);
            if (entry == null || entry.pending == null) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key '" + key + "' has no allocation in flight in tenant '" + tenant + "'");
            }
            Placement placement = entry.pending.placement;
            long until = dropPending(shard, entry.pending, PendingDropped.Reason.DROPPED);
            removeIfEmpty(shard, scoped, entry);
            return Result.ok(new InFlightDrop(placement, until));
        } finally {
            shard.lock.unlock();
        }
    }

    /** Commits the in-flight allocation of (tenant, key) as its mapping; a committed mapping it overwrites goes to quarantine. */
    public Result<Void> notifySuccess(String tenant, String key, Placement written) {
        String invalid = firstProblem(KeyRules.checkTenant(tenant), KeyRules.checkKey(key),
                written == null ? "no descriptor for key '" + key + "'" : null);
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        String scoped = KeyRules.scopedKey(tenant, key);
        Shard shard = shardOf(scoped);
        shard.lock.lock();
        try {
            long now = nanoClock.getAsLong();
            ObjectEntry entry = shard.entries.get(scoped);
            Result<Void> notHeld = notHeld(entry, key, written, "(expired after its deadline, or freed)");
            if (notHeld != null) {
                return notHeld;
            }
            Pending pending = entry.pending;
            if (pending.deadlineNanos - now <= 0) {
                dropPending(shard, pending, PendingDropped.Reason.EXPIRED);
                removeIfEmpty(shard, scoped, entry);
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "the allocation of key '" + key + "' expired before the notify; its pages were reclaimed");
            }
            Placement committed = pending.placement.withCrc(written.crc32c());
            if (entry.hasCommitted()) {
                changeLog.committed(tenant, key, committed, entry.committed(), releaseMillis(entry, now));
                releaseCommitted(entry, now);
            } else {
                changeLog.committed(tenant, key, committed, null, 0);
                mappings.incrementAndGet();
            }
            entry.commit(committed);
            shard.unlink(pending);
            entry.pending = null;
            inFlight.decrementAndGet();
            return Result.ok();
        } finally {
            shard.lock.unlock();
        }
    }

    /** The committed mapping of (tenant, key), granting a read lease on its pages. */
    public Result<Placement> getMapping(String tenant, String key) {
        return lookup(tenant, key, true);
    }

    /** The committed mapping without a lease (for stat and listings). */
    public Result<Placement> peek(String tenant, String key) {
        return lookup(tenant, key, false);
    }

    private Result<Placement> lookup(String tenant, String key, boolean lease) {
        String invalid = firstProblem(KeyRules.checkTenant(tenant), KeyRules.checkKey(key));
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        String scoped = KeyRules.scopedKey(tenant, key);
        Shard shard = shardOf(scoped);
        shard.lock.lock();
        try {
            ObjectEntry entry = shard.entries.get(scoped);
            if (entry == null || !entry.hasCommitted()) {
                if (entry != null && entry.pending != null) {
                    return Result.error(ErrorCode.REPLICA_IS_NOT_READY, "key '" + key + "' is still being written");
                }
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key '" + key + "' not found in tenant '" + tenant + "'");
            }
            if (lease) {
                long until = nanoClock.getAsLong() + readLeaseNanos;
                if (until - entry.leaseUntilNanos > 0) {
                    entry.leaseUntilNanos = until;
                }
            }
            return Result.ok(entry.committed());
        } finally {
            shard.lock.unlock();
        }
    }

    /** Removes the committed mapping of (tenant, key); its pages wait in quarantine until its read leases run out. */
    public Result<Void> remove(String tenant, String key) {
        String invalid = firstProblem(KeyRules.checkTenant(tenant), KeyRules.checkKey(key));
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        String scoped = KeyRules.scopedKey(tenant, key);
        Shard shard = shardOf(scoped);
        shard.lock.lock();
        try {
            ObjectEntry entry = shard.entries.get(scoped);
            if (entry == null || !entry.hasCommitted()) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key '" + key + "' not found in tenant '" + tenant + "'");
            }
            long now = nanoClock.getAsLong();
            changeLog.record(WalRecord.newBuilder().setRemoved(Removed.newBuilder().setTenantId(tenant).setKey(key)
                    .setPlacement(record(entry.committed())).setReleaseMs(releaseMillis(entry, now))));
            releaseCommitted(entry, now);
            entry.clearCommitted();
            mappings.decrementAndGet();
            removeIfEmpty(shard, scoped, entry);
            return Result.ok();
        } finally {
            shard.lock.unlock();
        }
    }

    public Result<Boolean> exists(String tenant, String key) {
        Result<Placement> found = peek(tenant, key);
        if (found.isOk()) {
            return Result.ok(true);
        }
        return found.error() == ErrorCode.INVALID_PARAMS ? found.cast() : Result.ok(false);
    }

    /** One page of a tenant's committed keys with a prefix, in key order, after {@code afterKey} (exclusive; "" = start). */
    public record KeyPage(List<Map.Entry<String, Placement>> keys, String nextAfterKey) {
    }

    public Result<KeyPage> listKeys(String tenant, String prefix, int pageSize, String afterKey) {
        String invalid = KeyRules.checkTenant(tenant);
        if (invalid == null && (pageSize < 1 || pageSize > MAX_LIST_PAGE)) {
            invalid = "page size " + pageSize + " is outside 1.." + MAX_LIST_PAGE;
        }
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        String scopedPrefix = KeyRules.scopedKey(tenant, prefix == null ? "" : prefix);
        int tenantLength = tenant.length() + 1;
        TreeMap<String, Placement> best = new TreeMap<>();
        for (Shard shard : shards) {
            shard.lock.lock();
            try {
                for (Map.Entry<String, ObjectEntry> e : shard.entries.entrySet()) {
                    if (!e.getValue().hasCommitted() || !e.getKey().startsWith(scopedPrefix)) {
                        continue;
                    }
                    String key = e.getKey().substring(tenantLength);
                    if (afterKey != null && !afterKey.isEmpty() && key.compareTo(afterKey) <= 0) {
                        continue;
                    }
                    if (best.size() > pageSize && key.compareTo(best.lastKey()) >= 0) {
                        continue;
                    }
                    best.put(key, e.getValue().committed());
                    if (best.size() > pageSize + 1) {
                        best.pollLastEntry();
                    }
                }
            } finally {
                shard.lock.unlock();
            }
        }
        List<Map.Entry<String, Placement>> page = new ArrayList<>(Math.min(best.size(), pageSize));
        for (Map.Entry<String, Placement> e : best.entrySet()) {
            if (page.size() == pageSize) {
                break;
            }
            page.add(Map.entry(e.getKey(), e.getValue()));
        }
        String next = best.size() > pageSize ? page.get(page.size() - 1).getKey() : "";
        return Result.ok(new KeyPage(page, next));
    }

    // ---- expiry and quarantine ----

    /**
     * Reclaims in-flight allocations past their deadline and releases quarantined ranges whose leases have
     * run out. The master's reaper calls this a few times a second.
     *
     * @return pages returned to the allocators
     */
    public long reap() {
        long freed = 0;
        for (Shard shard : shards) {
            shard.lock.lock();
            try {
                long now = nanoClock.getAsLong();
                while (shard.head != null && shard.head.deadlineNanos - now <= 0) {
                    Pending due = shard.head;
                    if (dropPending(shard, due, PendingDropped.Reason.EXPIRED) == 0) {
                        freed += layout.pagesFor(due.placement.size());
                    }
                    expiredAllocations.increment();
                    removeIfEmpty(shard, due.scopedKey, due.owner);
                }
            } finally {
                shard.lock.unlock();
            }
        }
        long now = nanoClock.getAsLong();
        while (true) {
            quarantineLock.lock();
            try {
                Quarantined due = quarantine.peek();
                if (due == null || due.releaseNanos - now > 0) {
                    break;
                }
                quarantine.poll();
                // Freed before the lock is let go, so that a range is never out of quarantine yet still allocated
                // where a check holding this lock would see it as leaked.
                changeLog.record(WalRecord.newBuilder().setReleased(Released.newBuilder().setBucket(due.bucket)
                        .setFirstPage(due.firstPage).setPages(due.pages)));
                allocators[due.bucket].free(due.firstPage, due.pages);
                pageFrees.add(due.pages);
                quarantinedPages.addAndGet(-due.pages);
                freed += due.pages;
            } finally {
                quarantineLock.unlock();
            }
        }
        return freed;
    }

    /**
     * Ends an in-flight allocation. No reader was ever given its pages, but its writer may still be writing: unless the
     * writer gave them up itself ({@link PendingDropped.Reason#FREED}), they wait in quarantine until the allocation's
     * deadline plus the grace, so a writer stalled past its deadline cannot land its bytes on a newer object. Caller
     * holds the shard lock.
     *
     * @return the wall-clock milliseconds the pages are quarantined until, or 0 when they were freed at once
     */
    private long dropPending(Shard shard, Pending pending, PendingDropped.Reason reason) {
        long now = nanoClock.getAsLong();
        long releaseNanos = pending.deadlineNanos + allocationGraceNanos;
        boolean quarantined = reason != PendingDropped.Reason.FREED && releaseNanos - now > 0;
        long releaseMs = quarantined ? wallMillis(releaseNanos) : 0;
        changeLog.record(WalRecord.newBuilder().setPendingDropped(PendingDropped.newBuilder()
                .setTenantId(KeyRules.tenantOf(pending.scopedKey)).setKey(KeyRules.keyOf(pending.scopedKey))
                .setPlacement(record(pending.placement)).setReason(reason).setReleaseMs(releaseMs)));
        long pages = layout.pagesFor(pending.placement.size());
        long firstPage = pending.placement.offset() / layout.pageSize();
        if (quarantined) {
            quarantine(pending.placement.bucket(), firstPage, pages, releaseNanos);
        } else {
            allocators[pending.placement.bucket()].free(firstPage, pages);
            pageFrees.add(pages);
        }
        shard.unlink(pending);
        pending.owner.pending = null;
        inFlight.decrementAndGet();
        return releaseMs;
    }

    /** Holds a range out of the allocator until {@code releaseNanos}. Caller holds a shard lock (taken before this one). */
    private void quarantine(int bucket, long firstPage, long pages, long releaseNanos) {
        quarantinedPages.addAndGet(pages);
        quarantineLock.lock();
        try {
            quarantine.add(new Quarantined(releaseNanos, bucket, firstPage, pages));
        } finally {
            quarantineLock.unlock();
        }
    }

    /**
     * The release time logged for the committed mapping's pages: when its last read lease runs out, or 0 when
     * they are freed at once. Never "now": replay quarantines when this is after the record's time_ms, which
     * the log takes from the wall clock, and "now" on this service's clock can read a millisecond or more
     * ahead of it; a range freed at once (and maybe reused since) would then come back quarantined.
     */
    private long releaseMillis(ObjectEntry entry, long now) {
        return entry.leaseUntilNanos - now > 0 ? wallMillis(entry.leaseUntilNanos) : 0;
    }

    static PlacementRecord record(Placement p) {
        return PlacementRecord.newBuilder().setBucket(p.bucket()).setOffset(p.offset()).setSize(p.size()).setCrc32C(p.crc32c()).build();
    }

    static Placement placement(PlacementRecord r) {
        return new Placement(r.getBucket(), r.getOffset(), r.getSize(), r.getCrc32C());
    }

    /** Moves the committed mapping's pages out: freed now if no lease is live, else quarantined. Caller holds the shard lock. */
    private void releaseCommitted(ObjectEntry entry, long now) {
        long pages = layout.pagesFor(entry.size);
        long firstPage = entry.offset / layout.pageSize();
        if (entry.leaseUntilNanos - now <= 0) {
            allocators[entry.bucket].free(firstPage, pages);
            pageFrees.add(pages);
        } else {
            quarantine(entry.bucket, firstPage, pages, entry.leaseUntilNanos);
        }
        entry.leaseUntilNanos = 0;
    }

    private static void removeIfEmpty(Shard shard, String scoped, ObjectEntry entry) {
        if (!entry.hasCommitted() && entry.pending == null) {
            shard.entries.remove(scoped);
        }
    }

    // ---- snapshot and restore ----

    /** Receives committed mappings. */
    @FunctionalInterface
    public interface MappingSink {
        /** One committed mapping; {@code scopedKey} is tenant, NUL, key. Primitive arguments: a million calls, no objects. */
        void mapping(String scopedKey, int bucket, long offset, long size, int crc32c) throws IOException;
    }

    /** Receives the state for a snapshot. */
    public interface StateSink extends MappingSink {
        void pending(PendingRecord pending) throws IOException;
    }

    /**
     * One shard's committed mappings and in-flight allocations, copied under its lock into flat arrays (a short hold:
     * no record object per mapping) and immutable after, so it can be handed to another thread.
     */
    public static final class ShardCopy {
        private final String[] keys;
        private final int[] buckets;
        private final long[] offsets;
        private final long[] sizes;
        private final int[] crcs;
        private final List<PendingRecord> pending;

        private ShardCopy(String[] keys, int[] buckets, long[] offsets, long[] sizes, int[] crcs, List<PendingRecord> pending) {
            this.keys = keys;
            this.buckets = buckets;
            this.offsets = offsets;
            this.sizes = sizes;
            this.crcs = crcs;
            this.pending = pending;
        }

        /** Entries copied (a key with only an in-flight allocation counts, but yields no mapping). */
        public int entries() {
            return keys.length;
        }

        /** Hands entries {@code [from, to)} to {@code sink} as mappings. */
        public void emitMappings(int from, int to, MappingSink sink) throws IOException {
            for (int i = from; i < to; i++) {
                if (buckets[i] >= 0) {
                    sink.mapping(keys[i], buckets[i], offsets[i], sizes[i], crcs[i]);
                }
            }
        }

        public List<PendingRecord> pending() {
            return pending;
        }
    }

    /** Shards of the mapping table, for {@link #copyShard}. */
    public int shardCount() {
        return SHARDS;
    }

    /** Copies shard {@code index} under its lock; see {@link ShardCopy}. */
    public ShardCopy copyShard(int index) {
        Shard shard = shards[index];
        List<PendingRecord> pendingCopies = new ArrayList<>();
        shard.lock.lock();
        try {
            int n = shard.entries.size();
            String[] keys = new String[n];
            int[] buckets = new int[n];
            long[] offsets = new long[n];
            long[] sizes = new long[n];
            int[] crcs = new int[n];
            int i = 0;
            for (Map.Entry<String, ObjectEntry> e : shard.entries.entrySet()) {
                ObjectEntry entry = e.getValue();
                keys[i] = e.getKey();
                buckets[i] = entry.bucket;
                offsets[i] = entry.offset;
                sizes[i] = entry.size;
                crcs[i] = entry.crc32c;
                i++;
                Pending pending = entry.pending;
                if (pending != null) {
                    pendingCopies.add(PendingRecord.newBuilder().setTenantId(KeyRules.tenantOf(e.getKey()))
                            .setKey(KeyRules.keyOf(e.getKey())).setPlacement(record(pending.placement))
                            .setDeadlineMs(wallMillis(pending.deadlineNanos)).setOverwrite(pending.overwrite).build());
                }
            }
            return new ShardCopy(keys, buckets, offsets, sizes, crcs, pendingCopies);
        } finally {
            shard.lock.unlock();
        }
    }

    /**
     * Streams every committed mapping and in-flight allocation to {@code sink}, one shard at a time: each shard is
     * copied under its lock, then handed over without it, so serving goes on. The result is fuzzy across shards;
     * replaying the log from a sequence read before the export makes it exact.
     */
    public void exportState(StateSink sink) throws IOException {
        for (int s = 0; s < SHARDS; s++) {
            ShardCopy copy = copyShard(s);
            copy.emitMappings(0, copy.entries(), sink);
            for (PendingRecord pending : copy.pending()) {
                sink.pending(pending);
            }
        }
    }

    /** The quarantined ranges, for a snapshot. */
    public List<QuarantineRecord> exportQuarantine() {
        quarantineLock.lock();
        try {
            List<QuarantineRecord> out = new ArrayList<>(quarantine.size());
            for (Quarantined q : quarantine) {
                out.add(QuarantineRecord.newBuilder().setBucket(q.bucket).setFirstPage(q.firstPage).setPages(q.pages)
                        .setReleaseMs(wallMillis(q.releaseNanos)).build());
            }
            return out;
        } finally {
            quarantineLock.unlock();
        }
    }

    /** Starts loading recovered state into this service, which must be empty and not yet serving. */
    public Restorer restorer() {
        if (mappings.get() != 0 || inFlight.get() != 0 || quarantinedPages.get() != 0) {
            throw new IllegalStateException("restore needs an empty page service");
        }
        return new Restorer();
    }

    /**
     * Fills an empty service before it serves, straight into its tables: committed mappings put, looked up and
     * removed by scoped key (as recovery replays the log), or added in bulk from {@link Batch}es decoded on other
     * threads; then {@link #finish} adds in-flight allocations and quarantine, claims every page and rebuilds the
     * bitmaps. Not thread-safe: one thread calls it, except that separate batches may be filled on separate threads.
     */
    public final class Restorer {

        private Restorer() {
        }

        public void put(String scopedKey, Placement placement) {
            shardOf(scopedKey).entries.computeIfAbsent(scopedKey, k -> new ObjectEntry()).commit(placement);
        }

        /** The committed placement of a scoped key, or null. */
        public Placement get(String scopedKey) {
            ObjectEntry entry = shardOf(scopedKey).entries.get(scopedKey);
            return entry == null ? null : entry.committed();
        }

        public void remove(String scopedKey) {
            shardOf(scopedKey).entries.remove(scopedKey);
        }

        public Batch newBatch() {
            return new Batch();
        }

        /** Adds the batches' mappings (later batches win for a key in several), each shard's table filled by one thread. */
        public void putAll(List<Batch> batches) {
            java.util.stream.IntStream.range(0, SHARDS).parallel().forEach(i -> {
                int adding = 0;
                for (Batch batch : batches) {
                    adding += batch.keys[i] == null ? 0 : batch.keys[i].size();
                }
                if (shards[i].entries.isEmpty()) {
                    shards[i].entries = new HashMap<>((adding + 16) * 4 / 3); // sized once: no rehash while filling
                }
                HashMap<String, ObjectEntry> target = shards[i].entries;
                for (Batch batch : batches) {
                    if (batch.keys[i] != null) {
                        for (int j = 0; j < batch.keys[i].size(); j++) {
                            target.put(batch.keys[i].get(j), batch.entries[i].get(j));
                        }
                    }
                }
            });
        }

        /**
         * Adds the in-flight allocations (which keep their deadlines) and quarantined ranges (their release times), on
         * the wall clock, so a writer still writing after a restart keeps its pages; ones already past are reclaimed by
         * the next {@link #reap}. Then claims every page and rebuilds the bitmaps.
         *
         * @throws IllegalStateException when two pieces of state claim the same page (names both)
         */
        public void finish(Map<String, PendingRecord> pendingByKey, java.util.Collection<QuarantineRecord> quarantineRecords) {
            long restoredLeaseUntil = nanoClock.getAsLong() + readLeaseNanos;
            long[] committed = new long[SHARDS];
            java.util.stream.IntStream.range(0, SHARDS).parallel().forEach(i -> {
                for (Map.Entry<String, ObjectEntry> e : shards[i].entries.entrySet()) {
                    // Leases granted before a restart are not logged: every mapping counts as read just now, so a
                    // reader that looked it up before the crash still has its pages for one lease period.
                    e.getValue().leaseUntilNanos = restoredLeaseUntil;
                    claim(e.getValue(), e.getKey());
                    committed[i]++;
                }
            });
            mappings.addAndGet(java.util.Arrays.stream(committed).sum());
            List<Pending> restored = new ArrayList<>();
            for (Map.Entry<String, PendingRecord> e : pendingByKey.entrySet()) {
                PendingRecord p = e.getValue();
                String scoped = e.getKey();
                Shard shard = shardOf(scoped);
                ObjectEntry entry = shard.entries.computeIfAbsent(scoped, k -> new ObjectEntry());
                Placement placement = placement(p.getPlacement());
                claim(placement, () -> "in-flight allocation of " + describeKey(scoped));
                entry.pending = new Pending(scoped, entry, placement, clockOf(p.getDeadlineMs()), p.getOverwrite());
                restored.add(entry.pending);
                inFlight.incrementAndGet();
            }
            restored.sort((a, b) -> Long.compare(a.deadlineNanos, b.deadlineNanos));
            for (Pending pending : restored) {
                shardOf(pending.scopedKey).append(pending);
            }
            for (QuarantineRecord q : quarantineRecords) {
                Placement range = new Placement(q.getBucket(), q.getFirstPage() * layout.pageSize(), q.getPages() * layout.pageSize(), 0);
                claim(range, () -> "quarantined range");
                quarantine.add(new Quarantined(clockOf(q.getReleaseMs()), q.getBucket(), q.getFirstPage(), q.getPages()));
                quarantinedPages.addAndGet(q.getPages());
            }
            java.util.Arrays.stream(allocators).parallel().forEach(BitmapPageAllocator::rebuildSummaries);
        }
    }

    /**
     * Mappings decoded by one thread for {@link Restorer#putAll}, already sorted by shard so that the shards can be
     * filled in parallel. Not thread-safe: one per decoding thread.
     */
    public final class Batch {
        @SuppressWarnings("unchecked")
        private final ArrayList<String>[] keys = new ArrayList[SHARDS];
        @SuppressWarnings("unchecked")
        private final ArrayList<ObjectEntry>[] entries = new ArrayList[SHARDS];

        private Batch() {
        }

        public void add(String scopedKey, int bucket, long offset, long size, int crc32c) {
            int shard = shardIndex(scopedKey);
            if (keys[shard] == null) {
                keys[shard] = new ArrayList<>();
                entries[shard] = new ArrayList<>();
            }
            ObjectEntry entry = new ObjectEntry();
            entry.bucket = bucket;
            entry.offset = offset;
            entry.size = size;
            entry.crc32c = crc32c;
            keys[shard].add(scopedKey);
            entries[shard].add(entry);
        }
    }

    private void claim(ObjectEntry entry, String scoped) {
        claim(new Placement(entry.bucket, entry.offset, entry.size, entry.crc32c), () -> "mapping of " + describeKey(scoped), scoped);
    }

    /** Marks a restored range allocated; {@code what} names its owner, built only for an error. */
    private void claim(Placement placement, java.util.function.Supplier<String> what) {
        claim(placement, what, null);
    }

    /** @param claimantKey the scoped key whose mapping is being claimed (skipped when naming the other owner), or null */
    private void claim(Placement placement, java.util.function.Supplier<String> what, String claimantKey) {
        if (placement.bucket() < 0 || placement.bucket() >= allocators.length || placement.offset() % layout.pageSize() != 0
                || placement.size() <= 0 || placement.offset() + placement.size() > layout.bucketSize()) {
            throw new IllegalStateException(what.get() + " at " + describe(placement) + " is outside the layout (" + layout.bucketCount()
                    + " buckets of " + layout.bucketSize() + " bytes, pages of " + layout.pageSize() + ")");
        }
        try {
            allocators[placement.bucket()].markAllocatedForRestore(placement.offset() / layout.pageSize(), layout.pagesFor(placement.size()));
        } catch (io.mcctl.storage.alloc.PageRangeException e) {
            throw new IllegalStateException(what.get() + " at " + describe(placement) + " overlaps "
                    + ownerOf(placement.bucket(), e.offendingPage(), claimantKey) + " at page " + e.offendingPage() + " of bucket " + placement.bucket());
        }
    }

    /** Who else holds a page, for an overlap report (a slow scan, only on that path). */
    private String ownerOf(int bucket, long page, String claimantKey) {
        try {
            return findOwner(bucket, page, claimantKey);
        } catch (RuntimeException e) {
            return "another object"; // shards still being restored by the other thread
        }
    }

    private String findOwner(int bucket, long page, String claimantKey) {
        long offset = page * layout.pageSize();
        for (Shard shard : shards) {
            for (Map.Entry<String, ObjectEntry> e : shard.entries.entrySet()) {
                ObjectEntry entry = e.getValue();
                if (entry.hasCommitted() && entry.bucket == bucket && offset >= entry.offset && !e.getKey().equals(claimantKey)
                        && offset < entry.offset + layout.pagesFor(entry.size) * layout.pageSize()) {
                    return "the mapping of " + describeKey(e.getKey());
                }
                Placement p = entry.pending == null ? null : entry.pending.placement;
                if (p != null && p.bucket() == bucket && offset >= p.offset() && offset < p.offset() + layout.pagesFor(p.size()) * layout.pageSize()) {
                    return "the in-flight allocation of " + describeKey(e.getKey());
                }
            }
        }
        return "a quarantined range";
    }

    private static String describeKey(String scoped) {
        return "key '" + KeyRules.keyOf(scoped) + "' of tenant '" + KeyRules.tenantOf(scoped) + "'";
    }

    // ---- checking the pages (fsck) ----

    private void stampAllocation(int bucket, long firstPage, long pages, long nowNanos) {
        int stamp = (int) Math.min(Integer.MAX_VALUE, nowNanos / 1_000_000_000L + 2);
        int base = bucket * stampRegionsPerBucket;
        int last = (int) ((firstPage + pages - 1) / STAMP_REGION_PAGES);
        for (int region = (int) (firstPage / STAMP_REGION_PAGES); region <= last; region++) {
            allocationStamps[base + region] = stamp;
        }
    }

    /** Whether a region saw an allocation less than {@code minAgeNanos} before {@code nowNanos}. See {@link #allocationStamps}. */
    boolean youngRegion(int bucket, int region, long nowNanos, long minAgeNanos) {
        int stamp = allocationStamps[bucket * stampRegionsPerBucket + region];
        // stamp - 1 seconds is at or after the allocation, so the age it gives is never more than the real one.
        return minAgeNanos > 0 && stamp != 0 && nowNanos - (stamp - 1L) * 1_000_000_000L < minAgeNanos;
    }

    /**
     * Compares every bucket's bitmap with the pages that mappings, in-flight allocations and quarantined ranges
     * claim, without stopping service: see {@link PageChecker} for how the answer stays exact while calls go on.
     * With {@code repair}, false-free pages are marked allocated the moment they are confirmed, and leaked ranges at
     * least {@code minAgeNanos} old are freed after that. Repairs are not logged: after a restart the bitmaps are
     * rebuilt from the claims, which gives the same result.
     *
     * @param minAgeNanos      unclaimed pages in a region allocated from less than this ago are reported as young
     * @param maxRangesPerKind at most this many ranges listed per kind
     */
    public PageCheck checkPages(long minAgeNanos, boolean repair, int maxRangesPerKind) {
        if (maxRangesPerKind < 1) {
            throw new IllegalArgumentException("maxRangesPerKind must be at least 1, not " + maxRangesPerKind);
        }
        return new PageChecker(this, Math.max(0, minAgeNanos), repair, maxRangesPerKind).run();
    }

    Shard[] shards() {
        return shards;
    }

    BitmapPageAllocator[] allocators() {
        return allocators;
    }

    ReentrantLock quarantineLock() {
        return quarantineLock;
    }

    /** The quarantined ranges as (bucket, first page, pages). Caller holds the quarantine lock. */
    List<long[]> quarantinedRanges() {
        List<long[]> out = new ArrayList<>(quarantine.size());
        for (Quarantined q : quarantine) {
            out.add(new long[] {q.bucket, q.firstPage, q.pages});
        }
        return out;
    }

    long now() {
        return nanoClock.getAsLong();
    }

    // ---- views ----

    /** Counters for stats and metrics. */
    public record Stats(long mappings, long inFlight, long quarantinedPages, long pagesAllocated, long pagesTotal, long tenants) {
    }

    public Stats stats() {
        long allocated = 0;
        for (BitmapPageAllocator allocator : allocators) {
            allocated += allocator.allocatedCount();
        }
        return new Stats(mappings.get(), inFlight.get(), quarantinedPages.get(), allocated,
                layout.pagesPerBucket() * layout.bucketCount(), countTenants());
    }

    private long countTenants() {
        Set<String> tenants = new HashSet<>();
        for (Shard shard : shards) {
            shard.lock.lock();
            try {
                for (String scoped : shard.entries.keySet()) {
                    tenants.add(KeyRules.tenantOf(scoped));
                }
            } finally {
                shard.lock.unlock();
            }
        }
        return tenants.size();
    }

    /** The allocator of a bucket, for read-only reports (bitmap inspect, fsck). */
    public BitmapPageAllocator allocator(int bucket) {
        return allocators[bucket];
    }

    public long mappingCount() { return mappings.get(); }

    public long inFlightCount() { return inFlight.get(); }

    public long quarantinedPageCount() { return quarantinedPages.get(); }

    public long pageAllocationsTotal() { return pageAllocations.sum(); }

    public long pageFreesTotal() { return pageFrees.sum(); }

    public long allocationFailuresTotal() { return allocationFailures.sum(); }

    public long spillsTotal() { return spills.sum(); }

    public long expiredAllocationsTotal() { return expiredAllocations.sum(); }

    // ---- helpers ----

    private Shard shardOf(String scopedKey) {
        // The top bits of a multiplicative hash: the shard's HashMap indexes by the low bits, so taking
        // those here would crowd every shard's keys into a 64th of its table.
        return shards[shardIndex(scopedKey)];
    }

    private static int shardIndex(String scopedKey) {
        return (scopedKey.hashCode() * 0x9E3779B9) >>> (32 - SHARD_BITS);
    }

    private String describe(Placement p) {
        return p.bucket() >= 0 && p.bucket() < bucketPaths.length
                ? bucketPaths[p.bucket()] + "@" + p.offset() + "+" + p.size()
                : "bucket " + p.bucket() + "@" + p.offset() + "+" + p.size();
    }

    private static String firstProblem(String... problems) {
        for (String problem : problems) {
            if (problem != null) {
                return problem;
            }
        }
        return null;
    }
}
