package io.mcctl.master.service;

import java.util.ArrayList;
import java.util.List;

/**
 * The reservations not closed, per bucket: ranges of pages in which the master answers an allocation before the
 * allocation's own record is durable ({@link Change.Reserved}). Live, a reservation is open for allocations until its
 * open time ends; the reaper then closes it ({@link Change.ReservationClosed}). Replayed, the reservations left
 * unclosed are what recovery holds: their unclaimed pages wait until the reservation's hold time, since a writer
 * answered there before the crash may still be writing.
 *
 * <p>A replayed reservation ({@link Reservation#recovered}) takes no allocation and is never closed: its hold lives on
 * as quarantine that is not logged, so it stays in the state (and in snapshots) until its hold time has passed, for a
 * crash before then to hold its pages again.
 *
 * <p>Locks: each bucket's {@link Bucket} monitor guards its list. The serving path takes it inside a key's shard lock,
 * around the check of an allocation's cover and the append of the allocation's record (so that a reservation's close,
 * appended under the same monitor, follows every allocation answered in it); the log's lock nests inside it.
 */
final class Reservations {

    /** One reservation: the change as logged, its log sequence (0 when replayed) and its open time on the service clock. */
    static final class Reservation {
        final Change.Reserved change;
        final long sequence;
        final long openUntilNanos;

        Reservation(Change.Reserved change, long sequence, long openUntilNanos) {
            this.change = change;
            this.sequence = sequence;
            this.openUntilNanos = openUntilNanos;
        }

        /** Replayed from a log or snapshot rather than opened by this master: it takes no allocation and is not closed. */
        boolean recovered() {
            return sequence == 0;
        }

        /** Whether this master may answer allocations in it at {@code nowNanos}. */
        boolean open(long nowNanos) {
            return !recovered() && openUntilNanos - nowNanos > 0;
        }

        long firstPage() {
            return change.firstPage();
        }

        long endPage() {
            return change.firstPage() + change.pages();
        }

        boolean covers(long firstPage, long pages) {
            return firstPage >= firstPage() && firstPage + pages <= endPage();
        }

        boolean sameAs(int bucket, long firstPage, long pages, long openUntilMs) {
            return change.bucket() == bucket && change.firstPage() == firstPage && change.pages() == pages
                    && change.openUntilMs() == openUntilMs;
        }
    }

    /** A bucket's reservations not closed, oldest first. Guarded by its own monitor. */
    static final class Bucket {
        final ArrayList<Reservation> list = new ArrayList<>(4);

        /**
         * An open reservation ({@code nowNanos} before its open time ends) that covers the pages, the one logged first
         * (most likely durable) when several do; null when none does. Caller holds this monitor.
         */
        Reservation covering(long firstPage, long pages, long nowNanos) {
            for (Reservation r : list) {
                if (r.open(nowNanos) && r.covers(firstPage, pages)) {
                    return r;
                }
            }
            return null;
        }

        /** Reservations still open at {@code nowNanos}. Caller holds this monitor. */
        int openCount(long nowNanos) {
            int open = 0;
            for (Reservation r : list) {
                if (r.open(nowNanos)) {
                    open++;
                }
            }
            return open;
        }
    }

    private final Bucket[] buckets;

    Reservations(int bucketCount) {
        buckets = new Bucket[bucketCount];
        for (int b = 0; b < bucketCount; b++) {
            buckets[b] = new Bucket();
        }
    }

    Bucket bucket(int bucket) {
        return buckets[bucket];
    }

    /** Takes a reservation in; one already held (a snapshot's, replayed again) is not taken twice. */
    void add(Change.Reserved change, long sequence, long openUntilNanos) {
        Bucket bucket = buckets[change.bucket()];
        synchronized (bucket) {
            for (Reservation r : bucket.list) {
                if (r.sameAs(change.bucket(), change.firstPage(), change.pages(), change.openUntilMs())) {
                    return;
                }
            }
            bucket.list.add(new Reservation(change, sequence, openUntilNanos));
        }
    }

    /** Closes the reservation the change names; one not held (closed already, or never replayed) changes nothing. */
    void close(Change.ReservationClosed change) {
        Bucket bucket = buckets[change.bucket()];
        synchronized (bucket) {
            bucket.list.removeIf(r -> r.sameAs(change.bucket(), change.firstPage(), change.pages(), change.openUntilMs()));
        }
    }

    /** Every reservation not closed, bucket by bucket (each bucket's list copied under its monitor). */
    List<Change.Reserved> all() {
        List<Change.Reserved> all = new ArrayList<>();
        for (Bucket bucket : buckets) {
            synchronized (bucket) {
                for (Reservation r : bucket.list) {
                    all.add(r.change);
                }
            }
        }
        return all;
    }

    /** How many reservations are not closed. */
    int count() {
        int count = 0;
        for (Bucket bucket : buckets) {
            synchronized (bucket) {
                count += bucket.list.size();
            }
        }
        return count;
    }

    int bucketCount() {
        return buckets.length;
    }
}
