package io.mcctl.master.service;

import io.mcctl.master.proto.v1.ErrorCode;

/**
 * The outcome of one page-service operation on one key: a value, or a Mooncake error code with a
 * message for people. Expected failures are values, not exceptions, so batch calls answer per key.
 */
public final class Result<T> {

    private static final Result<Void> OK_VOID = new Result<>(null, ErrorCode.OK, "");

    private final T value;
    private final ErrorCode error;
    private final String message;

    private Result(T value, ErrorCode error, String message) {
        this.value = value;
        this.error = error;
        this.message = message;
    }

    public static <T> Result<T> ok(T value) {
        return new Result<>(value, ErrorCode.OK, "");
    }

    public static Result<Void> ok() {
        return OK_VOID;
    }

    public static <T> Result<T> error(ErrorCode error, String message) {
        if (error == ErrorCode.OK) {
            throw new IllegalArgumentException("an error result needs an error code");
        }
        return new Result<>(null, error, message);
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

    /** The same failure, typed for another value. */
    public <U> Result<U> cast() {
        if (isOk()) {
            throw new IllegalStateException("only a failure can be recast");
        }
        return new Result<>(null, error, message);
    }

    @Override
    public String toString() {
        return isOk() ? "OK(" + value + ")" : error + ": " + message;
    }
}
