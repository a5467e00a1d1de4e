package io.mcctl.cli.shell;

import java.util.HashMap;
import java.util.Map;

/**
 * Within one shell, a master address that could not be reached is remembered for {@value #REMEMBER_SECONDS} s: the
 * lines that follow fail at once with the same error instead of each waiting out the client's connection retries, so
 * a script piped into a shell whose master is down ends in seconds, not minutes. Outside a shell nothing is kept.
 *
 * <p>Per thread, like {@link Shell#active()}: each shell runs its lines on one thread, so no lock is needed.
 */
public final class UnreachableMasters {

    /** How long a failed address is not tried again. */
    public static final long REMEMBER_SECONDS = 5;

    private record Failure(long atNanos, String message) {
    }

    private static final ThreadLocal<Map<String, Failure>> FAILURES = ThreadLocal.withInitial(HashMap::new);

    private UnreachableMasters() {
    }

    /** Notes that {@code target} could not be reached, when a shell runs on this thread. */
    public static void failed(String target, String message) {
        if (Shell.active()) {
            FAILURES.get().put(target, new Failure(System.nanoTime(), message));
        }
    }

    /** The error to report instead of trying {@code target} again, or null when it is to be tried. */
    public static String recentFailure(String target) {
        if (!Shell.active()) {
            return null;
        }
        Failure failure = FAILURES.get().get(target);
        if (failure == null) {
            return null;
        }
        long ago = System.nanoTime() - failure.atNanos();
        if (ago > REMEMBER_SECONDS * 1_000_000_000L) {
            FAILURES.get().remove(target);
            return null;
        }
        return failure.message() + " (not retried: it failed " + Math.max(1, ago / 1_000_000_000L) + " s ago in this shell; "
                + "tried again " + REMEMBER_SECONDS + " s after)";
    }

    static void clear() {
        FAILURES.remove();
    }
}
