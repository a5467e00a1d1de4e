package io.mcctl.master.service;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * Which objects are read often enough to promote: a count-min sketch of reads per object (four rows of 16,384
 * counters, 256 KiB whatever the number of objects) whose counts are halved every {@link #WINDOW_READS} reads, so an
 * object is admitted when it was read {@code threshold} times within about the last window. An object that reaches the
 * threshold is named once per window to the promoter through a bounded queue; the read path never blocks or logs.
 * Collisions can only overestimate a count (an object admitted a little early), never hide a hot one.
 *
 * <p>Thread-safe without locks: the counters are atomic and aging races with counting only by a read or two.
 */
public final class PromotionAdmission {

    private static final int ROWS = 4;
    private static final int WIDTH = 1 << 14;
    /** Reads after which every count is halved. */
    public static final long WINDOW_READS = 16L * WIDTH;
    /** Admitted objects waiting for the promoter; more are dropped until it drains them (they are admitted again). */
    static final int QUEUE = 4096;

    private final int threshold;
    private final AtomicIntegerArray counts = new AtomicIntegerArray(ROWS * WIDTH);
    private final LongAdder reads = new LongAdder();
    private volatile long nextAging = WINDOW_READS;
    private final ArrayBlockingQueue<String> admitted = new ArrayBlockingQueue<>(QUEUE);
    /** Whether lookups count reads: only while a live node has a DRAM segment to promote into. */
    private volatile boolean counting;

    /** @param threshold reads within the window that admit an object; at least 1 */
    public PromotionAdmission(int threshold) {
        if (threshold < 1) {
            throw new IllegalArgumentException("the promotion admission threshold must be at least 1 read, not " + threshold);
        }
        this.threshold = threshold;
    }

    public int threshold() {
        return threshold;
    }

    /** Starts ({@code true}) or stops counting lookups' reads. */
    public void count(boolean on) {
        this.counting = on;
    }

    /** Whether lookups count reads now. */
    boolean counting() {
        return counting;
    }

    /** One read of the object filed as {@code scopedKey}. */
    void read(String scopedKey) {
        int h = scopedKey.hashCode();
        int estimate = Integer.MAX_VALUE;
        boolean crossed = false;
        for (int row = 0; row < ROWS; row++) {
            int slot = row * WIDTH + index(h, row);
            int count = counts.get(slot);
            if (count < threshold) { // counts saturate at the threshold: nothing above it is ever asked
                count = counts.incrementAndGet(slot);
                crossed |= count == threshold;
            }
            estimate = Math.min(estimate, count);
        }
        if (crossed && estimate >= threshold) {
            admitted.offer(scopedKey); // named at most once per row and window; the promoter skips what it has queued
        }
        reads.increment();
    }

    /** Up to {@code max} admitted objects (scoped keys), oldest first; ages the counts when a window has passed. */
    public List<String> drain(int max) {
        if (reads.sum() >= nextAging) {
            nextAging = reads.sum() + WINDOW_READS;
            for (int i = 0; i < counts.length(); i++) {
                counts.set(i, counts.get(i) >> 1);
            }
        }
        List<String> out = new ArrayList<>(Math.min(max, admitted.size()));
        admitted.drainTo(out, max);
        return out;
    }

    /** Starts the object's count afresh (it was promoted, or its promotion failed): it is admitted again only by new reads. */
    public void forget(String scopedKey) {
        int h = scopedKey.hashCode();
        for (int row = 0; row < ROWS; row++) {
            counts.set(row * WIDTH + index(h, row), 0);
        }
    }

    private static int index(int hash, int row) {
        long mixed = (hash + 0x9E3779B97F4A7C15L * (row + 1)) * 0xBF58476D1CE4E5B9L;
        return (int) (mixed >>> 50) & (WIDTH - 1);
    }
}
