package io.mcctl.master.service;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The master's page RPCs over its {@link PageState}: each call validates its request under the key's shard lock,
 * logs the change it makes, then applies it through {@link PageState#apply}, the same transition recovery replays.
 * No network and no file IO.
 *
 * <p>Every allocated page is, at any moment, in exactly one of: a committed mapping; an in-flight allocation with a
 * deadline; a quarantined range with a release time. Pages return to the allocators only from a freed in-flight
 * allocation, or from quarantine once the last read lease on them (or an expired allocation's grace period) has
 * run out, so no reader ever sees a page reused under it and no late writer writes over another object.
 *
 * <p>An allocation is answered without waiting for its own record when its pages lie in a durable reservation
 * ({@link Reservations}; recovery holds the free pages of reservations a crash left open, as quarantine, until the
 * writers answered there are done), and waits only for the reservation's record and for any change not yet durable
 * that freed its pages ({@link AnswerBarrier}).
 *
 * <p>The parts: {@link KeyTable} (mappings and in-flight allocations, in shards), {@link Quarantine},
 * {@link Reservations}, {@link BucketSpace} (the allocators), {@link RoomSearch} (where an allocation can make room by
 * eviction). Locks, and how they nest: the layout lock (only a layout grow, a snapshot's start and a page check take
 * it), then a shard lock (one at a time; see {@link KeyTable}), then a bucket's reservations monitor (around an
 * allocation's record; the reaper takes it alone to close reservations) or {@link Quarantine#lock}, then a bucket
 * allocator's monitor (which guards its fences too); the log's lock is innermost. Making room adds no lock: a run is
 * fenced under its allocator's monitor alone, and its objects are evicted one shard lock at a time. A change is logged
 * and applied under the same shard lock, so the log's order is the order changes of one key were applied in.
 *
 * <p>Validate, log, apply: a change the log refuses (it failed) is never applied, and a page run reserved for it
 * is given back under the same lock. Once the log has failed the service takes no more changes at all
 * ({@link #refuseChanges}) and keeps answering lookups.
 *
 * <p>A change is applied as soon as it is appended, before the log's group commit makes it durable, so a lookup may meet
 * a mapping whose commit the log does not hold yet. It never hands one out: each mapping remembers the sequence of the
 * commit that made it until a lookup finds that durable ({@link MappingTable#unconfirmedSequence}). A lookup that can wait
 * notes the sequence in its {@link AnswerBarrier} and answers that key {@link #waitsForLog}: its caller looks it up again
 * once the log holds it (or has failed, when the key is a miss). A lookup that cannot wait answers a miss. So readers see
 * only what the log holds, and a restart after the log failed brings back what they saw.
 */
public final class PageService {

    public static final int MAX_LIST_PAGE = 10_000;
    /** What a listed key costs in an answer besides its key and path: offsets, sizes, field tags. */
    static final int LISTED_KEY_OVERHEAD_BYTES = 48;

    private final PageState state;
    private final KeyTable keys;
    private final Quarantine quarantine;
    private final BucketSpace space;
    private final long allocationDeadlineNanos;
    private final long allocationGraceNanos;
    /** Pages a reservation is cut in: a 64th of a bucket, between 1 and {@value #MAX_RESERVATION_BLOCK_PAGES}. */
    private final long reservationBlockPages;
    /** How long a reservation is open for allocations: {@link #RESERVATION_OPEN}, or the allocation deadline if shorter. */
    private final long reservationOpenNanos;
    private final long readLeaseNanos;
    private final ListingCursors listings = new ListingCursors();

    /** Set once, before serving; read on every change. */
    private volatile ChangeLog changeLog = ChangeLog.NONE;
    /** Why changes are refused (the log failed), or null while they are taken. */
    private volatile String refusal;

    private final LongAdder expiredAllocations = new LongAdder();
    private final LongAdder reservationsOpened = new LongAdder();
    private final LongAdder reservedAllocations = new LongAdder();
    private final Promotions promotions;
    /** Counts reads for promotion; null while promotion is off (no node has a DRAM segment). */
    private volatile PromotionAdmission admission;

    /** How long an expired allocation's pages are held past its deadline unless set otherwise. */
    public static final Duration DEFAULT_ALLOCATION_GRACE = Duration.ofSeconds(10);

    /**
     * @param allocationGrace how long an expired or dropped allocation's pages are held past its deadline before
     *                        reuse, for a writer that is late; positive
     */
    public PageService(BucketLayout layout, Duration allocationDeadline, Duration readLease, Duration allocationGrace, LongSupplier nanoClock) {
        this(layout, allocationDeadline, readLease, allocationGrace, nanoClock, System::currentTimeMillis);
    }

    /** @param wallClock read once, to tie {@code nanoClock} to the wall clock that logged times are in */
    public PageService(BucketLayout layout, Duration allocationDeadline, Duration readLease, Duration allocationGrace, LongSupplier nanoClock,
                       LongSupplier wallClock) {
        if (allocationGrace.isNegative() || allocationGrace.isZero()) {
            throw new IllegalArgumentException("allocation grace " + allocationGrace + " must be positive: a late writer needs it");
        }
        this.state = new PageState(layout, nanoClock, wallClock);
        this.keys = state.keys;
        this.quarantine = state.quarantine;
        this.space = state.space;
        this.allocationDeadlineNanos = allocationDeadline.toNanos();
        this.allocationGraceNanos = allocationGrace.toNanos();
        this.readLeaseNanos = readLease.toNanos();
        this.promotions = new Promotions(this, state, keys);
        this.reservationBlockPages = Math.max(1, Math.min(MAX_RESERVATION_BLOCK_PAGES, layout.pagesPerBucket() / 64));
        this.reservationOpenNanos = Math.min(RESERVATION_OPEN.toNanos(), allocationDeadlineNanos);
    }

    /** The most pages one reservation block spans (64 MiB of 64 KiB pages). */
    static final long MAX_RESERVATION_BLOCK_PAGES = 1024;
    /** How long a reservation takes allocations; a crash holds its free pages for this plus the deadline and grace. */
    static final Duration RESERVATION_OPEN = Duration.ofSeconds(2);
    /**
     * Open reservations a bucket may have at once. Allocations that land all over a bucket (where eviction freed room)
     * would open one each; past this many they are answered once their own records are durable, as without reservations.
     */
    static final int MAX_OPEN_RESERVATIONS = 8;

    /** Promotion tasks into the DRAM tier. */
    public Promotions promotions() {
        return promotions;
    }

    /** Starts counting reads for promotion with {@code admission}, or stops with null. */
    public void setAdmission(PromotionAdmission admission) {
        this.admission = admission;
    }

    /** With the default allocation grace. */
    public PageService(BucketLayout layout, Duration allocationDeadline, Duration readLease, LongSupplier nanoClock) {
        this(layout, allocationDeadline, readLease, DEFAULT_ALLOCATION_GRACE, nanoClock);
    }

    public PageService(BucketLayout layout, Duration allocationDeadline, Duration readLease, Duration allocationGrace) {
        this(layout, allocationDeadline, readLease, allocationGrace, System::nanoTime);
    }

    public PageService(BucketLayout layout, Duration allocationDeadline, Duration readLease) {
        this(layout, allocationDeadline, readLease, DEFAULT_ALLOCATION_GRACE, System::nanoTime);
    }

    /** The layout in force: its bucket size grows with {@link #growLayout}. */
    public BucketLayout layout() {
        return state.layout;
    }

    /**
     * Whether allocations are answered inside reservations, before their own records are durable (the default), or each
     * waits for its own record and no reservation is opened: the log then holds nothing but the page changes themselves,
     * and a crash holds no pages beyond the allocations in flight.
     */
    public void setReservations(boolean on) {
        this.reserving = on;
    }

    private volatile boolean reserving = true;

    /** Sends every later change to {@code log}. */
    public void setChangeLog(ChangeLog log) {
        this.changeLog = log;
    }

    /**
     * From now on every change is refused with {@code reason} (the log failed: a change the log may not hold must
     * not be built upon). Lookups go on. Idempotent; the first reason stays.
     */
    public void refuseChanges(String reason) {
        if (refusal == null) {
            refusal = reason;
        }
    }

    /** Why changes are refused, or null while they are taken. */
    public String refusal() {
        return refusal;
    }

    /** Absolute path of a bucket's file, as descriptors carry it. */
    public String bucketPath(int bucket) {
        return space.path(bucket);
    }

    /** The bucket a descriptor's file path names, or -1. */
    public int bucketOfPath(String filePath) {
        return space.bucketOfPath(filePath);
    }

    /** Wall-clock milliseconds of a time on this service's clock, as its changes log it (rounded up). */
    long wallMillis(long nanos) {
        return state.wallMillis(nanos);
    }

    public long allocationDeadlineMillis() {
        return allocationDeadlineNanos / 1_000_000;
    }

    public long allocationGraceMillis() {
        return allocationGraceNanos / 1_000_000;
    }

    public long readLeaseMillis() {
        return readLeaseNanos / 1_000_000;
    }

    /** Tenant id {@code id}, checked, for one call's keys. */
    public Tenant tenant(String id) {
        return new Tenant(state, id);
    }

    /** For one batch call: resolves each distinct tenant it names once (see {@link Tenant}). */
    public Tenant.Batch batchTenants() {
        return new Tenant.Batch(state);
    }

    // ---- the page RPCs ----
    // Each takes the tenant checked and resolved once per call (a batch passes the same one for all its keys); the
    // overloads taking the id resolve it for the one key.

    /**
     * Allocates pages for {@code size} bytes under (tenant, key), in the key's home bucket or, when no run fits
     * there, in the next bucket (home+1, home+2, ... wrapping) that has one.
     */
    public Result<Placement> allocate(String tenant, String key, long size, boolean overwrite) {
        return allocate(tenant, key, size, overwrite, false);
    }

    /** An allocation whose commit is soft-pinned when {@code pin}: evicted only when nothing unpinned is left. */
    public Result<Placement> allocate(String tenant, String key, long size, boolean overwrite, boolean pin) {
        return allocate(tenant(tenant), key, size, overwrite, pin);
    }

    public Result<Placement> allocate(Tenant tenant, String key, long size, boolean overwrite, boolean pin) {
        return allocate(tenant, key, size, overwrite, pin, new AnswerBarrier());
    }

    /** {@link #allocate}, noting in {@code answer} what the answer must wait for. */
    public Result<Placement> allocate(Tenant tenant, String key, long size, boolean overwrite, boolean pin, AnswerBarrier answer) {
        String invalid = firstProblem(tenant.problem, KeyRules.checkKey(key), KeyRules.checkSize(size, layout().bucketSize()));
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        return allocateScoped(tenant, key, KeyRules.scopedKey(tenant.id, key), size, overwrite, pin, answer);
    }

    /**
     * {@link #allocate} of each key of a batch, {@code tenantIds.get(i)}'s {@code keyList.get(i)} of {@code sizes.get(i)}
     * bytes, in order. The batch's index slots are read ahead first ({@link KeyTable#touch}): a new key's probe of the
     * index is a miss, and the misses of a batch's keys then overlap instead of coming one after another.
     */
    public List<Result<Placement>> allocateAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, List<Long> sizes,
                                               boolean overwrite, boolean pin) {
        return allocateAll(tenants, tenantIds, keyList, sizes, overwrite, pin, new AnswerBarrier());
    }

    /** {@link #allocateAll}, noting in {@code answer} what the batch's answer must wait for. */
    public List<Result<Placement>> allocateAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, List<Long> sizes,
                                               boolean overwrite, boolean pin, AnswerBarrier answer) {
        int n = keyList.size();
        long[] bytes = new long[n];
        for (int i = 0; i < n; i++) {
            bytes[i] = sizes.get(i);
        }
        long bucketSize = layout().bucketSize();
        ReadAhead batch = readAhead(tenants, tenantIds, keyList, i -> KeyRules.checkSize(bytes[i], bucketSize));
        List<Result<Placement>> results = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            results.add(batch.scoped[i] == null ? allocate(batch.owners[i], keyList.get(i), bytes[i], overwrite, pin, answer) // answers what is wrong
                    : allocateScoped(batch.owners[i], keyList.get(i), batch.scoped[i], bytes[i], overwrite, pin, answer));
        }
        return results;
    }

    /** {@link #allocate} of a valid key of a valid tenant and a valid size, {@code scoped} being the two as the table keys them. */
    private Result<Placement> allocateScoped(Tenant tenant, String key, String scoped, long size, boolean overwrite, boolean pin,
                                            AnswerBarrier answer) {
        checkAccepting();
        KeyTable.Shard shard = keys.shardOf(scoped);
        shard.lock.lock();
        try {
            return allocateLocked(tenant, key, scoped, shard, size, overwrite, pin, eviction.enabled(), null, answer);
        } finally {
            shard.lock.unlock();
        }
    }

    /**
     * The allocation itself; caller holds the key's shard lock. {@code mayEvict}: make room by eviction when no run fits.
     * {@code room}: a run fenced for this allocation ({@link #makeRoom}), taken instead of searching.
     */
    private Result<Placement> allocateLocked(Tenant resolvedTenant, String key, String scoped, KeyTable.Shard shard, long size, boolean overwrite,
                                             boolean pin, boolean mayEvict, RoomSearch.Room room, AnswerBarrier answer) {
        String tenant = resolvedTenant.id;
        long now = state.now();
        long pages = layout().pagesFor(size);
        KeyTable.InFlight inFlight = shard.inFlight.get(scoped);
        if (inFlight != null) {
            if (inFlight.deadlineNanos - now > 0) {
                return Result.error(ErrorCode.REPLICA_IS_NOT_READY, "key " + Quoted.of(key) + " has an allocation in flight; notify or free it first");
            }
            expire(inFlight);
        }
        if (!overwrite && shard.mappings.find(scoped) >= 0) {
            return Result.error(ErrorCode.OBJECT_ALREADY_EXISTS, "key " + Quoted.of(key) + " already exists in tenant " + Quoted.of(tenant)
                    + "; remove it or allocate with overwrite (mcctl offload --overwrite)");
        }
        PageState.TenantUsage usage = resolvedTenant.usage();
        long quota = usage.quotaBytes;
        if (quota > 0 && usage.bytes.sum() + usage.inFlightBytes.sum() + size > quota) {
            if (size > quota) {
                return Result.error(ErrorCode.NO_AVAILABLE_HANDLE, "object of " + size + " bytes is larger than tenant " + Quoted.of(tenant)
                        + "'s quota of " + quota + " bytes");
            }
            if (mayEvict) {
                // As for room below: made with this shard lock let go, then the allocation is tried once more.
                shard.lock.unlock();
                try {
                    evictWithinQuota(tenant, usage, size, quota);
                } finally {
                    shard.lock.lock();
                }
                return allocateLocked(resolvedTenant, key, scoped, shard, size, overwrite, pin, false, null, answer);
            }
            return Result.error(ErrorCode.NO_AVAILABLE_HANDLE, "tenant " + Quoted.of(tenant) + " is at its quota: " + (usage.bytes.sum()
                    + usage.inFlightBytes.sum()) + " of " + quota + " bytes used or being written, " + size + " more asked for");
        }
        int home = layout().homeBucket(key);
        Placement placement = room != null ? space.allocateFenced(home, room.bucket(), room.firstPage(), pages, size, now)
                : space.allocate(home, pages, size, now);
        if (placement == null && mayEvict) {
            // Room is made with this key's shard lock let go (eviction takes other shards' locks, one at a time), then the
            // allocation is tried once more, from the start: the key may have changed meanwhile. The room made is fenced
            // for it, and let go if the retry does not take it.
            RoomSearch.Room made;
            shard.lock.unlock();
            try {
                // Room due from quarantine is taken at once rather than at the reaper's next pass: a writer told to come
                // back when its room is released finds it then.
                releaseDueQuarantine();
                made = space.roomFor(pages) ? null : makeRoom(pages);
            } finally {
                shard.lock.lock();
            }
            if (made != null && made.leased()) {
                long inMillis = Math.max(1, (made.freeAtNanos() - state.now() + 999_999) / 1_000_000);
                return Result.error(ErrorCode.NO_AVAILABLE_HANDLE, noRoomMessage(pages, size) + "; objects under read leases were evicted to make "
                        + "room for it, free in " + inMillis + " ms when their leases end", inMillis);
            }
            try {
                return allocateLocked(resolvedTenant, key, scoped, shard, size, overwrite, pin, false, made, answer);
            } finally {
                if (made != null && space.allocators[made.bucket()].unfence(made.firstPage(), pages)) {
                    roomsLost.increment(); // the key changed meanwhile, or the log refused the allocation
                }
            }
        }
        if (placement == null) {
            return Result.error(ErrorCode.NO_AVAILABLE_HANDLE, noRoomMessage(pages, size), quarantineRetryAfterMillis());
        }
        Change.Allocated change = new Change.Allocated(tenant, key, placement, state.wallMillis(now + allocationDeadlineNanos), overwrite, pin);
        try {
            answer.needs(appendAllocation(change, pages, now));
        } catch (ChangeLog.Refused e) {
            space.free(placement); // the run was reserved for this change alone: nothing else can have seen it
            throw e;
        }
        state.apply(change, scoped);
        return Result.ok(placement);
    }

    /**
     * Appends an allocation's record and returns the log sequence its answer must wait for. Inside a reservation that is
     * open (its record appended, and durable by the time the answer goes out) the answer need not wait for the
     * allocation's own record: were it lost in a crash, recovery holds the reservation's unclaimed pages until the
     * allocation's writer is done. So it waits for the reservation's record and for any change not yet durable that
     * freed pages of the bucket (a crash could undo that free, and the pages would then be another object's). A bucket
     * with no open reservation covering the run gets one, unless it has {@value #MAX_OPEN_RESERVATIONS} already: the
     * answer then waits for everything, as without reservations. With nothing logged there is nothing to wait for.
     *
     * <p>The cover is checked and the record appended under the bucket's reservations monitor, which the reservation's
     * close takes too: every allocation answered in a reservation is in the log before the record that closes it.
     */
    private long appendAllocation(Change.Allocated change, long pages, long now) {
        ChangeLog log = changeLog;
        if (log == ChangeLog.NONE) {
            return 0;
        }
        if (!reserving) {
            log.append(change);
            return AnswerBarrier.EVERYTHING;
        }
        int bucket = change.placement().bucket();
        long first = change.placement().offset() / layout().pageSize();
        Reservations.Bucket reserved = state.reservations.bucket(bucket);
        synchronized (reserved) {
            Reservations.Reservation cover = reserved.covering(first, pages, now);
            if (cover == null && reserved.openCount(now) < MAX_OPEN_RESERVATIONS) {
                cover = reserve(bucket, first, first + pages, now);
            }
            log.append(change);
            if (cover == null) {
                return AnswerBarrier.EVERYTHING;
            }
            if (!coversWhatComesNext(cover, first + pages, now)) {
                closePassed(reserved, first);
                reserveAhead(reserved, bucket, first + pages, now);
            }
            reservedAllocations.increment();
            return Math.max(cover.sequence, space.lastFreeSequence(bucket));
        }
    }

    /**
     * Whether {@code cover} takes the bucket's next allocations too, from {@code next} (half a block of them) and for at
     * least half its open time: most allocations of a busy bucket, which then need no look at its other reservations.
     */
    private boolean coversWhatComesNext(Reservations.Reservation cover, long next, long now) {
        return next + Math.max(1, reservationBlockPages / 2) <= cover.endPage() && cover.openUntilNanos - now >= reservationOpenNanos / 2;
    }

    /**
     * Logs and applies a reservation of the blocks that pages [from, to) of {@code bucket} touch, open from now for
     * {@link #reservationOpenNanos}. Caller holds the bucket's reservations monitor.
     */
    private Reservations.Reservation reserve(int bucket, long from, long to, long now) {
        long pagesPerBucket = layout().pagesPerBucket();
        long first = from / reservationBlockPages * reservationBlockPages;
        long end = Math.min(pagesPerBucket, (to + reservationBlockPages - 1) / reservationBlockPages * reservationBlockPages);
        long openUntilMs = state.wallMillis(now + reservationOpenNanos);
        // Held for as long as any allocation answered while it is open can be written: its deadline, then the grace.
        long holdUntilMs = state.wallMillis(state.clockOf(openUntilMs) + allocationDeadlineNanos + allocationGraceNanos);
        Change.Reserved change = new Change.Reserved(bucket, first, end - first, openUntilMs, holdUntilMs);
        long sequence = changeLog.append(change);
        state.apply(change, null, sequence);
        reservationsOpened.increment();
        return state.reservations.bucket(bucket).covering(from, to - from, now);
    }

    /**
     * Closes this master's reservations of the bucket that end at or before {@code first}, where its allocator, which
     * searches onwards from the end of its last run, has moved past them: allocations rarely come back there before their
     * open time ends, and a bucket filling fast would otherwise keep a reservation open per block it filled. Caller holds
     * the monitor; what was answered in them is in the log already.
     */
    private void closePassed(Reservations.Bucket reserved, long first) {
        for (int i = 0; i < reserved.list.size(); ) {
            Reservations.Reservation r = reserved.list.get(i);
            if (r.recovered() || r.endPage() > first) {
                i++;
                continue;
            }
            close(r);
        }
    }

    /** Logs and applies the close of reservation {@code r}, which takes it off its bucket's list. Caller holds that monitor. */
    private void close(Reservations.Reservation r) {
        Change.Reserved open = r.change;
        logAndApply(new Change.ReservationClosed(open.bucket(), open.firstPage(), open.pages(), open.openUntilMs()));
    }

    /**
     * Opens the next reservation before the allocations reach it, so that they need not wait for its record: when no
     * open reservation covers the half block from {@code next} (where the bucket's next allocation starts, its allocator
     * searching onwards from the end of the last) for at least half its open time. Caller holds the monitor.
     */
    private void reserveAhead(Reservations.Bucket reserved, int bucket, long next, long now) {
        long pagesPerBucket = layout().pagesPerBucket();
        long from = next >= pagesPerBucket ? 0 : next;
        long span = Math.min(Math.max(1, reservationBlockPages / 2), pagesPerBucket - from);
        Reservations.Reservation ahead = reserved.covering(from, span, now + reservationOpenNanos / 2);
        if (ahead == null && reserved.openCount(now) < MAX_OPEN_RESERVATIONS) {
            reserve(bucket, from, Math.min(pagesPerBucket, from + 2 * reservationBlockPages), now);
        }
    }

    /**
     * When quarantined pages wait behind read leases or late writers: the milliseconds until the first of them is
     * released (at least 1), the moment a refused allocation is worth trying again. 0 when nothing waits.
     */
    private long quarantineRetryAfterMillis() {
        Long first = quarantine.firstRelease();
        if (quarantine.pages() == 0 || first == null) {
            return 0;
        }
        return Math.max(1, (first - state.now() + 999_999) / 1_000_000);
    }

    private String noRoomMessage(long pages, long size) {
        String message = "no bucket has " + pages + " free consecutive pages for " + size + " bytes";
        long waiting = quarantine.pages();
        Long first = quarantine.firstRelease();
        if (waiting > 0 && first != null) {
            long inMillis = Math.max(0, (first - state.now()) / 1_000_000);
            message += "; " + waiting + " pages wait in quarantine behind read leases or late writers, the first released in " + inMillis + " ms";
        }
        int unusable = space.unusableCount();
        if (unusable > 0) {
            message += "; " + unusable + " of " + space.allocators.length + " buckets take no allocations because their files are missing "
                    + "or replaced (mcctl stats)";
        }
        return message;
    }

    /** Gives up the in-flight allocation of (tenant, key); when {@code expected} is given it must be that allocation. */
    public Result<Void> free(String tenant, String key, Placement expected) {
        return free(tenant(tenant), key, expected);
    }

    /**
     * Gives up the in-flight allocation of (tenant, key). A writer frees what it allocated only when it could not write
     * or flush it, so its bucket is then handed to the {@link #onFailedWrite} listener, which checks the bucket's file.
     */
    public Result<Void> free(Tenant tenant, String key, Placement expected) {
        int[] bucket = {-1};
        Result<Void> freed = underKeyLock(tenant, key, null, (scoped, shard, now) -> {
            KeyTable.InFlight pending = shard.inFlight.get(scoped);
            if (pending == null) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key " + Quoted.of(key) + " has no allocation in flight (freed, expired, or committed)");
            }
            if (expected != null && !pending.placement.sameRange(expected)) {
                return mismatch(key, expected, pending);
            }
            logAndApply(new Change.AllocationDropped(tenant.id, key, pending.placement, Change.DropReason.FREED, 0), scoped);
            bucket[0] = pending.placement.bucket();
            return Result.ok();
        });
        if (bucket[0] >= 0) {
            failedWrites.accept(bucket[0]);
        }
        return freed;
    }

    /** Told the bucket of every allocation its writer gave up; set once, before serving. Must not block. */
    private volatile java.util.function.IntConsumer failedWrites = bucket -> { };

    /** Who hears of a bucket whose writer gave up an allocation (the master's check of that bucket's file). */
    public void onFailedWrite(java.util.function.IntConsumer listener) {
        this.failedWrites = listener;
    }

    /** How the master last found {@code bucket}'s file; allocation skips the bucket unless {@link BucketHealth#HEALTHY}. */
    public BucketHealth bucketHealth(int bucket) {
        return space.health(bucket);
    }

    /** Records how the master found {@code bucket}'s file; returns what it found before. */
    public BucketHealth setBucketHealth(int bucket, BucketHealth health) {
        return space.setHealth(bucket, health);
    }

    /** Buckets allocation passes over: their files are missing or replaced. */
    public int unusableBucketCount() {
        return space.unusableCount();
    }

    /** Commits the in-flight allocation of (tenant, key) as its mapping; a committed mapping it overwrites goes to quarantine. */
    public Result<Void> notifySuccess(String tenant, String key, Placement written) {
        return notifySuccess(tenant(tenant), key, written);
    }

    public Result<Void> notifySuccess(Tenant tenant, String key, Placement written) {
        return notifySuccess(tenant, key, written, new AnswerBarrier());
    }

    /**
     * {@link #notifySuccess(Tenant, String, Placement)}, noting in {@code answer} what its answer must wait for: a commit,
     * its own record (everything it depends on was appended before it); the notify of a commit made already (sent again
     * after its answer was lost), that commit's record; any other answer, everything appended so far. A caller told OK
     * has its mapping in the log, so one told that the outcome is unknown (the log failed) has it neither in the log
     * nor before any reader.
     */
    public Result<Void> notifySuccess(Tenant tenant, String key, Placement written, AnswerBarrier answer) {
        return notifySuccess(tenant, key, written, null, answer);
    }

    /**
     * {@link #notifySuccess(Tenant, String, Placement, AnswerBarrier)} committing the engine KV blocks the object holds
     * ({@code blocks}, null for none): kept with the mapping (the hashes) and announced to KV-aware routers.
     */
    public Result<Void> notifySuccess(Tenant tenant, String key, Placement written, KvBlocks blocks, AnswerBarrier answer) {
        Result<Void> result = notifyOne(tenant, key, written, blocks, answer);
        if (!result.isOk()) {
            answer.needs(AnswerBarrier.EVERYTHING);
        }
        return result;
    }

    private Result<Void> notifyOne(Tenant tenant, String key, Placement written, KvBlocks blocks, AnswerBarrier answer) {
        String invalid = firstProblem(tenant.problem, KeyRules.checkKey(key),
                written == null ? "no descriptor for key " + Quoted.of(key) : blocks == null ? null : blocksProblem(key, blocks));
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        checkAccepting();
        String scoped = KeyRules.scopedKey(tenant.id, key);
        KeyTable.Shard shard = keys.shardOf(scoped);
        shard.lock.lock();
        try {
            long now = state.now();
            KeyTable.InFlight pending = shard.inFlight.get(scoped);
            MappingTable table = shard.mappings;
            if (pending == null) {
                int m = table.find(scoped);
                if (m >= 0 && table.sameAs(m, written)) {
                    answer.needs(notDurable(table, m)); // its commit, if the log does not hold it yet
                    return Result.ok(); // this very notify, retried after its answer was lost: already committed
                }
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key " + Quoted.of(key) + " has no allocation in flight (expired after its deadline, or freed)");
            }
            if (!pending.placement.sameRange(written)) {
                return mismatch(key, written, pending);
            }
            if (pending.deadlineNanos - now <= 0) {
                expire(pending);
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "the allocation of key " + Quoted.of(key) + " expired before the notify; its pages were reclaimed");
            }
            Placement committed = pending.placement.withCrc(written.crc32c());
            int replaced = table.find(scoped);
            answer.needs(logAndApply(replaced >= 0
                    ? new Change.Committed(tenant.id, key, committed, table.placement(replaced), releaseMillis(table, replaced, now), pending.pin,
                            blocks, table.blockHashes(replaced))
                    : new Change.Committed(tenant.id, key, committed, null, 0, pending.pin, blocks, null), scoped));
            return Result.ok();
        } finally {
            shard.lock.unlock();
        }
    }

    /**
     * Extends the deadline of the in-flight allocation of (tenant, key), which must be {@code held}, to a full
     * allocation deadline from now; returns the new deadline in milliseconds from now.
     */
    public Result<Long> renew(String tenant, String key, Placement held) {
        return renew(tenant(tenant), key, held);
    }

    public Result<Long> renew(Tenant tenant, String key, Placement held) {
        return underKeyLock(tenant, key, held == null ? "no descriptor for key " + Quoted.of(key) : null, (scoped, shard, now) -> {
            // In the order notify checks: no allocation, another allocation, then one past its deadline.
            KeyTable.InFlight pending = shard.inFlight.get(scoped);
            if (pending == null) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key " + Quoted.of(key) + " has no allocation in flight to renew (expired, freed, or committed)");
            }
            if (!pending.placement.sameRange(held)) {
                return mismatch(key, held, pending);
            }
            if (pending.deadlineNanos - now <= 0) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "the allocation of key " + Quoted.of(key) + " expired before the renewal; its pages are being reclaimed");
            }
            logAndApply(new Change.Renewed(tenant.id, key, pending.placement, state.wallMillis(now + allocationDeadlineNanos)), scoped);
            return Result.ok(allocationDeadlineMillis());
        });
    }

    /**
     * Drops the in-flight allocation of (tenant, key) for an operator: the key may be allocated again at once, and
     * its pages wait until the allocation's deadline plus the grace period, since its writer may still be writing.
     * Returns the placement dropped and until when its pages are held.
     */
    public Result<InFlightDrop> dropInFlight(String tenantId, String key) {
        Tenant tenant = tenant(tenantId);
        return underKeyLock(tenant, key, null, (scoped, shard, now) -> {
            KeyTable.InFlight pending = shard.inFlight.get(scoped);
            if (pending == null) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key " + Quoted.of(key) + " has no allocation in flight in tenant " + Quoted.of(tenantId));
            }
            // As at expiry: held until the deadline plus the grace, or freed at once when that has passed too.
            long holdUntil = pending.deadlineNanos + allocationGraceNanos;
            long releaseMs = holdUntil - now > 0 ? state.wallMillis(holdUntil) : 0;
            logAndApply(new Change.AllocationDropped(tenantId, key, pending.placement, Change.DropReason.DROPPED, releaseMs), scoped);
            return Result.ok(new InFlightDrop(pending.placement, releaseMs));
        });
    }

    /** An in-flight allocation an operator dropped: where it was, and until when (wall clock) its pages are held. */
    public record InFlightDrop(Placement placement, long quarantinedUntilMs) {
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

    /** The committed mapping of (tenant, key), granting a read lease on its pages. */
    public Result<Placement> getMapping(String tenant, String key) {
        return getMapping(tenant(tenant), key);
    }

    public Result<Placement> getMapping(Tenant tenant, String key) {
        return lookup(tenant, key, true, COMMITTED, null);
    }

    /**
     * {@link #getMapping(Tenant, String)} for a caller that can wait for the log: a mapping whose commit the log does not
     * hold yet is answered {@link #waitsForLog}, with the commit's sequence noted in {@code wait} (else a miss).
     */
    public Result<Placement> getMapping(Tenant tenant, String key, AnswerBarrier wait) {
        return lookup(tenant, key, true, COMMITTED, wait);
    }

    /**
     * Whether {@code found} is the answer of a lookup that met a mapping whose commit the log does not hold yet: the key
     * is to be looked up again (with no barrier) once the sequence the lookup's barrier noted is durable, or the log
     * failed, when that lookup answers a miss. It carries no lease and counted no hit.
     */
    public static boolean waitsForLog(Result<?> found) {
        return found == WAITS_FOR_LOG;
    }

    private static final Result<Object> WAITS_FOR_LOG = Result.error(ErrorCode.REPLICA_IS_NOT_READY,
            "the key's last change is not durable yet: look it up again once it is");

    @SuppressWarnings("unchecked")
    private static <T> Result<T> waitingForLog() {
        return (Result<T>) WAITS_FOR_LOG;
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
    private boolean mayWait(AnswerBarrier wait) {
        return wait != null && refusal == null;
    }

    /** A committed mapping with what eviction knows of it. */
    public record KeyDetail(Placement placement, long lastUseAgeMillis, boolean pinned) {
    }

    /**
     * The committed mapping of (tenant, key) with how long ago it was last used (before this call, which uses it and
     * grants a read lease like {@link #getMapping}) and whether it is pinned.
     */
    public Result<KeyDetail> getMappingDetail(String tenant, String key) {
        return getMappingDetail(tenant, key, null);
    }

    /** {@link #getMappingDetail(String, String)} for a caller that can wait for the log, as {@link #getMapping(Tenant, String, AnswerBarrier)}. */
    public Result<KeyDetail> getMappingDetail(String tenant, String key, AnswerBarrier wait) {
        return lookup(tenant(tenant), key, true, (table, m, previousUse) -> new KeyDetail(table.placement(m),
                Math.max(0, (state.now() - previousUse) / 1_000_000), table.pinned(m)), wait);
    }

    /** The committed mapping without a lease (for stat and existence checks: no descriptor is handed out). */
    public Result<Placement> peek(String tenant, String key) {
        return peek(tenant(tenant), key);
    }

    public Result<Placement> peek(Tenant tenant, String key) {
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
    public List<Result<Placement>> getMappings(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList) {
        return lookupAll(tenants, tenantIds, keyList, true, null);
    }

    /** {@link #getMappings} for a caller that can wait for the log, each key as {@link #getMapping(Tenant, String, AnswerBarrier)}. */
    public List<Result<Placement>> getMappings(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, AnswerBarrier wait) {
        return lookupAll(tenants, tenantIds, keyList, true, wait);
    }

    /**
     * {@link #exists} of each key of a batch, {@code tenantIds.get(i)}'s {@code keys.get(i)}, in order, its lines read
     * ahead as {@link #getMappings} reads them.
     */
    public List<Result<Boolean>> existsAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList) {
        return existsAll(tenants, tenantIds, keyList, null);
    }

    /** {@link #existsAll} for a caller that can wait for the log, each key as {@link #getMapping(Tenant, String, AnswerBarrier)}. */
    public List<Result<Boolean>> existsAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, AnswerBarrier wait) {
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
        ReadAhead batch = readAhead(tenants, tenantIds, keyList, i -> null);
        List<Result<Placement>> results = new ArrayList<>(keyList.size());
        // One clock reading for the batch's leases: each still starts no earlier than the client asked, which is what
        // the client counts its lease from; and the batch's hits and misses go to each tenant's counters at once.
        long now = state.now();
        HitTally tally = new HitTally();
        try {
            for (int i = 0; i < keyList.size(); i++) {
                results.add(batch.scoped[i] == null ? lookup(batch.owners[i], keyList.get(i), lease, COMMITTED, wait) // answers what is wrong
                        : lookupScoped(batch.owners[i], keyList.get(i), batch.scoped[i], lease, COMMITTED, now, tally, wait));
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

    /**
     * A batch's tenants, and the scoped key of each key that is valid for its tenant ({@code otherProblem} of the key's
     * index null too), else null: what the table is asked for, its index slots, records and key bytes read ahead
     * ({@link KeyTable#touch}) so that the cache misses of the batch's keys overlap instead of queueing.
     */
    private record ReadAhead(Tenant[] owners, String[] scoped) {
    }

    private ReadAhead readAhead(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, java.util.function.IntFunction<String> otherProblem) {
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
            long notDurable = m < 0 ? 0 : notDurable(table, m);
            if (notDurable != 0) {
                if (mayWait(wait)) {
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
                grantLease(table, m, now);
                tally.count(tenant, true);
            }
            hit = Result.ok(view.of(table, m, previousUse));
        } finally {
            shard.lock.unlock();
        }
        PromotionAdmission counting = admission;
        if (lease && counting != null) {
            counting.read(scoped); // lock-free: counted after the shard lock is let go
        }
        return hit;
    }

    /** Leases mapping {@code m}'s pages to readers for a lease period from now. Caller holds the table's shard lock. */
    void grantLease(MappingTable table, int m) {
        grantLease(table, m, state.now());
    }

    /** {@link #grantLease(MappingTable, int)} from {@code now}, a reading of this service's clock. */
    private void grantLease(MappingTable table, int m, long now) {
        long until = now + readLeaseNanos;
        if (until - table.leaseUntilNanos(m) > 0) {
            table.setLeaseUntilNanos(m, until);
        }
        table.setLastUsedNanos(m, now); // handed out: recently used, for eviction
    }

    /** Removes the committed mapping of (tenant, key); its pages wait in quarantine until its read leases run out. */
    public Result<Void> remove(String tenant, String key) {
        return remove(tenant(tenant), key);
    }

    public Result<Void> remove(Tenant tenant, String key) {
        return underKeyLock(tenant, key, null, (scoped, shard, now) -> {
            MappingTable table = shard.mappings;
            int m = table.find(scoped);
            if (m < 0) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, KeyRules.notFound(tenant.id, key));
            }
            logAndApply(new Change.Removed(tenant.id, key, table.placement(m), releaseMillis(table, m, now), Change.RemoveReason.REMOVED,
                    table.blockHashes(m)), scoped);
            return Result.ok();
        });
    }

    public Result<Boolean> exists(String tenant, String key) {
        return exists(tenant(tenant), key);
    }

    public Result<Boolean> exists(Tenant tenant, String key) {
        return existence(peek(tenant, key));
    }

    /** {@link #exists(String, String)} for a caller that can wait for the log, as {@link #getMapping(Tenant, String, AnswerBarrier)}. */
    public Result<Boolean> exists(String tenant, String key, AnswerBarrier wait) {
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

    /**
     * One page of a tenant's committed keys; {@code nextToken} is empty on the last page. A key listed with a null
     * placement waits for the log (a listing that can wait, as {@link #getMapping(Tenant, String, AnswerBarrier)}): look
     * it up again once the log holds its commit, and leave it out if that is a miss.
     */
    public record KeyPage(List<Map.Entry<String, Placement>> keys, String nextToken) {
    }

    /**
     * One page of a tenant's committed keys with a prefix, in the order of their UTF-8 bytes, after the page that
     * {@code pageToken} ended ("" = from the start): at most {@code pageSize} keys and about {@code maxBytes} of
     * keys and paths. Each key listed is leased to readers like a lookup, since its descriptor is handed out.
     * A listing costs one pass over the table when it starts (or when its cursor has been dropped), then only the
     * keys each page returns.
     */
    public Result<KeyPage> listKeys(String tenant, String prefix, int pageSize, String pageToken, long maxBytes) {
        return listKeys(tenant, prefix, pageSize, pageToken, maxBytes, true, null);
    }

    /** {@link #listKeys(String, String, int, String, long)} for a caller that can wait for the log (see {@link KeyPage}). */
    public Result<KeyPage> listKeys(String tenant, String prefix, int pageSize, String pageToken, long maxBytes, AnswerBarrier wait) {
        return listKeys(tenant, prefix, pageSize, pageToken, maxBytes, true, wait);
    }

    /** A listing that grants no lease and has no byte bound: a view of the table for checks, never for a client. */
    public Result<KeyPage> listKeys(String tenant, String prefix, int pageSize, String pageToken) {
        return listKeys(tenant, prefix, pageSize, pageToken, Long.MAX_VALUE, false, null);
    }

    private Result<KeyPage> listKeys(String tenant, String prefix, int pageSize, String pageToken, long maxBytes, boolean lease,
                                     AnswerBarrier wait) {
        String invalid = KeyRules.checkTenant(tenant);
        if (invalid == null && (pageSize < 1 || pageSize > MAX_LIST_PAGE)) {
            invalid = "page size " + pageSize + " is outside 1.." + MAX_LIST_PAGE;
        }
        ListingCursors.Token token = null;
        if (invalid == null) {
            token = ListingCursors.Token.parse(pageToken);
            if (token == null) {
                invalid = "page token " + Quoted.of(pageToken) + " is not one this master gave out; start the listing again without one";
            }
        }
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        String scopedPrefix = KeyRules.scopedKey(tenant, prefix == null ? "" : prefix);
        long now = state.now();
        ListingCursors.Cursor cursor = listings.resume(token, scopedPrefix, now);
        int index = token.nextIndex();
        if (cursor == null) {
            cursor = listings.start(scopedPrefix, collectKeys(scopedPrefix, token.lastScopedKey(scopedPrefix)), now);
            index = 0;
        }
        String[] sorted = cursor.keys();
        List<Map.Entry<String, Placement>> page = new ArrayList<>(Math.min(pageSize, 1024));
        long bytes = 0;
        String last = null;
        while (index < sorted.length && page.size() < pageSize && bytes < maxBytes) {
            String scoped = sorted[index++];
            KeyTable.Shard shard = keys.shardOf(scoped);
            Placement placement = null;
            int bucket = -1;
            shard.lock.lock();
            try {
                MappingTable table = shard.mappings;
                int m = table.find(scoped);
                long notDurable = m < 0 ? 0 : notDurable(table, m);
                if (notDurable == 0 && m >= 0) {
                    if (lease) {
                        grantLease(table, m);
                    }
                    placement = table.placement(m);
                    bucket = placement.bucket();
                } else if (notDurable != 0 && mayWait(wait)) {
                    wait.needs(notDurable);
                    bucket = table.bucket(m); // listed without its placement, for now: it waits for the log
                }
            } finally {
                shard.lock.unlock();
            }
            last = scoped;
            if (bucket >= 0) {
                String key = scoped.substring(tenant.length() + 1);
                page.add(new java.util.AbstractMap.SimpleImmutableEntry<>(key, placement));
                bytes += KeyRules.utf8Length(key) + space.path(bucket).length() + LISTED_KEY_OVERHEAD_BYTES;
            }
        }
        String next = "";
        if (index < sorted.length) {
            listings.keep(cursor);
            next = ListingCursors.tokenFor(cursor, index, last.substring(tenant.length() + 1));
        }
        return Result.ok(new KeyPage(page, next));
    }

    /** The committed scoped keys with a prefix after {@code after} (null: all), in UTF-8 order: one pass over the table. */
    private String[] collectKeys(String scopedPrefix, String after) {
        List<String> found = new ArrayList<>();
        for (int s = 0; s < KeyTable.SHARDS; s++) {
            KeyTable.Shard shard = keys.shard(s);
            shard.lock.lock();
            try {
                MappingTable table = shard.mappings;
                for (int m = 0; m < table.size(); m++) {
                    if (table.keyStartsWith(m, scopedPrefix)) {
                        String scoped = table.key(m);
                        if (after == null || ListingCursors.compareUtf8(scoped, after) > 0) {
                            found.add(scoped);
                        }
                    }
                }
            } finally {
                shard.lock.unlock();
            }
        }
        String[] sorted = found.toArray(new String[0]);
        java.util.Arrays.parallelSort(sorted, ListingCursors::compareUtf8);
        return sorted;
    }

    // ---- expiry and quarantine ----

    /**
     * Reclaims in-flight allocations past their deadline (their pages wait out the grace period) and releases
     * quarantined ranges whose time has come. The master's reaper calls this a few times a second; once changes are
     * refused it does nothing.
     *
     * @return pages returned to the allocators
     */
    public long reap() {
        if (refusal != null) {
            return 0;
        }
        long freed = 0;
        long now = state.now();
        for (int s = 0; s < KeyTable.SHARDS; s++) {
            KeyTable.Shard shard = keys.shard(s);
            // Most shards have nothing due: their oldest allocation is read without the lock, so that a pass over an
            // idle or lookup-only master costs no lock at all. A shard's list is in deadline order, appended at its
            // tail, so a head not due means nothing in the shard is; what looks due is checked again under the lock.
            KeyTable.InFlight oldest = shard.head;
            if (oldest == null || oldest.deadlineNanos - now > 0) {
                continue;
            }
            shard.lock.lock();
            try {
                while (shard.head != null && shard.head.deadlineNanos - now <= 0) {
                    freed += expire(shard.head);
                    expiredAllocations.increment();
                }
            } finally {
                shard.lock.unlock();
            }
        }
        closeReservations(now);
        return freed + releaseDueQuarantine();
    }

    /**
     * Closes every reservation of this master's whose open time has ended at {@code now} ({@code Long.MAX_VALUE}: all of
     * them), and forgets replayed ones whose hold has passed, each under its bucket's monitor: no allocation is answered
     * in a reservation after its close, and every one answered there is in the log before it, so recovery holds
     * nothing for it.
     */
    private void closeReservations(long now) {
        long nowMs = nowWallMillis();
        for (int b = 0; b < state.reservations.bucketCount(); b++) {
            Reservations.Bucket reserved = state.reservations.bucket(b);
            synchronized (reserved) {
                for (int i = 0; i < reserved.list.size(); ) {
                    Reservations.Reservation r = reserved.list.get(i);
                    if (r.recovered()) {
                        // Never closed (see Reservations); once its hold has passed, a replay would hold nothing for it.
                        if (r.change.holdUntilMs() <= nowMs) {
                            reserved.list.remove(i);
                        } else {
                            i++;
                        }
                        continue;
                    }
                    if (now != Long.MAX_VALUE && r.openUntilNanos - now > 0) {
                        i++;
                        continue;
                    }
                    close(r); // off the list: the next one moves to index i
                }
            }
        }
    }

    /**
     * Closes every reservation this master opened, for a master that stops: once the log has made the closes durable, a
     * restart holds no pages for them. Allocations answered after this open new ones; a master stops taking calls first.
     */
    public void closeAllReservations() {
        if (refusal != null) {
            return;
        }
        try {
            closeReservations(Long.MAX_VALUE);
        } catch (ChangeLog.Refused e) {
            // The log takes no more (it failed, or the leader lease lapsed): the next start holds their pages instead.
        }
    }

    /** Reservations not closed (open for allocations, or waiting for the reaper to close them). */
    public int reservationCount() {
        return state.reservations.count();
    }

    /** Reservations opened since the start. */
    public long reservationsOpenedTotal() {
        return reservationsOpened.sum();
    }

    /** Allocations made inside a reservation since the start: answered without waiting for their own records. */
    public long reservedAllocationsTotal() {
        return reservedAllocations.sum();
    }

    /** This service's clock now, as the wall-clock milliseconds its changes log (what recovery compares holds with). */
    public long nowWallMillis() {
        return state.wallMillis(state.now());
    }

    /** The reservations not closed, as their changes: what a snapshot keeps. */
    public List<Change.Reserved> reservations() {
        return state.reservations.all();
    }

    /** Releases the quarantined ranges whose time has come; returns the pages freed. Caller holds no shard lock. */
    private long releaseDueQuarantine() {
        long freed = 0;
        long now = state.now();
        while (true) {
            quarantine.lock.lock();
            try {
                Quarantine.Range due = quarantine.due(now);
                if (due == null) {
                    break;
                }
                // Applied before the lock is let go, so that a range is never out of quarantine yet still allocated
                // where a check holding this lock would see it as leaked.
                Change.Released released = new Change.Released(due.bucket(), due.firstPage(), due.pages());
                if (due.hold()) {
                    // Not logged: every recovery derives a hold from its reservation, and holds nothing once its time has
                    // passed, so no crash can undo this release (nor need a record to redo it).
                    state.apply(released);
                } else {
                    logAndApply(released);
                }
                freed += due.pages();
            } finally {
                quarantine.lock.unlock();
            }
        }
        return freed;
    }

    /**
     * Ends an allocation whose deadline has passed; its pages wait out the grace period after the deadline, or are freed
     * at once when that has passed too. Caller holds the shard lock. Returns the pages freed now.
     */
    private long expire(KeyTable.InFlight pending) {
        String tenant = KeyRules.tenantOf(pending.scopedKey);
        String key = KeyRules.keyOf(pending.scopedKey);
        long release = pending.deadlineNanos + allocationGraceNanos;
        long releaseMs = release - state.now() > 0 ? state.wallMillis(release) : 0;
        logAndApply(new Change.AllocationDropped(tenant, key, pending.placement, Change.DropReason.EXPIRED, releaseMs), pending.scopedKey);
        return releaseMs == 0 ? layout().pagesFor(pending.placement.size()) : 0;
    }

    /** A descriptor that names other pages than the key's allocation: refused, nothing changed. */
    private <T> Result<T> mismatch(String key, Placement given, KeyTable.InFlight allocation) {
        return Result.error(ErrorCode.INVALID_PARAMS, "descriptor " + describe(given) + " does not match the allocation of key "
                + Quoted.of(key) + " at " + describe(allocation.placement));
    }

    private void logAndApply(Change change) {
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

    /**
     * What the log says about KV event batches: rebuilt by replay (recovery, a standby's follow) and kept up to date by
     * the log as it seals batches; its numbers go into every snapshot.
     */
    private final KvEventHistory kvEventHistory = new KvEventHistory(0);
    private volatile KvEventHistory keptKvEventHistory;

    /** Keeps the last {@code batches} KV event batches per tenant in full on replay (for the replay socket of the master that serves next). */
    public void keepKvEventHistory(int batches) {
        keptKvEventHistory = new KvEventHistory(batches);
    }

    /** The KV event history replay fills: the one {@link #keepKvEventHistory} made, or one that keeps numbers only. */
    public KvEventHistory kvEventHistory() {
        KvEventHistory kept = keptKvEventHistory;
        return kept != null ? kept : kvEventHistory;
    }

    /** Where commits and removals of objects with engine block hashes go once logged and applied; nowhere by default. */
    private volatile KvEventSink kvEvents = KvEventSink.NONE;

    /** Hands every logged commit and removal that announces a KV event to {@code sink} (serving only, never replay). */
    public void setKvEventSink(KvEventSink sink) {
        this.kvEvents = sink == null ? KvEventSink.NONE : sink;
    }

    private static String blocksProblem(String key, KvBlocks blocks) {
        String problem = blocks.problem();
        return problem == null ? null : problem + " (key " + Quoted.of(key) + ")";
    }

    private void checkAccepting() {
        String why = refusal;
        if (why != null) {
            throw new ChangeLog.Refused(why, null);
        }
    }

    /**
     * The release time logged for the committed mapping's pages: when its last read lease runs out, or 0 when
     * they are freed at once.
     */
    private long releaseMillis(MappingTable table, int m, long now) {
        long until = table.leaseUntilNanos(m);
        return until - now > 0 ? state.wallMillis(until) : 0;
    }

    // ---- eviction ----

    /**
     * When the tier evicts. The watermarks are fractions of all pages of all buckets, counted as the pages that stay
     * used once quarantine drains (allocated minus quarantined): allocations spill to any bucket with room, so a
     * bucket-local watermark would evict from a full home bucket while others have space.
     */
    public record EvictionPolicy(boolean enabled, double highWatermark, double lowWatermark) {
        public static final EvictionPolicy OFF = new EvictionPolicy(false, 1, 1);

        public EvictionPolicy {
            if (!(lowWatermark > 0 && lowWatermark <= highWatermark && highWatermark <= 1)) {
                throw new IllegalArgumentException("eviction watermarks must satisfy 0 < low <= high <= 1, not low " + lowWatermark
                        + " and high " + highWatermark);
            }
        }
    }

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

    private volatile EvictionPolicy eviction = EvictionPolicy.OFF;
    private final LongAdder evictionRuns = new LongAdder();
    private final LongAdder evictionNanos = new LongAdder();
    private final LongAdder evictedWatermark = new LongAdder();
    private final LongAdder evictedWatermarkBytes = new LongAdder();
    private final LongAdder evictedAllocation = new LongAdder();
    private final LongAdder evictedAllocationBytes = new LongAdder();
    private final LongAdder evictedQuota = new LongAdder();
    private final LongAdder evictedQuotaBytes = new LongAdder();
    private final LongAdder roomsLost = new LongAdder();

    public void setEviction(EvictionPolicy policy) {
        this.eviction = policy;
    }

    public EvictionPolicy eviction() {
        return eviction;
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
    public long evictToWatermark(int maxEvictions) {
        EvictionPolicy policy = eviction;
        if (!policy.enabled() || refusal != null) {
            return 0;
        }
        long total = layout().pagesPerBucket() * layout().bucketCount();
        long inUse = pagesInUse();
        if (inUse <= policy.highWatermark() * total) {
            return 0;
        }
        long began = System.nanoTime();
        long target = (long) (policy.lowWatermark() * total);
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
    private RoomSearch.Room makeRoom(long pages) {
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
        sampled.sort((a, b) -> a.leased() != b.leased() ? (a.leased() ? 1 : -1) : Long.signum(a.used() - b.used()));
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
    private void evictWithinQuota(String tenant, PageState.TenantUsage usage, long size, long quota) {
        String prefix = KeyRules.scopedKey(tenant, "");
        for (int i = 0; i < MAX_EVICTIONS_FOR_QUOTA && usage.bytes.sum() + usage.inFlightBytes.sum() + size > quota; i++) {
            if (evictOne(Change.RemoveReason.EVICTED_QUOTA, prefix) < 0) {
                return;
            }
        }
    }

    /**
     * Sets a tenant's byte quota (0 removes it), logged like every change; an admin's call. Takes effect for the next
     * allocations: a tenant already above a new quota is brought under it by its own next allocations.
     *
     * @return the quota it replaced
     */
    public Result<Long> setQuota(String tenant, long maxBytes) {
        String invalid = KeyRules.checkTenant(tenant);
        if (invalid == null && maxBytes < 0) {
            invalid = "quota " + maxBytes + " is negative; give a size in bytes, or 0 for no quota";
        }
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        checkAccepting();
        synchronized (quotaLock) {
            long previous = state.usage(tenant).quotaBytes;
            logAndApply(new Change.QuotaSet(tenant, maxBytes));
            return Result.ok(previous);
        }
    }

    /** Orders quota changes in the log as they are applied; nests inside nothing. */
    private final Object quotaLock = new Object();

    // ---- layout grow ----

    /**
     * Write-held while a {@link Change.LayoutGrown} is logged and applied; read-held by what must see the layout and the
     * log agree (a snapshot reading its covered sequence) or the allocators keep their size (a page check). Nests
     * outside the shard locks; the serving path never takes it.
     */
    private final java.util.concurrent.locks.ReentrantReadWriteLock layoutLock = new java.util.concurrent.locks.ReentrantReadWriteLock();

    /** Why every bucket cannot grow to {@code bucketSize} bytes, in one line (what, which value, what is allowed), or null. */
    public String checkGrow(long bucketSize) {
        BucketLayout current = state.layout;
        String allowed = "allowed is a multiple of the page size (" + current.pageSize() + " bytes) from the current bucket size ("
                + current.bucketSize() + " bytes) up to " + BitmapPageAllocator.MAX_PAGES * current.pageSize() + " bytes";
        if (bucketSize < current.bucketSize()) {
            return "bucket size " + bucketSize + " is smaller than the current " + current.bucketSize() + ": buckets never shrink; " + allowed;
        }
        if (bucketSize % current.pageSize() != 0) {
            return "bucket size " + bucketSize + " is not a multiple of the page size " + current.pageSize() + "; " + allowed;
        }
        if (bucketSize / current.pageSize() > BitmapPageAllocator.MAX_PAGES) {
            return "bucket size " + bucketSize + " holds more than " + BitmapPageAllocator.MAX_PAGES + " pages; " + allowed;
        }
        return null;
    }

    /**
     * Grows every bucket to {@code bucketSize} bytes while serving, logged like every change: the caller has extended
     * the bucket files to that size first (and made that durable), and awaits the log before it records the layout
     * anywhere else. The allocators grow under their own monitors, so allocations go on meanwhile.
     *
     * @return the bucket size it replaced; the same size as now changes and logs nothing
     */
    public Result<Long> growLayout(long bucketSize) {
        String invalid = checkGrow(bucketSize);
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        checkAccepting();
        layoutLock.writeLock().lock();
        try {
            long previous = state.layout.bucketSize();
            if (bucketSize > previous) {
                logAndApply(new Change.LayoutGrown(previous, bucketSize));
            }
            return Result.ok(previous);
        } finally {
            layoutLock.writeLock().unlock();
        }
    }

    /** {@code reading} with no layout change in between: what it reads of the log and the layout agree. */
    public <T> T withSteadyLayout(java.util.function.Supplier<T> reading) {
        layoutLock.readLock().lock();
        try {
            return reading.get();
        } finally {
            layoutLock.readLock().unlock();
        }
    }

    /** The byte quotas in force, by tenant. */
    public Map<String, Long> quotas() {
        Map<String, Long> out = new java.util.TreeMap<>();
        state.tenants.forEach((tenant, usage) -> {
            if (usage.quotaBytes > 0) {
                out.put(tenant, usage.quotaBytes);
            }
        });
        return out;
    }

    /** A tenant's committed bytes. */
    public long usedBytes(String tenant) {
        PageState.TenantUsage usage = state.tenants.get(tenant);
        return usage == null ? 0 : usage.bytes.sum();
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
                    // Older is smaller; a pinned object comes after every unpinned one, and an object being promoted counts
                    // as used just now: its task pins it while anything else can go.
                    long age = pinned ? Long.MAX_VALUE : beingPromoted(table, k) ? Long.MAX_VALUE - 1 : used;
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
        logAndApply(new Change.Removed(tenant, KeyRules.keyOf(victimKey), victim, releaseMillis(table, m, state.now()), reason,
                table.blockHashes(m)), victimKey);
        evictedCount(reason).increment();
        evictedBytes(reason).add(victim.size());
        return layout().pagesFor(victim.size());
    }

    /**
     * The time of last use up to which a watermark pass evicts everything unpinned, so that what it evicts adds up to
     * about {@code pagesToFree} of the {@code pagesInUse}, or to {@code maxEvictions} objects when those are fewer: from
     * a sample of {@value #PASS_THRESHOLD_SAMPLES} committed unpinned mappings, the time at which the oldest of them hold
     * that share of the sample's pages (a pass cut short by its cap then takes only the oldest). A pass evicts a
     * fifth of the tier at the default watermarks; taking all of it by one threshold is closer to exact LRU than the
     * oldest of a small sample per victim, and it reads the shards' records in order rather than at random.
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
        Integer[] order = new Integer[sampled];
        long samplePages = 0;
        for (int i = 0; i < sampled; i++) {
            order[i] = i;
            samplePages += pages[i];
        }
        // Times of System.nanoTime(), compared as differences from one of them so that a wrap of the clock sorts right.
        java.util.Arrays.sort(order, (a, b) -> Long.compare(used[a] - used[0], used[b] - used[0]));
        double pagesPerObject = (double) samplePages / sampled;
        double share = Math.min(1.0, Math.min(pagesToFree, maxEvictions * pagesPerObject) / pagesInUse);
        long covered = 0;
        for (Integer i : order) {
            covered += pages[i];
            if (covered >= share * samplePages) {
                return used[i];
            }
        }
        return used[order[sampled - 1]];
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
    public long evictedTotal() {
        return evictedWatermark.sum() + evictedAllocation.sum() + evictedQuota.sum();
    }

    public long evictedBytesTotal() {
        return evictedWatermarkBytes.sum() + evictedAllocationBytes.sum() + evictedQuotaBytes.sum();
    }

    public long evictedTotal(Change.RemoveReason reason) {
        return evictedCount(reason).sum();
    }

    public long evictedBytesTotal(Change.RemoveReason reason) {
        return evictedBytes(reason).sum();
    }

    /**
     * Windows an allocation evicted objects for and then let go, since another call used, replaced or removed one of
     * their objects meanwhile (or changed the allocation's key): the one way an allocation evicts and is not placed there.
     */
    public long roomsLostTotal() {
        return roomsLost.sum();
    }

    public long evictionRunsTotal() {
        return evictionRuns.sum();
    }

    public double evictionSeconds() {
        return evictionNanos.sum() / 1e9;
    }

    /** Per tenant with any activity: {keys, bytes, hits, misses, evicted keys, evicted bytes, quota bytes}. */
    public Map<String, long[]> tenantCounters() {
        Map<String, long[]> out = new java.util.TreeMap<>();
        state.tenants.forEach((tenant, u) -> out.put(tenant, new long[] {u.keys.sum(), u.bytes.sum(), u.hits.sum(), u.misses.sum(),
                u.evictedKeys.sum(), u.evictedBytes.sum(), u.quotaBytes}));
        return out;
    }

    /** Mappings looked at per shard by {@link #oldestUseAgeMillis}: its cost stays fixed whatever the table's size. */
    static final int AGE_SAMPLES_PER_SHARD = 8;

    /**
     * Milliseconds since the least recently used committed mapping was used, estimated from a fixed sample (every
     * shard, a few mappings of each): GetStats and every scrape ask for it. 0 when there is none.
     */
    public long oldestUseAgeMillis() {
        long now = state.now();
        long[] oldestUse = {Long.MAX_VALUE};
        sampleMappings(0, 1, AGE_SAMPLES_PER_SHARD, Integer.MAX_VALUE, false, (shard, table, k) -> {
            oldestUse[0] = Math.min(oldestUse[0], table.lastUsedNanos(k));
            return true;
        });
        long oldest = oldestUse[0];
        return oldest == Long.MAX_VALUE ? 0 : Math.max(0, (now - oldest) / 1_000_000);
    }

    // ---- checking the pages (fsck) ----

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
        return withSteadyLayout(() -> new PageChecker(new CheckView(), Math.max(0, minAgeNanos), repair, maxRangesPerKind).run());
    }

    /** What a page check reads: the claims under their locks, the bitmaps, the clock; it changes no table. */
    final class CheckView {
        BucketLayout layout() {
            return state.layout;
        }

        BitmapPageAllocator[] allocators() {
            return space.allocators;
        }

        int shardCount() {
            return KeyTable.SHARDS;
        }

        KeyTable.Shard shard(int index) {
            return keys.shard(index);
        }

        java.util.concurrent.locks.ReentrantLock quarantineLock() {
            return quarantine.lock;
        }

        /** The quarantined ranges. Caller holds the quarantine lock. */
        List<Quarantine.Range> quarantinedRanges() {
            return quarantine.ranges();
        }

        long now() {
            return state.now();
        }

        boolean youngRegion(int bucket, int region, long nowNanos, long minAgeNanos) {
            return space.youngRegion(bucket, region, nowNanos, minAgeNanos);
        }
    }

    // ---- views ----

    /** Counters for stats and metrics. */
    public record Stats(long mappings, long inFlight, long quarantinedPages, long pagesAllocated, long pagesTotal, long tenants) {
    }

    public Stats stats() {
        return new Stats(state.mappings.get(), state.inFlight.get(), quarantine.pages(), space.allocatedPages(),
                layout().pagesPerBucket() * layout().bucketCount(), tenantCount());
    }

    private long tenantCount() {
        long tenants = 0;
        for (PageState.TenantUsage usage : state.tenants.values()) {
            if (usage.keys.sum() > 0 || usage.inFlight.sum() > 0) {
                tenants++;
            }
        }
        return tenants;
    }

    /** Committed keys and bytes of each tenant that has any. */
    public Map<String, long[]> tenantUsage() {
        Map<String, long[]> out = new java.util.TreeMap<>();
        state.tenants.forEach((tenant, usage) -> {
            long count = usage.keys.sum();
            if (count > 0) {
                out.put(tenant, new long[] {count, usage.bytes.sum()});
            }
        });
        return out;
    }

    /** The allocator of a bucket, for read-only reports (bitmap inspect, fsck). */
    public BitmapPageAllocator allocator(int bucket) {
        return space.allocators[bucket];
    }

    public long mappingCount() { return state.mappings.get(); }

    public long inFlightCount() { return state.inFlight.get(); }

    public long quarantinedPageCount() { return quarantine.pages(); }

    public long quarantinedRangeCount() { return quarantine.size(); }

    public long pinnedMappingCount() { return state.pinnedMappings.get(); }

    public long pinnedBytes() { return state.pinnedBytes.sum(); }

    public long pageAllocationsTotal() { return space.pageAllocationsTotal(); }

    public long pageFreesTotal() { return space.pageFreesTotal(); }

    public long allocationFailuresTotal() { return space.allocationFailuresTotal(); }

    public long spillsTotal() { return space.spillsTotal(); }

    public long expiredAllocationsTotal() { return expiredAllocations.sum(); }

    // ---- snapshot ----

    /** Receives committed mappings. */
    @FunctionalInterface
    public interface MappingSink {
        /** One committed mapping; {@code scopedKey} is tenant, NUL, key. Primitive arguments: a million calls, no objects. */
        void mapping(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pinned, long[] blockHashes) throws IOException;
    }

    /** A quarantined range as a snapshot holds it. */
    public record QuarantinedRange(int bucket, long firstPage, long pages, long releaseMs) {
    }

    /**
     * One shard's committed mappings and in-flight allocations, copied under its lock into flat arrays (a short hold:
     * no record object per mapping) and immutable after, so it can be handed to another thread.
     */
    public static final class ShardCopy {
        private final MappingTable.EncodedKeys keys;
        private final int[] buckets;
        private final long[] offsets;
        private final long[] sizes;
        private final int[] crcs;
        private final boolean[] pinned;
        /** Each mapping's engine block hashes (null entries: none); null when no mapping of the shard has any. */
        private final long[][] hashes;
        private final List<Change.Allocated> inFlight;

        private ShardCopy(MappingTable.EncodedKeys keys, int[] buckets, long[] offsets, long[] sizes, int[] crcs, boolean[] pinned,
                          long[][] hashes, List<Change.Allocated> inFlight) {
            this.keys = keys;
            this.buckets = buckets;
            this.offsets = offsets;
            this.sizes = sizes;
            this.crcs = crcs;
            this.pinned = pinned;
            this.hashes = hashes;
            this.inFlight = inFlight;
        }

        /** Mappings copied. */
        public int entries() {
            return buckets.length;
        }

        /** Hands the copy's mappings {@code [from, to)} to {@code sink}. */
        public void emitMappings(int from, int to, MappingSink sink) throws IOException {
            for (int i = from; i < to; i++) {
                if (buckets[i] >= 0) {
                    sink.mapping(keys.key(i), buckets[i], offsets[i], sizes[i], crcs[i], pinned[i], hashes == null ? null : hashes[i]);
                }
            }
        }

        /** The shard's in-flight allocations, each with its current deadline. */
        public List<Change.Allocated> inFlight() {
            return inFlight;
        }
    }

    /** Shards of the mapping table, for {@link #copyShard}. */
    public int shardCount() {
        return KeyTable.SHARDS;
    }

    /** Copies shard {@code index} under its lock; see {@link ShardCopy}. */
    public ShardCopy copyShard(int index) {
        KeyTable.Shard shard = keys.shard(index);
        List<Change.Allocated> inFlight = new ArrayList<>();
        shard.lock.lock();
        try {
            MappingTable table = shard.mappings;
            int n = table.size();
            MappingTable.EncodedKeys scopedKeys = table.copyKeys(); // decoded after the lock is let go
            int[] buckets = new int[n];
            long[] offsets = new long[n];
            long[] sizes = new long[n];
            int[] crcs = new int[n];
            boolean[] pinned = new boolean[n];
            long[][] hashes = null;
            for (int m = 0; m < n; m++) {
                buckets[m] = table.bucket(m);
                offsets[m] = table.offset(m);
                sizes[m] = table.size(m);
                crcs[m] = table.crc32c(m);
                pinned[m] = table.pinned(m);
                long[] blockHashes = table.blockHashes(m);
                if (blockHashes != null) {
                    if (hashes == null) {
                        hashes = new long[n][];
                    }
                    hashes[m] = blockHashes;
                }
            }
            for (KeyTable.InFlight pending : shard.inFlight) {
                inFlight.add(new Change.Allocated(KeyRules.tenantOf(pending.scopedKey), KeyRules.keyOf(pending.scopedKey), pending.placement,
                        state.wallMillis(pending.deadlineNanos), pending.overwrite, pending.pin));
            }
            return new ShardCopy(scopedKeys, buckets, offsets, sizes, crcs, pinned, hashes, inFlight);
        } finally {
            shard.lock.unlock();
        }
    }

    /** The quarantined ranges, for a snapshot: without the holds, which recovery derives from the reservations it keeps. */
    public List<QuarantinedRange> exportQuarantine() {
        return quarantined(false);
    }

    /** The ranges held for reservations a crash left open (see {@link #heldPageCount}). */
    public List<QuarantinedRange> exportHolds() {
        return quarantined(true);
    }

    private List<QuarantinedRange> quarantined(boolean holds) {
        quarantine.lock.lock();
        try {
            List<QuarantinedRange> out = new ArrayList<>();
            for (Quarantine.Range q : quarantine.ranges()) {
                if (q.hold() == holds) {
                    out.add(new QuarantinedRange(q.bucket(), q.firstPage(), q.pages(), state.wallMillis(q.releaseNanos())));
                }
            }
            return out;
        } finally {
            quarantine.lock.unlock();
        }
    }

    // ---- restore ----

    /** Set by the first {@link #restorer} call. */
    private Restorer restoring;

    /**
     * Starts loading recovered state into this service, which must be empty and not yet serving; later calls return
     * the same restorer.
     */
    public synchronized Restorer restorer() {
        if (restoring == null) {
            if (state.mappings.get() != 0 || state.inFlight.get() != 0 || quarantine.pages() != 0) {
                throw new IllegalStateException("restore needs an empty page service");
            }
            state.startRestore();
            restoring = new Restorer();
        }
        return restoring;
    }

    /**
     * Fills an empty service before it serves: a snapshot's mappings in bulk from {@link Batch}es decoded on other
     * threads, its in-flight allocations and quarantine, then every logged change after it through the same
     * {@link PageState#apply} that serving uses; {@link #finish} then claims every page once (the one overlap check)
     * and derives the bitmaps. Not thread-safe: one thread calls it, except that separate batches may be filled on
     * separate threads.
     */
    public final class Restorer {

        private boolean finished;

        private Restorer() {
        }

        /** One logged change, applied as it was when the master made it. */
        public void apply(Change change) {
            state.apply(change);
        }

        /** An in-flight allocation a snapshot holds. */
        public void inFlight(Change.Allocated allocation) {
            state.apply(allocation);
        }

        /** A reservation a snapshot holds (one not closed when it was taken). */
        public void reserved(Change.Reserved reservation) {
            state.apply(reservation);
        }

        /** A quarantined range a snapshot holds. */
        public void quarantined(QuarantinedRange range) {
            quarantine.add(new Quarantine.Range(state.clockOf(range.releaseMs()), range.bucket(), range.firstPage(), range.pages()));
        }

        public Batch newBatch() {
            return new Batch();
        }

        /** Adds a snapshot's mappings (later batches win for a key in several), each shard's table filled by one thread. */
        public void putAll(List<Batch> batches) {
            java.util.stream.IntStream.range(0, KeyTable.SHARDS).parallel().forEach(i -> {
                int adding = 0;
                long keyBytes = 0;
                for (Batch batch : batches) {
                    if (batch.shards[i] != null) {
                        adding += batch.shards[i].size();
                        keyBytes += batch.shards[i].keyBytesHeld();
                    }
                }
                KeyTable.Shard shard = keys.shard(i);
                if (adding == 0) {
                    return;
                }
                if (shard.mappings.size() == 0) {
                    // Sized once: no growth while filling.
                    shard.mappings = new MappingTable(adding, (int) Math.min(Integer.MAX_VALUE, (keyBytes + adding - 1) / adding));
                }
                for (Batch batch : batches) {
                    MappingTable from = batch.shards[i];
                    if (from != null) {
                        for (int m = 0; m < from.size(); m++) {
                            shard.mappings.putFrom(from, m);
                        }
                    }
                }
            });
        }

        /**
         * Counts what was restored, claims every page (refusing state where two claims share a page), derives the
         * bitmaps, and lets the service serve. In-flight allocations keep their deadlines and quarantined ranges their
         * release times, on the wall clock, so a writer still writing after a restart keeps its pages; ones already
         * past are reclaimed by the next {@link #reap}.
         *
         * @throws IllegalStateException when two pieces of state claim the same page (names both)
         */
        public void finish() {
            finishTables();
            ClaimedPages claims = claimAll();
            holdReserved(claims);
            java.util.stream.IntStream.range(0, space.allocators.length).parallel()
                    .forEach(b -> space.allocators[b].restoreAllocated(claims.claimed(b)));
            java.util.stream.IntStream.range(0, KeyTable.SHARDS).parallel()
                    .forEach(s -> space.owners.holdAll(keys.shard(s).mappings, layout().pageSize()));
            state.finishRestore();
        }

        /**
         * Counts what was restored and lets the tables be read, without claiming pages: for tools that report
         * overlaps rather than refuse them. The service must not serve after this.
         */
        public void finishTables() {
            if (finished) {
                return;
            }
            finished = true;
            long restoredLeaseUntil = state.now() + readLeaseNanos;
            long[] committed = new long[KeyTable.SHARDS];
            long[] pinned = new long[KeyTable.SHARDS];
            // Quotas were set by the snapshot and the log: kept; what is counted is counted again from the tables.
            state.tenants.values().forEach(u -> {
                u.keys.reset();
                u.bytes.reset();
                u.inFlight.reset();
                u.inFlightBytes.reset();
            });
            state.pinnedBytes.reset();
            java.util.stream.IntStream.range(0, KeyTable.SHARDS).parallel().forEach(i -> {
                KeyTable.Shard shard = keys.shard(i);
                List<KeyTable.InFlight> inFlight = new ArrayList<>();
                MappingTable table = shard.mappings;
                String tenantPrefix = null; // the last mapping's tenant and NUL: most neighbours share it, so few keys are decoded
                PageState.TenantUsage usage = null;
                for (int m = 0; m < table.size(); m++) {
                    // Leases granted before a restart are not logged: every mapping counts as read just now, so a
                    // reader that looked it up before the crash still has its pages for one lease period. Use
                    // times are not logged either: eviction starts afresh.
                    table.setLeaseUntilNanos(m, restoredLeaseUntil);
                    table.setLastUsedNanos(m, restoredLeaseUntil - readLeaseNanos);
                    committed[i]++;
                    if (tenantPrefix == null || !table.keyStartsWith(m, tenantPrefix)) {
                        String tenant = KeyRules.tenantOf(table.key(m));
                        usage = state.usage(tenant);
                        tenantPrefix = tenant + '\0';
                    }
                    usage.keys.increment();
                    usage.bytes.add(table.size(m));
                    if (table.pinned(m)) {
                        pinned[i]++;
                        state.pinnedBytes.add(table.size(m));
                    }
                }
                for (KeyTable.InFlight pending : shard.inFlight) {
                    inFlight.add(pending);
                    PageState.TenantUsage owner = state.usage(KeyRules.tenantOf(pending.scopedKey));
                    owner.inFlight.increment();
                    owner.inFlightBytes.add(pending.placement.size());
                }
                // Replay appended in log order and the snapshot in table order: put each shard's list in deadline order.
                inFlight.sort((a, b) -> Long.compare(a.deadlineNanos, b.deadlineNanos));
                shard.head = null;
                shard.tail = null;
                for (KeyTable.InFlight pending : inFlight) {
                    pending.prev = null;
                    pending.next = null;
                    shard.append(pending);
                }
            });
            promotions.dropOrphans();
            state.mappings.set(java.util.Arrays.stream(committed).sum());
            state.pinnedMappings.set(java.util.Arrays.stream(pinned).sum());
            long inFlightCount = 0;
            for (int i = 0; i < KeyTable.SHARDS; i++) {
                for (KeyTable.InFlight p = keys.shard(i).head; p != null; p = p.next) {
                    inFlightCount++;
                }
            }
            state.inFlight.set(inFlightCount);
        }
    }

    /**
     * Every claim on pages (mappings, in-flight allocations, quarantined ranges) in one map of claimed pages, the one
     * overlap check of a restore. Recovery's thread alone: nothing serves yet.
     *
     * @throws IllegalStateException naming a claim outside the layout, or two claims that share a page
     */
    private ClaimedPages claimAll() {
        long pageSize = layout().pageSize();
        ClaimedPages claims = new ClaimedPages(layout().bucketCount(), layout().pagesPerBucket());
        for (int s = 0; s < KeyTable.SHARDS; s++) {
            KeyTable.forEachClaim(keys.shard(s), (kind, key, bucket, offset, size) -> {
                Placement p = new Placement(bucket, offset, size, 0);
                if (!inLayout(p)) { // named only then: a restore visits every claim
                    throw outsideLayout(p, (kind == KeyTable.ClaimKind.MAPPING ? "mapping of " : "in-flight allocation of ") + describeKey(key.get()));
                }
                claims.add(bucket, offset / pageSize, layout().pagesFor(size));
            });
        }
        for (Quarantine.Range q : quarantine.ranges()) {
            Placement p = new Placement(q.bucket(), q.firstPage() * pageSize, q.pages() * pageSize, 0);
            if (!inLayout(p)) {
                throw outsideLayout(p, "quarantined range");
            }
            claims.add(q.bucket(), q.firstPage(), q.pages());
        }
        for (int b = 0; b < layout().bucketCount(); b++) {
            long[] twice = claims.twice(b);
            if (twice != null) {
                long page = firstSetBit(twice);
                List<String> owners = ownersOf(b, page);
                throw new IllegalStateException(String.join(" overlaps ", owners) + " at page " + page + " of bucket " + b);
            }
        }
        return claims;
    }

    /**
     * Holds the pages of every reservation left unclosed that nothing claims, until its hold time, as quarantined ranges
     * (claimed in {@code claims} too): an allocation answered there before the crash may have lost its record, and its
     * writer may write until its deadline and grace. Reservations whose hold has passed hold nothing. The longest holds
     * go first, so a page two reservations cover waits for the later time. The reservations stay, never closed, until
     * their holds pass: what they hold is quarantine that is not logged, which a crash before a snapshot would lose, and
     * the next recovery then holds their pages again.
     */
    private void holdReserved(ClaimedPages claims) {
        long nowMs = nowWallMillis();
        List<Change.Reserved> unclosed = new ArrayList<>(state.reservations.all());
        unclosed.sort((a, b) -> Long.compare(b.holdUntilMs(), a.holdUntilMs()));
        for (Change.Reserved r : unclosed) {
            if (r.holdUntilMs() <= nowMs || r.bucket() < 0 || r.bucket() >= layout().bucketCount()) {
                continue;
            }
            long end = Math.min(r.firstPage() + r.pages(), layout().pagesPerBucket());
            long[] claimed = claims.claimed(r.bucket());
            long runStart = -1;
            for (long page = Math.max(0, r.firstPage()); page <= end; page++) {
                boolean free = page < end && (claimed[(int) (page >>> 6)] & (1L << page)) == 0;
                if (free && runStart < 0) {
                    runStart = page;
                } else if (!free && runStart >= 0) {
                    quarantine.add(new Quarantine.Range(state.clockOf(r.holdUntilMs()), r.bucket(), runStart, page - runStart, true));
                    claims.add(r.bucket(), runStart, page - runStart);
                    runStart = -1;
                }
            }
        }
    }

    /** Pages held now for reservations a crash left open (released at their hold times). */
    public long heldPageCount() {
        long held = 0;
        for (QuarantinedRange range : exportHolds()) {
            held += range.pages();
        }
        return held;
    }

    private boolean inLayout(Placement p) {
        return p.bucket() >= 0 && p.bucket() < layout().bucketCount() && p.offset() >= 0 && p.offset() % layout().pageSize() == 0 && p.size() > 0
                && p.offset() + p.size() <= layout().bucketSize();
    }

    private IllegalStateException outsideLayout(Placement p, String what) {
        return new IllegalStateException(what + " at " + describe(p) + " is outside the layout (" + layout().bucketCount()
                + " buckets of " + layout().bucketSize() + " bytes, pages of " + layout().pageSize() + ")");
    }

    private static long firstSetBit(long[] words) {
        for (int w = 0; w < words.length; w++) {
            if (words[w] != 0) {
                return ((long) w << 6) + Long.numberOfTrailingZeros(words[w]);
            }
        }
        return -1;
    }

    /** Who holds a page, for an overlap report: a slow scan, only on that path. */
    private List<String> ownersOf(int bucket, long page) {
        long pageSize = layout().pageSize();
        List<String> owners = new ArrayList<>();
        for (int s = 0; s < KeyTable.SHARDS; s++) {
            KeyTable.forEachClaim(keys.shard(s), (kind, key, b, offset, size) -> {
                if (b == bucket && page >= offset / pageSize && page < offset / pageSize + layout().pagesFor(size)) {
                    owners.add((kind == KeyTable.ClaimKind.MAPPING ? "the mapping of " : "the in-flight allocation of ") + describeKey(key.get())
                            + " at " + describe(new Placement(b, offset, size, 0)));
                }
            });
        }
        for (Quarantine.Range q : quarantine.ranges()) {
            if (q.bucket() == bucket && page >= q.firstPage() && page < q.firstPage() + q.pages()) {
                owners.add("a quarantined range at pages " + q.firstPage() + "+" + q.pages());
            }
        }
        return owners;
    }

    /** Every committed mapping, in-flight allocation and quarantined range: the tools' read of a recovered state. */
    public interface StateVisitor {
        void mapping(String tenant, String key, Placement placement, boolean pinned);

        void inFlight(Change.Allocated allocation);

        void quarantined(QuarantinedRange range);

        /** A range held for a reservation a crash left open (quarantine that recovery derives, not snapshotted). */
        default void held(QuarantinedRange range) {
        }
    }

    /** Visits the whole state, one shard at a time under its lock. */
    public void visit(StateVisitor visitor) {
        for (int s = 0; s < KeyTable.SHARDS; s++) {
            ShardCopy copy = copyShard(s);
            for (int i = 0; i < copy.entries(); i++) {
                String scoped = copy.keys.key(i);
                if (copy.buckets[i] >= 0) {
                    visitor.mapping(KeyRules.tenantOf(scoped), KeyRules.keyOf(scoped),
                            new Placement(copy.buckets[i], copy.offsets[i], copy.sizes[i], copy.crcs[i]), copy.pinned[i]);
                }
            }
            copy.inFlight.forEach(visitor::inFlight);
        }
        exportQuarantine().forEach(visitor::quarantined);
        exportHolds().forEach(visitor::held);
    }

    /**
     * Mappings decoded by one thread for {@link Restorer#putAll}, already sorted by shard so that the shards can be
     * filled in parallel. Not thread-safe: one per decoding thread.
     */
    public final class Batch {
        /** Per shard, the mappings this batch decoded for it (a later one of a key in place of an earlier). */
        private final MappingTable[] shards = new MappingTable[KeyTable.SHARDS];

        private Batch() {
        }

        public void add(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pinned) {
            add(scopedKey, bucket, offset, size, crc32c, pinned, null);
        }

        /** A mapping with the engine block hashes it was committed with ({@code null}: none). */
        public void add(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pinned, long[] blockHashes) {
            int shard = KeyTable.shardIndex(scopedKey);
            if (shards[shard] == null) {
                shards[shard] = new MappingTable();
            }
            shards[shard].put(scopedKey, bucket, offset, size, crc32c, pinned, blockHashes);
        }
    }

    // ---- helpers ----

    String describe(Placement p) {
        // The size is a uint64 on the wire: a client's 2^64-1 is printed as it sent it, not as the long it became.
        return p.bucket() >= 0 && p.bucket() < layout().bucketCount()
                ? space.path(p.bucket()) + "@" + p.offset() + "+" + Long.toUnsignedString(p.size())
                : "bucket " + p.bucket() + "@" + p.offset() + "+" + Long.toUnsignedString(p.size());
    }

    static String describeKey(String scoped) {
        return "key " + Quoted.of(KeyRules.keyOf(scoped)) + " of tenant " + Quoted.of(KeyRules.tenantOf(scoped));
    }

    /** The first of the problems found, or null; spelled out rather than varargs, so no array is made per key. */
    private static String firstProblem(String first, String second, String third) {
        return first != null ? first : second != null ? second : third;
    }
}
