package io.mcctl.master.server;

import io.grpc.netty.shaded.io.netty.channel.SelectStrategy;
import io.grpc.netty.shaded.io.netty.util.IntSupplier;
import java.util.function.LongSupplier;

/**
 * How a transport loop waits for its next work when {@code --busy-poll} is on: it keeps asking its connections whether
 * anything is ready, without sleeping, until {@code busyPollNanos} have passed since its last work (a read, a task, or
 * a wake-up), and only then sleeps until something is. A request that arrives within that time is read at once, by a
 * thread already running on its CPU.
 *
 * <p>Why: on a virtual machine whose idle CPUs halt, a loop that sleeps after every answer is woken for the next
 * request through the hypervisor, which costs tens of microseconds of latency a hop (docs/benchmarks.md: one caller's
 * single-key lookups at a p50 of 72 µs, 27 µs with the loops polling for 50 µs). The polling's price is CPU: a loop
 * spends up to {@code busyPollNanos} of it after each burst of work, and never more once the requests stop.
 *
 * <p>Not thread-safe: one per loop, used by that loop's thread alone (Netty asks each loop's strategy from its thread).
 */
final class PollBeforeSleep implements SelectStrategy {

    private final long busyPollNanos;
    private final LongSupplier nanoClock;
    /** When the loop last had work; a wake-up from sleep counts as work. */
    private long lastWorkNanos;
    /** The last answer was to sleep: this call is the loop's first after it woke. */
    private boolean sleeping;

    PollBeforeSleep(long busyPollNanos, LongSupplier nanoClock) {
        if (busyPollNanos <= 0) {
            throw new IllegalArgumentException("busy poll " + busyPollNanos + " ns: must be positive (without it, the loop's default strategy)");
        }
        this.busyPollNanos = busyPollNanos;
        this.nanoClock = nanoClock;
        this.lastWorkNanos = nanoClock.getAsLong();
    }

    /**
     * The number of connections ready now (polled without waiting), which the loop then serves, or {@link #SELECT}: sleep
     * until one is. 0 (nothing ready, nothing to sleep for yet) sends the loop round again after running its tasks.
     */
    @Override
    public int calculateStrategy(IntSupplier readyNow, boolean hasTasks) throws Exception {
        long now = nanoClock.getAsLong();
        if (sleeping) {
            sleeping = false;
            lastWorkNanos = now;
        }
        int ready = readyNow.get();
        if (ready > 0 || hasTasks) {
            lastWorkNanos = now;
            return ready;
        }
        if (now - lastWorkNanos < busyPollNanos) {
            Thread.onSpinWait();
            return 0;
        }
        sleeping = true;
        return SELECT;
    }
}
