package io.mcctl.master.server;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * What Session streams hold for clients that have not taken their answers, over the whole master, and the bounds past
 * which a stream is cancelled: {@link #streamLimit} for one stream, {@link #totalLimit} for all of them. A stream counts
 * an answer from when it hands it to the transport until the transport is ready again (it then holds less than gRPC's
 * ready threshold, 32 KiB) or the stream ends; see {@link SessionStream}. The bytes are the transport's direct buffers,
 * outside the Java heap, which is why they are bounded here rather than by the heap.
 *
 * <p>Thread-safe and lock-free: counters and the two limits (volatile, set once at start).
 */
final class SessionBacklog {

    /** Why a stream was cancelled, as the metric labels it. */
    enum Exceeded {
        STREAM("stream_limit"), TOTAL("total_limit");

        final String label;

        Exceeded(String label) {
            this.label = label;
        }
    }

    private volatile long streamLimit = MasterSettings.SESSION_BACKLOG_DEFAULT;
    private volatile long totalLimit = MasterSettings.SESSION_BACKLOG_TOTAL_DEFAULT;
    private final AtomicLong held = new AtomicLong();
    private final AtomicInteger paused = new AtomicInteger();
    private final LongAdder cancelledForStream = new LongAdder();
    private final LongAdder cancelledForTotal = new LongAdder();

    /** Sets the bounds; before the master serves. */
    void limit(long streamLimit, long totalLimit) {
        this.streamLimit = streamLimit;
        this.totalLimit = totalLimit;
    }

    long streamLimit() {
        return streamLimit;
    }

    long totalLimit() {
        return totalLimit;
    }

    /**
     * Which bound an answer of {@code bytes} would pass, sent by a stream that already holds {@code streamHeld}
     * while its client is not taking answers; null when it passes none.
     */
    Exceeded wouldExceed(long streamHeld, long bytes) {
        if (streamHeld + bytes > streamLimit) {
            return Exceeded.STREAM;
        }
        return held.get() + bytes > totalLimit ? Exceeded.TOTAL : null;
    }

    void hold(long bytes) {
        held.addAndGet(bytes);
    }

    void release(long bytes) {
        held.addAndGet(-bytes);
    }

    /** Bytes of answers held over all streams. */
    long held() {
        return held.get();
    }

    /** A stream stopped reading requests because its client is not taking answers ({@code +1}), or read again ({@code -1}). */
    void paused(int change) {
        paused.addAndGet(change);
    }

    /** Streams not read now because their clients are not taking answers. */
    int pausedStreams() {
        return paused.get();
    }

    void cancelled(Exceeded why) {
        (why == Exceeded.STREAM ? cancelledForStream : cancelledForTotal).increment();
    }

    long cancelledTotal(Exceeded why) {
        return (why == Exceeded.STREAM ? cancelledForStream : cancelledForTotal).sum();
    }
}
