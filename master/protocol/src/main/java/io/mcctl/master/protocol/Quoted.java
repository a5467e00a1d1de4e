package io.mcctl.master.protocol;

/**
 * A value a caller sent (a key, a page token, a client id, a path), quoted for a message: whole when it is short, else
 * its beginning and its length, as in {@code 'ééé…' (4096 bytes)}. A failed call's message travels in a gRPC trailer,
 * percent-encoded (a non-ASCII character takes up to 12 bytes there), and a trailer past the client's header limit
 * (8 KiB in grpc-java) turns the answer into a protocol error: a key of the allowed 4,096 bytes must never be quoted
 * whole. Only messages are shortened; whatever is matched or stored keeps the whole value.
 */
public final class Quoted {

    /** Values up to this many characters are quoted whole. */
    static final int WHOLE_UP_TO = 80;
    /** The characters a longer value keeps. */
    static final int SHOWN = 64;

    private Quoted() {
    }

    /** {@code 'value'}, or its first {@value #SHOWN} characters, an ellipsis and its length in UTF-8 bytes. */
    public static String of(String value) {
        if (value == null) {
            return "''";
        }
        return value.length() <= WHOLE_UP_TO ? "'" + value + "'" : "'" + start(value) + "…' (" + KeyRules.utf8Length(value) + " bytes)";
    }

    /**
     * {@code value} without quotes when short, as command output prints a key at the head of its line; else its first
     * {@value #SHOWN} characters, an ellipsis and its length in UTF-8 bytes.
     */
    public static String shortened(String value) {
        return value.length() <= WHOLE_UP_TO ? value : start(value) + "… (" + KeyRules.utf8Length(value) + " bytes)";
    }

    private static String start(String value) {
        return value.substring(0, Character.isHighSurrogate(value.charAt(SHOWN - 1)) ? SHOWN - 1 : SHOWN); // never half a character
    }
}
