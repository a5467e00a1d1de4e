package io.mcctl.master.service;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/**
 * The reservations the master answers allocations in ({@link Reservations}): appends an allocation's record with what its
 * answer must wait for, opens reservations ahead of the allocations, and closes them once their open time ends.
 *
 * <p>An allocation is answered without waiting for its own record when its pages lie in a durable reservation (recovery
 * holds the free pages of reservations a crash left open, as quarantine, until the writers answered there are done), and
 * waits only for the reservation's record and for any change not yet durable that freed its pages ({@link AnswerBarrier}).
 *
 * <p>Locks: a bucket's {@link Reservations.Bucket} monitor, taken inside the allocating key's shard lock (or alone, by the
 * reaper's close); the log's lock nests inside it.
 */
final class ReservationKeeper {

    /** The most pages one reservation block spans (64 MiB of 64 KiB pages). */
    static final long MAX_RESERVATION_BLOCK_PAGES = 1024;
    /** How long a reservation takes allocations; a crash holds its free pages for this plus the deadline and grace. */
    static final Duration RESERVATION_OPEN = Duration.ofSeconds(2);
    /**
     * Open reservations a bucket may have at once. Allocations that land all over a bucket (where eviction freed room)
     * would open one each; past this many they are answered once their own records are durable, as without reservations.
     */
    static final int MAX_OPEN_RESERVATIONS = 8;

    private final PageContext context;
    private final PageState state;
    private final ChangeLog changeLog;
    /**
     * Whether allocations are answered inside reservations, before their own records are durable, or each waits for its
     * own record and no reservation is opened: the log then holds nothing but the page changes themselves, and a crash
     * holds no pages beyond the allocations in flight.
     */
    private final boolean reserving;
    /** Pages a reservation is cut in: a 64th of a bucket, between 1 and {@value #MAX_RESERVATION_BLOCK_PAGES}. */
    private final long reservationBlockPages;
    /** How long a reservation is open for allocations: {@link #RESERVATION_OPEN}, or the allocation deadline if shorter. */
    private final long reservationOpenNanos;
    private final LongAdder reservationsOpened = new LongAdder();
    private final LongAdder reservedAllocations = new LongAdder();

    ReservationKeeper(PageContext context, boolean reserving) {
        this.context = context;
        this.state = context.state;
        this.changeLog = context.changeLog;
        this.reserving = reserving;
        this.reservationBlockPages = Math.max(1, Math.min(MAX_RESERVATION_BLOCK_PAGES, state.layout.pagesPerBucket() / 64));
        this.reservationOpenNanos = Math.min(RESERVATION_OPEN.toNanos(), context.allocationDeadlineNanos);
    }

    private io.mcctl.storage.layout.BucketLayout layout() {
        return state.layout;
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
    long appendAllocation(Change.Allocated change, long pages, long now) {
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
            return Math.max(cover.sequence, state.space.lastFreeSequence(bucket));
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
        long holdUntilMs = state.wallMillis(state.clockOf(openUntilMs) + context.allocationDeadlineNanos + context.allocationGraceNanos);
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
        context.logAndApply(new Change.ReservationClosed(open.bucket(), open.firstPage(), open.pages(), open.openUntilMs()));
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
     * Closes every reservation of this master's whose open time has ended at {@code now} ({@code Long.MAX_VALUE}: all of
     * them), and forgets replayed ones whose hold has passed, each under its bucket's monitor: no allocation is answered
     * in a reservation after its close, and every one answered there is in the log before it, so recovery holds
     * nothing for it.
     */
    void closeReservations(long now) {
        long nowMs = context.nowWallMillis();
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
    void closeAllReservations() {
        if (context.refusal() != null) {
            return;
        }
        try {
            closeReservations(Long.MAX_VALUE);
        } catch (ChangeLog.Refused e) {
            // The log takes no more (it failed, or the leader lease lapsed): the next start holds their pages instead.
        }
    }

    /** Reservations not closed (open for allocations, or waiting for the reaper to close them). */
    int reservationCount() {
        return state.reservations.count();
    }

    /** Reservations opened since the start. */
    long reservationsOpenedTotal() {
        return reservationsOpened.sum();
    }

    /** Allocations made inside a reservation since the start: answered without waiting for their own records. */
    long reservedAllocationsTotal() {
        return reservedAllocations.sum();
    }

    /** The reservations not closed, as their changes: what a snapshot keeps. */
    List<Change.Reserved> reservations() {
        return state.reservations.all();
    }
}
