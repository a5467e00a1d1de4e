package io.mcctl.master.service;

/**
 * The log sequence that must be durable before a call's answer may go out, as the page service found it while serving
 * the call's keys: 0 when nothing need be waited for, {@link #EVERYTHING} for every change appended before the answer.
 * An allocation inside a durable reservation needs nothing (its own record is not waited for); one that opened a
 * reservation needs that reservation's record; pages freed by a change not yet durable need that change.
 *
 * <p>Not thread-safe: one per call, filled by the thread serving it.
 */
public final class AnswerBarrier {

    /** Wait for every change appended before the answer, as for any mutation. */
    public static final long EVERYTHING = Long.MAX_VALUE;

    private long sequence;

    /** The answer must wait until {@code sequence} is durable (0: nothing). */
    void needs(long sequence) {
        if (sequence > this.sequence) {
            this.sequence = sequence;
        }
    }

    /** The sequence to wait for: 0 for none, {@link #EVERYTHING} for all appended so far. */
    public long sequence() {
        return sequence;
    }
}
