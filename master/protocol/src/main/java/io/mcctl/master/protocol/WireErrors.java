package io.mcctl.master.protocol;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.mcctl.master.proto.v1.ErrorCode;

/** Mooncake error codes on the wire: a gRPC status, the code's name in a trailer, and "NAME: message" as the description. */
public final class WireErrors {

    /** Trailer that carries the Mooncake ErrorCode name of a failed call. */
    public static final Metadata.Key<String> ERROR_CODE_KEY = Metadata.Key.of("mooncake-error-code", Metadata.ASCII_STRING_MARSHALLER);
    /** Trailer set on UNAVAILABLE when the master answered but takes no changes (its log failed): reachable, not usable. */
    public static final Metadata.Key<String> CHANGES_REFUSED_KEY = Metadata.Key.of("mcctl-changes-refused", Metadata.ASCII_STRING_MARSHALLER);

    /**
     * Trailer set on every refusal made before a method runs (a master still recovering its state, a standby): the call
     * was not served, so it is safe to send again, mutations included.
     */
    public static final Metadata.Key<String> NOT_SERVED_KEY = Metadata.Key.of("mcctl-not-served", Metadata.ASCII_STRING_MARSHALLER);

    /** Whether a failure is a refusal made before any method ran ({@link #NOT_SERVED_KEY}). */
    public static boolean isNotServed(StatusRuntimeException e) {
        return e.getTrailers() != null && e.getTrailers().containsKey(NOT_SERVED_KEY);
    }

    /** A mutation refused because the master takes no changes. */
    public static StatusRuntimeException changesRefused(String message) {
        Metadata trailers = new Metadata();
        trailers.put(CHANGES_REFUSED_KEY, "true");
        return io.grpc.Status.UNAVAILABLE.withDescription(bounded(message)).asRuntimeException(trailers);
    }

    /** Whether a failure is the master's own refusal of changes, rather than a connection that could not be made. */
    public static boolean isChangesRefused(StatusRuntimeException e) {
        return e.getTrailers() != null && e.getTrailers().containsKey(CHANGES_REFUSED_KEY);
    }

    private WireErrors() {
    }

    public static Status.Code statusOf(ErrorCode code) {
        return switch (code) {
            case OK -> Status.Code.OK;
            case INVALID_PARAMS -> Status.Code.INVALID_ARGUMENT;
            case OBJECT_NOT_FOUND -> Status.Code.NOT_FOUND;
            case NO_AVAILABLE_HANDLE -> Status.Code.RESOURCE_EXHAUSTED;
            case REPLICA_IS_NOT_READY -> Status.Code.FAILED_PRECONDITION;
            case OBJECT_ALREADY_EXISTS -> Status.Code.ALREADY_EXISTS;
            case INTERNAL_ERROR, UNRECOGNIZED -> Status.Code.INTERNAL;
        };
    }

    public static StatusRuntimeException exception(ErrorCode code, String message) {
        Metadata trailers = new Metadata();
        trailers.put(ERROR_CODE_KEY, code.name());
        return Status.fromCode(statusOf(code)).withDescription(bounded(code.name() + ": " + message)).asRuntimeException(trailers);
    }

    /**
     * Bytes a status description may take in its trailer, percent-encoded as gRPC sends it: far below the 8 KiB of
     * headers a grpc-java client accepts (and the HTTP/2 header list it lives in), so that no message, however much of
     * a caller's input it quotes, turns an answer into a protocol error. Messages quote values through
     * {@link io.mcctl.master.protocol.Quoted}; this is the bound for what they do not foresee.
     */
    public static final int MAX_DESCRIPTION_BYTES = 2048;

    /** {@code description} cut to {@link #MAX_DESCRIPTION_BYTES} as sent, saying how long it was; unchanged when it fits. */
    public static String bounded(String description) {
        int budget = MAX_DESCRIPTION_BYTES - 64; // room for the note on the cut
        int sent = 0;
        for (int i = 0; i < description.length(); ) {
            int c = description.codePointAt(i);
            // gRPC sends printable ASCII but '%' as it is, every other byte of the UTF-8 encoding as %XX
            sent += c >= 0x20 && c < 0x7f && c != '%' ? 1 : 3 * (c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4);
            if (sent > budget) {
                return description.substring(0, i) + "… (message of " + description.length() + " characters shortened)";
            }
            i += Character.charCount(c);
        }
        return description;
    }

    /** The Mooncake code a failed call carried, or the nearest one for a status that came without it. */
    public static ErrorCode codeOf(StatusRuntimeException e) {
        Metadata trailers = e.getTrailers();
        String name = trailers == null ? null : trailers.get(ERROR_CODE_KEY);
        if (name != null) {
            try {
                return ErrorCode.valueOf(name);
            } catch (IllegalArgumentException ignored) {
                // a newer master's code: fall through to the status
            }
        }
        return switch (e.getStatus().getCode()) {
            case INVALID_ARGUMENT -> ErrorCode.INVALID_PARAMS;
            case NOT_FOUND -> ErrorCode.OBJECT_NOT_FOUND;
            case RESOURCE_EXHAUSTED -> ErrorCode.NO_AVAILABLE_HANDLE;
            case FAILED_PRECONDITION -> ErrorCode.REPLICA_IS_NOT_READY;
            case ALREADY_EXISTS -> ErrorCode.OBJECT_ALREADY_EXISTS;
            default -> ErrorCode.INTERNAL_ERROR;
        };
    }

    /** The message without the "NAME: " prefix. */
    public static String messageOf(StatusRuntimeException e) {
        String description = e.getStatus().getDescription();
        if (description == null) {
            return e.getStatus().getCode().name();
        }
        int colon = description.indexOf(": ");
        return colon > 0 && description.substring(0, colon).chars().allMatch(c -> c == '_' || Character.isUpperCase(c))
                ? description.substring(colon + 2) : description;
    }
}
