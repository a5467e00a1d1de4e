package io.mcctl.master.client;

import io.mcctl.master.proto.v1.ErrorCode;

/** A call to the master that failed: the Mooncake error code, and a message for people. */
public final class MasterException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;
    private final boolean unreachable;
    private final boolean notSent;
    private final boolean connectionLost;
    private final boolean tlsHandshakeFailed;

    public MasterException(ErrorCode code, String message, boolean unreachable, Throwable cause) {
        this(code, message, unreachable, false, cause);
    }

    /** @param notSent the request never reached the master (no connection could be made), so it changed nothing */
    public MasterException(ErrorCode code, String message, boolean unreachable, boolean notSent, Throwable cause) {
        this(code, message, unreachable, notSent, false, cause);
    }

    /**
     * @param connectionLost the connection failed under the call after the request may have gone out (as opposed to a
     *     master that answered, or did not answer in time)
     */
    public MasterException(ErrorCode code, String message, boolean unreachable, boolean notSent, boolean connectionLost, Throwable cause) {
        this(code, message, unreachable, notSent, connectionLost, false, cause);
    }

    private MasterException(ErrorCode code, String message, boolean unreachable, boolean notSent, boolean connectionLost,
                            boolean tlsHandshakeFailed, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.unreachable = unreachable;
        this.notSent = notSent;
        this.connectionLost = connectionLost;
        this.tlsHandshakeFailed = tlsHandshakeFailed;
    }

    /** A call whose connection failed in its TLS handshake: unreachable, as every connection failure is. */
    static MasterException tlsHandshake(String message, Throwable cause) {
        return new MasterException(ErrorCode.INTERNAL_ERROR, message, true, false, false, true, cause);
    }

    /**
     * The failure of a call sent more than once, whose earlier attempt may have reached the master (its connection was
     * lost after the request went out) and whose later attempts ended in {@code last}: whatever they met, the call may
     * have acted, so its outcome is unknown ({@link #outcomeUnknown()}), never "not sent". Keeps the last failure's code;
     * the message tells both.
     */
    public static MasterException earlierAttemptMayHaveLanded(MasterException earlier, MasterException last) {
        return earlierAttemptMayHaveLanded(last.code(), earlierAttemptMessage(earlier.getMessage(), last.getMessage()), last);
    }

    /** How a call whose {@code earlier} attempt may have landed and whose {@code last} one got no answer is told. */
    static String earlierAttemptMessage(String earlier, String last) {
        return "an earlier attempt may have reached the master before its connection was lost (" + earlier
                + "), so the call may have acted; the last attempt: " + last;
    }

    /** As {@link #earlierAttemptMayHaveLanded(MasterException, MasterException)}, told with {@code message}. */
    static MasterException earlierAttemptMayHaveLanded(ErrorCode code, String message, Throwable cause) {
        return new MasterException(code, message, true, false, true, false, cause);
    }

    /** This failure told with {@code message} for the caller's context: the same code and flags, this as its cause. */
    public MasterException withMessage(String message) {
        return new MasterException(code, message, unreachable, notSent, connectionLost, tlsHandshakeFailed, this);
    }

    public ErrorCode code() {
        return code;
    }

    /** True when the master could not be reached at all (not running, wrong address, network). */
    public boolean unreachable() {
        return unreachable;
    }

    /** True when the request was never sent (no connection to the master could be made): the call changed nothing and may be tried again. */
    public boolean notSent() {
        return notSent;
    }

    /**
     * True when the connection failed under the call after the request may have gone out: the master may have acted on
     * it, and a call that acts once however often it is sent (a notify) may be sent again.
     */
    public boolean connectionLost() {
        return connectionLost;
    }

    /**
     * True when the TLS handshake with the master failed (its certificate or this client's was not accepted): a setting to
     * fix, not a master to wait for. A failure that only mentions TLS, or a plaintext connection the master closed, is not
     * one: that master may simply be going away.
     */
    public boolean tlsHandshakeFailed() {
        return tlsHandshakeFailed;
    }

    /**
     * True when the master may or may not have acted on the call: it stopped answering (the call's deadline passed) or the
     * connection was lost after the request went out.
     */
    public boolean outcomeUnknown() {
        return unreachable && !notSent;
    }
}
