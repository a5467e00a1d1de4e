package io.mcctl.testkit;

import java.time.Duration;
import net.jqwik.api.lifecycle.AroundPropertyHook;
import net.jqwik.api.lifecycle.PropertyExecutionResult;
import net.jqwik.api.lifecycle.PropertyExecutor;
import net.jqwik.api.lifecycle.PropertyLifecycleContext;

/**
 * The jqwik counterpart of Jupiter's class-level {@code @Timeout} (which jqwik ignores): a watchdog that
 * marks the running property as timed out after {@link #LIMIT}. Properties call {@link #check()} once per
 * step, so a run past the limit fails at its next step instead of holding the build.
 * Register with {@code @AddLifecycleHook(PropertyTimeout.class)} on the class.
 */
public final class PropertyTimeout implements AroundPropertyHook {

    public static final Duration LIMIT = Duration.ofSeconds(60);

    private static volatile boolean expired;

    /** Fails the current step when the property has run past {@link #LIMIT}. */
    public static void check() {
        if (expired) {
            throw new AssertionError("the property ran past its timeout of " + LIMIT.toSeconds() + " s");
        }
    }

    @Override
    public PropertyExecutionResult aroundProperty(PropertyLifecycleContext context, PropertyExecutor property) {
        expired = false;
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(LIMIT.toMillis());
                expired = true;
            } catch (InterruptedException done) {
                // the property finished in time
            }
        }, "property-timeout");
        watchdog.setDaemon(true);
        watchdog.start();
        try {
            PropertyExecutionResult result = property.execute();
            return expired ? result.mapToFailed(new AssertionError("the property ran past its timeout of " + LIMIT.toSeconds() + " s"))
                    : result;
        } finally {
            watchdog.interrupt();
            expired = false;
        }
    }
}
