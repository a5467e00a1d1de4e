package io.mcctl.master.security;

import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Audit lines (logger {@code mcctl.audit}) at a bounded rate: a bucket of {@link #BURST} lines refilled at
 * {@link #PER_SECOND} a second. Lines over the rate are dropped and counted; the next line written says how many
 * went before it, so a flood of refused calls cannot fill the disk or drown the master's other logging.
 *
 * <p>Thread-safe: {@code this} guards the bucket and the dropped count; no other lock is taken under it. Only
 * refused calls and admin actions write here, never the allowed calls of the hot path.
 */
public final class AuditLog {

    public static final int BURST = 50;
    public static final int PER_SECOND = 10;

    private static final Logger LOG = LoggerFactory.getLogger("mcctl.audit");
    private static final long NANOS_PER_LINE = 1_000_000_000L / PER_SECOND;

    private final LongSupplier nanoClock;
    private long credit;         // lines that may be written now, in nanoseconds of refill (BURST lines at most)
    private long lastRefill;
    private long droppedSinceLastLine;
    private long droppedTotal;

    public AuditLog(LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
        this.lastRefill = nanoClock.getAsLong();
        this.credit = BURST * NANOS_PER_LINE;
    }

    /** Writes {@code line} unless the rate is spent; returns whether it was written. */
    public boolean write(String line) {
        long dropped;
        synchronized (this) {
            long now = nanoClock.getAsLong();
            credit = Math.min(BURST * NANOS_PER_LINE, credit + (now - lastRefill));
            lastRefill = now;
            if (credit < NANOS_PER_LINE) {
                droppedSinceLastLine++;
                droppedTotal++;
                return false;
            }
            credit -= NANOS_PER_LINE;
            dropped = droppedSinceLastLine;
            droppedSinceLastLine = 0;
        }
        if (dropped > 0) {
            LOG.warn("{} ({} audit lines dropped before this one: more than {} a second)", line, dropped, PER_SECOND);
        } else {
            LOG.warn("{}", line);
        }
        return true;
    }

    public synchronized long droppedTotal() {
        return droppedTotal;
    }
}
