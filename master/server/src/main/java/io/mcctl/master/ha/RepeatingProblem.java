package io.mcctl.master.ha;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * One log line per condition for a problem that repeats every few seconds (etcd not answering a lease grant, say), where
 * each failure's message differs in details such as the time a deadline took. The first occurrence of a condition is
 * told at once; repeats of the same condition are counted and told at most once per interval, with their count; another
 * condition is told at once; and the end of the problem is told with how often it came. It returns the lines to tell,
 * and the caller logs them at the level each deserves.
 *
 * <p>Not thread-safe: one thread reports (the role thread, or a lease's keep-alive thread, each with its own).
 */
final class RepeatingProblem {

    private final long intervalNanos;
    private final LongSupplier nanoClock;
    private String condition;
    private long toldAtNanos;
    /** Occurrences of {@link #condition} since it was last told. */
    private long untold;
    /** Occurrences of {@link #condition} since it began. */
    private long total;

    /**
     * @param interval at most one line per condition in this time
     * @param nanoClock {@link System#nanoTime} or a clock of a test's
     */
    RepeatingProblem(Duration interval, LongSupplier nanoClock) {
        this.intervalNanos = interval.toNanos();
        this.nanoClock = nanoClock;
    }

    /**
     * One occurrence of {@code condition} (what stays the same from one failure to the next), described in full by
     * {@code detail}: the line to tell when it is new or the interval has passed since it was last told; null when it
     * was only counted.
     */
    String occurred(String condition, String detail) {
        long now = nanoClock.getAsLong();
        if (!condition.equals(this.condition)) {
            this.condition = condition;
            toldAtNanos = now;
            untold = 0;
            total = 1;
            return detail;
        }
        total++;
        untold++;
        if (now - toldAtNanos < intervalNanos) {
            return null;
        }
        String line = detail + " (" + untold + " times since the last such line, " + total + " in all)";
        toldAtNanos = now;
        untold = 0;
        return line;
    }

    /** The problem is over: the line that says so with how often it came ("{@code what} after ..."), or null when there was none. */
    String cleared(String what) {
        String line = condition == null ? null : what + " after " + total + (total == 1 ? " failure" : " failures") + " of: " + condition;
        condition = null;
        untold = 0;
        total = 0;
        return line;
    }
}
