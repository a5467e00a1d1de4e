package io.mcctl.master.server;

import io.mcctl.storage.config.DurationParser;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;

/**
 * The log line of one condition that can recur many times a second (a refused connection, a failed accept, a cancelled
 * stream): the first occurrence is logged at once, later ones at most once per interval, each line saying how often the
 * condition occurred since the previous one. A warning without a stack trace: the condition is an operating one, and
 * its cause is in the line. The counts in between are in the metrics.
 *
 * <p>Thread-safe and lock-free.
 */
final class RateLimitedLog {

    private final Logger log;
    private final long intervalNanos;
    private final String interval;
    private final LongSupplier clock;
    /** Occurrences not reported in a line yet. */
    private final AtomicLong unreported = new AtomicLong();
    /** When the next line may be written, by {@link #clock}. */
    private final AtomicLong nextLineAt;

    RateLimitedLog(Logger log, Duration interval, LongSupplier clock) {
        this.log = log;
        this.intervalNanos = interval.toNanos();
        this.interval = DurationParser.format(interval);
        this.clock = clock;
        this.nextLineAt = new AtomicLong(clock.getAsLong());
    }

    /** One occurrence; {@code line} says what happened and is asked for only when a line is written. */
    void occurred(Supplier<String> line) {
        unreported.incrementAndGet();
        long now = clock.getAsLong();
        long next = nextLineAt.get();
        if (now - next >= 0 && nextLineAt.compareAndSet(next, now + intervalNanos)) {
            long times = unreported.getAndSet(0);
            log.warn("{} ({} since the previous such line, which comes at most every {})", line.get(), times == 1 ? "once" : times + " times",
                    interval);
        }
    }
}
