package io.mcctl.cli;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A progress line on a terminal ({@code label: done/total rate/s ETA}), redrawn at most ten times a
 * second; silent when stderr is not a terminal. Not thread-safe: one reporter per loop.
 */
public final class Progress implements AutoCloseable {

    private final String label;
    private final long total;
    private final PrintStream err;
    private final boolean enabled;
    private final long start = System.nanoTime();
    private long lastDraw;
    private long done;

    public Progress(String label, long total) {
        this.label = label;
        this.total = total;
        this.err = System.err;
        this.enabled = System.console() != null && total > 1;
    }

    public void advance(long count) {
        done += count;
        if (!enabled) {
            return;
        }
        long now = System.nanoTime();
        if (now - lastDraw > 100_000_000L || done >= total) {
            lastDraw = now;
            double seconds = Math.max(1e-9, (now - start) / 1e9);
            double rate = done / seconds;
            long eta = rate > 0 ? (long) ((total - done) / rate) : 0;
            err.printf(Locale.ROOT, "\r%s: %d/%d %.0f/s ETA %ds   ", label, done, total, rate, eta);
            err.flush();
        }
    }

    @Override
    public void close() {
        if (enabled) {
            err.print("\r" + " ".repeat(label.length() + 40) + "\r");
            err.flush();
        }
    }
}
