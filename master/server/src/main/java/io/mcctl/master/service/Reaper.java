package io.mcctl.master.service;

import io.mcctl.master.protocol.KeyRules;
import java.util.concurrent.atomic.LongAdder;

/**
 * Leases and reaping: ends in-flight allocations whose deadline has passed (their pages wait out the grace period in
 * quarantine), releases quarantined ranges whose read leases or grace have run out, and closes reservations whose open
 * time has ended. The master's housekeeping thread calls {@link #reap} a few times a second; an allocation that finds no
 * room releases what is due at once ({@link #releaseDueQuarantine}).
 *
 * <p>Locks: one shard lock at a time (the deadline list's head is read without it, as a hint), then, with none held,
 * {@link Quarantine#lock} around each release, then each bucket's reservations monitor; no lock of its own.
 */
final class Reaper {

    private final PageContext context;
    private final PageState state;
    private final KeyTable keys;
    private final Quarantine quarantine;
    private final ReservationKeeper reservations;
    private final LongAdder expiredAllocations = new LongAdder();

    Reaper(PageContext context, ReservationKeeper reservations) {
        this.context = context;
        this.state = context.state;
        this.keys = context.keys;
        this.quarantine = context.quarantine;
        this.reservations = reservations;
    }

    /** Allocations reclaimed after their deadline since the start. */
    long expiredAllocationsTotal() {
        return expiredAllocations.sum();
    }
    /**
     * Reclaims in-flight allocations past their deadline (their pages wait out the grace period) and releases
     * quarantined ranges whose time has come. The master's reaper calls this a few times a second; once changes are
     * refused it does nothing.
     *
     * @return pages returned to the allocators
     */
    long reap() {
        if (context.refusal() != null) {
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
        reservations.closeReservations(now);
        return freed + releaseDueQuarantine();
    }


    /** Releases the quarantined ranges whose time has come; returns the pages freed. Caller holds no shard lock. */
    long releaseDueQuarantine() {
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
                    context.logAndApply(released);
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
    long expire(KeyTable.InFlight pending) {
        String tenant = KeyRules.tenantOf(pending.scopedKey);
        String key = KeyRules.keyOf(pending.scopedKey);
        long release = pending.deadlineNanos + context.allocationGraceNanos;
        long releaseMs = release - state.now() > 0 ? state.wallMillis(release) : 0;
        context.logAndApply(new Change.AllocationDropped(tenant, key, pending.placement, Change.DropReason.EXPIRED, releaseMs), pending.scopedKey);
        return releaseMs == 0 ? state.layout.pagesFor(pending.placement.size()) : 0;
    }

}
