package io.mcctl.master.service;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.master.service.PageService.InFlightDrop;
import io.mcctl.storage.layout.BucketLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * The write side of the page RPCs: allocate (with spill, quota, and room made by eviction), free, notify (commit),
 * renew, drop and remove. Each validates its request under the key's shard lock, logs the change it makes, then applies
 * it through {@link PageState#apply}, the same transition recovery replays ({@link PageContext#logAndApply}).
 *
 * <p>Locks: the key's shard lock, one at a time; inside it a bucket's reservations monitor (around an allocation's record,
 * {@link ReservationKeeper}) or {@link Quarantine#lock}, then a bucket allocator's monitor; the log's lock innermost.
 * Making room or evicting for a quota lets the shard lock go first (eviction takes other shards' locks, one at a time),
 * then tries the allocation once more from the start.
 */
final class Offloads {

    private final PageContext context;
    private final PageState state;
    private final KeyTable keys;
    private final Quarantine quarantine;
    private final BucketSpace space;
    private final ReservationKeeper reservations;
    private final Reaper reaper;
    private final Evictor evictor;
    /** Told the bucket of every allocation its writer gave up. Must not block. */
    private final java.util.function.IntConsumer failedWrites;

    Offloads(PageContext context, ReservationKeeper reservations, Reaper reaper, Evictor evictor, java.util.function.IntConsumer failedWrites) {
        this.context = context;
        this.state = context.state;
        this.keys = context.keys;
        this.quarantine = context.quarantine;
        this.space = context.space;
        this.reservations = reservations;
        this.reaper = reaper;
        this.evictor = evictor;
        this.failedWrites = failedWrites;
    }

    private BucketLayout layout() {
        return state.layout;
    }

    private Tenant tenant(String id) {
        return new Tenant(state, id);
    }

    // ---- the page RPCs ----
    // Each takes the tenant checked and resolved once per call (a batch passes the same one for all its keys); the
    // overloads taking the id resolve it for the one key.

    /**
     * Allocates pages for {@code size} bytes under (tenant, key), in the key's home bucket or, when no run fits
     * there, in the next bucket (home+1, home+2, ... wrapping) that has one.
     */
    Result<Placement> allocate(String tenant, String key, long size, boolean overwrite) {
        return allocate(tenant, key, size, overwrite, false);
    }

    /** An allocation whose commit is soft-pinned when {@code pin}: evicted only when nothing unpinned is left. */
    Result<Placement> allocate(String tenant, String key, long size, boolean overwrite, boolean pin) {
        return allocate(tenant(tenant), key, size, overwrite, pin);
    }

    Result<Placement> allocate(Tenant tenant, String key, long size, boolean overwrite, boolean pin) {
        return allocate(tenant, key, size, overwrite, pin, new AnswerBarrier());
    }

    /** {@link #allocate}, noting in {@code answer} what the answer must wait for. */
    Result<Placement> allocate(Tenant tenant, String key, long size, boolean overwrite, boolean pin, AnswerBarrier answer) {
        String invalid = PageContext.firstProblem(tenant.problem, KeyRules.checkKey(key), KeyRules.checkSize(size, layout().bucketSize()));
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
    List<Result<Placement>> allocateAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, List<Long> sizes,
                                               boolean overwrite, boolean pin) {
        return allocateAll(tenants, tenantIds, keyList, sizes, overwrite, pin, new AnswerBarrier());
    }

    /** {@link #allocateAll}, noting in {@code answer} what the batch's answer must wait for. */
    List<Result<Placement>> allocateAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, List<Long> sizes,
                                               boolean overwrite, boolean pin, AnswerBarrier answer) {
        int n = keyList.size();
        long[] bytes = new long[n];
        for (int i = 0; i < n; i++) {
            bytes[i] = sizes.get(i);
        }
        long bucketSize = layout().bucketSize();
        PageContext.ReadAhead batch = context.readAhead(tenants, tenantIds, keyList, i -> KeyRules.checkSize(bytes[i], bucketSize));
        List<Result<Placement>> results = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            results.add(batch.scoped()[i] == null ? allocate(batch.owners()[i], keyList.get(i), bytes[i], overwrite, pin, answer) // answers what is wrong
                    : allocateScoped(batch.owners()[i], keyList.get(i), batch.scoped()[i], bytes[i], overwrite, pin, answer));
        }
        return results;
    }

    /** {@link #allocate} of a valid key of a valid tenant and a valid size, {@code scoped} being the two as the table keys them. */
    private Result<Placement> allocateScoped(Tenant tenant, String key, String scoped, long size, boolean overwrite, boolean pin,
                                            AnswerBarrier answer) {
        context.checkAccepting();
        KeyTable.Shard shard = keys.shardOf(scoped);
        shard.lock.lock();
        try {
            return allocateLocked(tenant, key, scoped, shard, size, overwrite, pin, evictor.policy().enabled(), null, answer);
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
            reaper.expire(inFlight);
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
                    evictor.evictWithinQuota(tenant, usage, size, quota);
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
                reaper.releaseDueQuarantine();
                made = space.roomFor(pages) ? null : evictor.makeRoom(pages);
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
                    evictor.roomLost(); // the key changed meanwhile, or the log refused the allocation
                }
            }
        }
        if (placement == null) {
            return Result.error(ErrorCode.NO_AVAILABLE_HANDLE, noRoomMessage(pages, size), quarantineRetryAfterMillis());
        }
        Change.Allocated change = new Change.Allocated(tenant, key, placement, state.wallMillis(now + context.allocationDeadlineNanos), overwrite, pin);
        try {
            answer.needs(reservations.appendAllocation(change, pages, now));
        } catch (ChangeLog.Refused e) {
            space.free(placement); // the run was reserved for this change alone: nothing else can have seen it
            throw e;
        }
        state.apply(change, scoped);
        return Result.ok(placement);
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
    Result<Void> free(String tenant, String key, Placement expected) {
        return free(tenant(tenant), key, expected);
    }

    /**
     * Gives up the in-flight allocation of (tenant, key). A writer frees what it allocated only when it could not write
     * or flush it, so its bucket is then handed to the {@link #onFailedWrite} listener, which checks the bucket's file.
     */
    Result<Void> free(Tenant tenant, String key, Placement expected) {
        int[] bucket = {-1};
        Result<Void> freed = context.underKeyLock(tenant, key, null, (scoped, shard, now) -> {
            KeyTable.InFlight pending = shard.inFlight.get(scoped);
            if (pending == null) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key " + Quoted.of(key) + " has no allocation in flight (freed, expired, or committed)");
            }
            if (expected != null && !pending.placement.sameRange(expected)) {
                return context.mismatch(key, expected, pending);
            }
            context.logAndApply(new Change.AllocationDropped(tenant.id, key, pending.placement, Change.DropReason.FREED, 0), scoped);
            bucket[0] = pending.placement.bucket();
            return Result.ok();
        });
        if (bucket[0] >= 0) {
            failedWrites.accept(bucket[0]);
        }
        return freed;
    }

    /** Commits the in-flight allocation of (tenant, key) as its mapping; a committed mapping it overwrites goes to quarantine. */
    Result<Void> notifySuccess(String tenant, String key, Placement written) {
        return notifySuccess(tenant(tenant), key, written);
    }

    Result<Void> notifySuccess(Tenant tenant, String key, Placement written) {
        return notifySuccess(tenant, key, written, new AnswerBarrier());
    }

    /**
     * {@link #notifySuccess(Tenant, String, Placement)}, noting in {@code answer} what its answer must wait for: a commit,
     * its own record (everything it depends on was appended before it); the notify of a commit made already (sent again
     * after its answer was lost), that commit's record; any other answer, everything appended so far. A caller told OK
     * has its mapping in the log, so one told that the outcome is unknown (the log failed) has it neither in the log
     * nor before any reader.
     */
    Result<Void> notifySuccess(Tenant tenant, String key, Placement written, AnswerBarrier answer) {
        return notifySuccess(tenant, key, written, null, answer);
    }

    /**
     * {@link #notifySuccess(Tenant, String, Placement, AnswerBarrier)} committing the engine KV blocks the object holds
     * ({@code blocks}, null for none): kept with the mapping (the hashes) and announced to KV-aware routers.
     */
    Result<Void> notifySuccess(Tenant tenant, String key, Placement written, KvBlocks blocks, AnswerBarrier answer) {
        Result<Void> result = notifyOne(tenant, key, written, blocks, answer);
        if (!result.isOk()) {
            answer.needs(AnswerBarrier.EVERYTHING);
        }
        return result;
    }

    private Result<Void> notifyOne(Tenant tenant, String key, Placement written, KvBlocks blocks, AnswerBarrier answer) {
        String invalid = PageContext.firstProblem(tenant.problem, KeyRules.checkKey(key),
                written == null ? "no descriptor for key " + Quoted.of(key) : blocks == null ? null : blocksProblem(key, blocks));
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        context.checkAccepting();
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
                    answer.needs(context.notDurable(table, m)); // its commit, if the log does not hold it yet
                    return Result.ok(); // this very notify, retried after its answer was lost: already committed
                }
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key " + Quoted.of(key) + " has no allocation in flight (expired after its deadline, or freed)");
            }
            if (!pending.placement.sameRange(written)) {
                return context.mismatch(key, written, pending);
            }
            if (pending.deadlineNanos - now <= 0) {
                reaper.expire(pending);
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "the allocation of key " + Quoted.of(key) + " expired before the notify; its pages were reclaimed");
            }
            Placement committed = pending.placement.withCrc(written.crc32c());
            int replaced = table.find(scoped);
            answer.needs(context.logAndApply(replaced >= 0
                    ? new Change.Committed(tenant.id, key, committed, table.placement(replaced), context.releaseMillis(table, replaced, now), pending.pin,
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
    Result<Long> renew(String tenant, String key, Placement held) {
        return renew(tenant(tenant), key, held);
    }

    Result<Long> renew(Tenant tenant, String key, Placement held) {
        return context.underKeyLock(tenant, key, held == null ? "no descriptor for key " + Quoted.of(key) : null, (scoped, shard, now) -> {
            // In the order notify checks: no allocation, another allocation, then one past its deadline.
            KeyTable.InFlight pending = shard.inFlight.get(scoped);
            if (pending == null) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key " + Quoted.of(key) + " has no allocation in flight to renew (expired, freed, or committed)");
            }
            if (!pending.placement.sameRange(held)) {
                return context.mismatch(key, held, pending);
            }
            if (pending.deadlineNanos - now <= 0) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "the allocation of key " + Quoted.of(key) + " expired before the renewal; its pages are being reclaimed");
            }
            context.logAndApply(new Change.Renewed(tenant.id, key, pending.placement, state.wallMillis(now + context.allocationDeadlineNanos)), scoped);
            return Result.ok(context.allocationDeadlineNanos / 1_000_000);
        });
    }

    /**
     * Drops the in-flight allocation of (tenant, key) for an operator: the key may be allocated again at once, and
     * its pages wait until the allocation's deadline plus the grace period, since its writer may still be writing.
     * Returns the placement dropped and until when its pages are held.
     */
    Result<InFlightDrop> dropInFlight(String tenantId, String key) {
        Tenant tenant = tenant(tenantId);
        return context.underKeyLock(tenant, key, null, (scoped, shard, now) -> {
            KeyTable.InFlight pending = shard.inFlight.get(scoped);
            if (pending == null) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, "key " + Quoted.of(key) + " has no allocation in flight in tenant " + Quoted.of(tenantId));
            }
            // As at expiry: held until the deadline plus the grace, or freed at once when that has passed too.
            long holdUntil = pending.deadlineNanos + context.allocationGraceNanos;
            long releaseMs = holdUntil - now > 0 ? state.wallMillis(holdUntil) : 0;
            context.logAndApply(new Change.AllocationDropped(tenantId, key, pending.placement, Change.DropReason.DROPPED, releaseMs), scoped);
            return Result.ok(new InFlightDrop(pending.placement, releaseMs));
        });
    }


    /** Removes the committed mapping of (tenant, key); its pages wait in quarantine until its read leases run out. */
    Result<Void> remove(String tenant, String key) {
        return remove(tenant(tenant), key);
    }

    Result<Void> remove(Tenant tenant, String key) {
        return context.underKeyLock(tenant, key, null, (scoped, shard, now) -> {
            MappingTable table = shard.mappings;
            int m = table.find(scoped);
            if (m < 0) {
                return Result.error(ErrorCode.OBJECT_NOT_FOUND, KeyRules.notFound(tenant.id, key));
            }
            context.logAndApply(new Change.Removed(tenant.id, key, table.placement(m), context.releaseMillis(table, m, now), Change.RemoveReason.REMOVED,
                    table.blockHashes(m)), scoped);
            return Result.ok();
        });
    }

    private static String blocksProblem(String key, KvBlocks blocks) {
        String problem = blocks.problem();
        return problem == null ? null : problem + " (key " + Quoted.of(key) + ")";
    }
}
