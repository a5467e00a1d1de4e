package io.mcctl.master.service;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Freed page ranges waiting before they may be reused: behind the read leases of a removed or replaced mapping,
 * or for the grace period after an in-flight allocation's deadline (a late writer may still be writing), or held for a
 * reservation a crash left open ({@link Range#hold}: derived by recovery from the reservation, so neither snapshotted
 * nor released through the log).
 *
 * <p>{@link #lock} guards the queue. It nests inside a shard lock and outside a bucket's allocator monitor.
 */
final class Quarantine {

    /**
     * One range and the time (service clock) from which it may be released; {@code hold}: held for a reservation (see
     * {@link PageService#heldPageCount}), which every recovery derives again from the reservation itself.
     */
    record Range(long releaseNanos, int bucket, long firstPage, long pages, boolean hold) {
        Range(long releaseNanos, int bucket, long firstPage, long pages) {
            this(releaseNanos, bucket, firstPage, pages, false);
        }
    }

    final ReentrantLock lock = new ReentrantLock();
    /** The ranges by bucket and first page: a range added again (on replay) replaces itself instead of counting twice. */
    private final HashMap<Long, Range> byStart = new HashMap<>();
    private final PriorityQueue<Range> queue = new PriorityQueue<>((a, b) -> Long.compare(a.releaseNanos, b.releaseNanos));
    private final AtomicLong pages = new AtomicLong();

    void add(Range range) {
        lock.lock();
        try {
            Range old = byStart.put(startKey(range.bucket, range.firstPage), range);
            if (old != null) {
                queue.remove(old);
                pages.addAndGet(-old.pages);
            }
            queue.add(range);
            pages.addAndGet(range.pages);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Takes the range out of quarantine; false when it is not there (on replay: a snapshot taken after it was
     * released). The range due first is at the head, so releasing in order finds it at once.
     */
    boolean remove(int bucket, long firstPage, long count) {
        lock.lock();
        try {
            Range r = byStart.get(startKey(bucket, firstPage));
            if (r == null || r.pages != count) {
                return false;
            }
            byStart.remove(startKey(bucket, firstPage));
            queue.remove(r); // the head when released in order: found at once
            pages.addAndGet(-count);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** The range due first if its release time has come by {@code nowNanos}, else null. Caller holds the lock. */
    Range due(long nowNanos) {
        Range head = queue.peek();
        return head != null && head.releaseNanos - nowNanos <= 0 ? head : null;
    }

    private static long startKey(int bucket, long firstPage) {
        return ((long) bucket << 40) | firstPage;
    }

    long pages() {
        return pages.get();
    }

    int size() {
        lock.lock();
        try {
            return queue.size();
        } finally {
            lock.unlock();
        }
    }

    /** The ranges in no particular order. Caller holds the lock. */
    List<Range> ranges() {
        return new ArrayList<>(queue);
    }

    /** The earliest release time, or null when empty. */
    Long firstRelease() {
        lock.lock();
        try {
            Range head = queue.peek();
            return head == null ? null : head.releaseNanos;
        } finally {
            lock.unlock();
        }
    }
}
