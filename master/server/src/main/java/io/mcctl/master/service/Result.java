package io.mcctl.master.service;

import io.mcctl.master.proto.v1.ErrorCode;

/**
 * The outcome of one page-service operation on one key: a value, or a Mooncake error code with a
 * message for people. Expected failures are values, not exceptions, so batch calls answer per key.
 */
public final class Result<T> {

    private static final Result<Void> OK_VOID = new Result<>(null, ErrorCode.OK, "", 0);

    private final T value;
    private final ErrorCode error;
    private final String message;
    private final long retryAfterMillis;

    private Result(T value, ErrorCode error, String message, long retryAfterMillis) {
        this.value = value;
        this.error = error;
        this.message = message;
        this.retryAfterMillis = retryAfterMillis;
    }

    public static <T> Result<T> ok(T value) {
        return new Result<>(value, ErrorCode.OK, "", 0);
    }

    public static Result<Void> ok() {
        return OK_VOID;
    }

    public static <T> Result<T> error(ErrorCode error, String message) {
        return error(error, message, 0);
    }

    /** A failure that may pass: the same call is worth trying again in {@code retryAfterMillis} (0: not by waiting). */
    public static <T> Result<T> error(ErrorCode error, String message, long retryAfterMillis) {
        if (error == ErrorCode.OK) {
            throw new IllegalArgumentException("an error result needs an error code");
        }
        return new Result<>(null, error, message, retryAfterMillis);
    }

    public boolean isOk() {
        return error == ErrorCode.OK;
    }

    /** The value; only for a successful result. */
    public T value() {
        if (!isOk()) {
            throw new IllegalStateException("no value: " + error + ": " + message);
        }
        return value;
    }

    public ErrorCode error() {
        return error;
    }

    public String message() {
        return message;
    }

    /** Milliseconds after which the same call may succeed (room released from quarantine); 0 when waiting does not help. */
    public long retryAfterMillis() {
        return retryAfterMillis;
    }

    /** The same failure, typed for another value. */
    public <U> Result<U> cast() {
        if (isOk()) {
            throw new IllegalStateException("only a failure can be recast");
        }
        return new Result<>(null, error, message, retryAfterMillis);
    }

    @Override
    public String toString() {
        return isOk() ? "OK(" + value + ")" : error + ": " + message;
    }
}
