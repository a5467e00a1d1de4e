package io.mcctl.master.client;

import java.util.concurrent.TimeUnit;

/**
 * The writer's own view of its allocations' deadline, on {@link System#nanoTime()}: the last moment it may start a
 * pwrite ({@code fenceNanos}, the deadline less a margin), and when to renew. A shared file cannot refuse a late pwrite,
 * so this clock, started before the request that set the deadline went out, is what keeps a writer out of pages the
 * master may have given to another. Not thread-safe: one offload's.
 */
final class WriterFence {
    long deadlineNanos;
    long fenceNanos;
    long renewAtNanos;

    /** @param startNanos read before the request that set this deadline was sent */
    void set(long startNanos, long deadlineMs) {
        long deadline = TimeUnit.MILLISECONDS.toNanos(deadlineMs);
        // A tenth of the deadline, at least 50 ms and at most 2 s: room for a chunk's pwrite once started.
        long margin = Math.min(TimeUnit.SECONDS.toNanos(2), Math.max(TimeUnit.MILLISECONDS.toNanos(50), deadline / 10));
        deadlineNanos = startNanos + deadline;
        fenceNanos = deadlineNanos - margin;
        renewAtNanos = startNanos + deadline / 2;
    }

    boolean passed(long now) {
        return now - fenceNanos >= 0;
    }

    /** Time to keep for writing after a wait: the allocation must still have most of its deadline for its bytes. */
    long margin() {
        return (deadlineNanos - fenceNanos) * 4;
    }
}
