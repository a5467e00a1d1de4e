package io.mcctl.storage.mount;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The outcome of one mount check: a stable name, a status, one line for people, and what was measured
 * (stable snake_case keys, numbers and strings only), in the order it was measured. Immutable.
 */
public record CheckResult(String name, Status status, String detail, Map<String, Object> measured) {

    /** How a check came out. Only {@link #FAIL} makes a mount unfit to join. */
    public enum Status { PASS, WARN, FAIL, SKIP }

    public CheckResult {
        measured = Collections.unmodifiableMap(new LinkedHashMap<>(measured));
    }

    public static CheckResult pass(String name, String detail, Map<String, Object> measured) {
        return new CheckResult(name, Status.PASS, detail, measured);
    }

    public static CheckResult warn(String name, String detail, Map<String, Object> measured) {
        return new CheckResult(name, Status.WARN, detail, measured);
    }

    public static CheckResult fail(String name, String detail, Map<String, Object> measured) {
        return new CheckResult(name, Status.FAIL, detail, measured);
    }

    public static CheckResult fail(String name, String detail) {
        return fail(name, detail, Map.of());
    }

    public static CheckResult skip(String name, String detail) {
        return new CheckResult(name, Status.SKIP, detail, Map.of());
    }

    public boolean failed() {
        return status == Status.FAIL;
    }
}
