package io.mcctl.cli.command;

import io.mcctl.master.client.TierWriter;
import java.io.PrintWriter;
import java.util.List;

/**
 * Pauses an offload at a chosen point so that a process test can stop it there (SIGSTOP) or restart the master under
 * it. Inert unless one of its environment variables is set: {@value #PAUSE_AFTER_ALLOCATE} or
 * {@value #PAUSE_BEFORE_NOTIFY}, each a number of milliseconds. Each pause is announced on stderr first.
 *
 * <p>Found as the {@link OffloadObserver} of an mcctl started with the test classes on its classpath; the binary
 * does not contain it.
 */
public final class TestHooks implements TierWriter.Listener {

    public static final String PAUSE_AFTER_ALLOCATE = "MCCTL_TEST_PAUSE_AFTER_ALLOCATE_MS";
    public static final String PAUSE_BEFORE_NOTIFY = "MCCTL_TEST_PAUSE_BEFORE_NOTIFY_MS";

    /** The service {@link OffloadObserver#load} finds on a test classpath. */
    public static final class Observer implements OffloadObserver {
        @Override
        public TierWriter.Listener listener(PrintWriter err) {
            return fromEnvironment(err);
        }
    }

    private final PrintWriter err;
    private final long afterAllocateMillis;
    private final long beforeNotifyMillis;

    private TestHooks(PrintWriter err, long afterAllocateMillis, long beforeNotifyMillis) {
        this.err = err;
        this.afterAllocateMillis = afterAllocateMillis;
        this.beforeNotifyMillis = beforeNotifyMillis;
    }

    static TierWriter.Listener fromEnvironment(PrintWriter err) {
        long afterAllocate = millis(PAUSE_AFTER_ALLOCATE);
        long beforeNotify = millis(PAUSE_BEFORE_NOTIFY);
        return afterAllocate == 0 && beforeNotify == 0 ? TierWriter.Listener.NONE : new TestHooks(err, afterAllocate, beforeNotify);
    }

    private static long millis(String name) {
        String value = System.getenv(name);
        if (value == null || value.isBlank()) {
            return 0;
        }
        try {
            return Math.max(0, Long.parseLong(value.trim()));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    @Override
    public void allocated(List<String> keys) {
        pause("allocated", afterAllocateMillis);
    }

    @Override
    public void beforeNotify(List<String> keys) {
        pause("written", beforeNotifyMillis);
    }

    private void pause(String point, long millis) {
        if (millis == 0) {
            return;
        }
        err.println("mcctl: test hook: " + point + ", pausing " + millis + " ms");
        err.flush();
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
