package io.mcctl.master.client;

import io.mcctl.master.proto.v1.ErrorCode;

/** A call to the master that failed: the Mooncake error code, and a message for people. */
public final class MasterException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;
    private final boolean unreachable;

    public MasterException(ErrorCode code, String message, boolean unreachable, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.unreachable = unreachable;
    }

    public ErrorCode code() {
        return code;
    }

    /** True when the master could not be reached at all (not running, wrong address, network). */
    public boolean unreachable() {
        return unreachable;
    }
}
