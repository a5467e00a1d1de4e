package io.mcctl.storage.io.usrbio;

import java.io.IOException;

/** USRBIO cannot be used here; the message is one line naming which requirement is missing. */
public final class UsrbioUnavailableException extends IOException {

    private static final long serialVersionUID = 1L;

    /** What is missing. */
    public enum Missing {
        /** The library does not load (not found, or not a loadable library). */
        LIBRARY,
        /** The library loads but lacks a function mcctl calls. */
        SYMBOL,
        /** The path is not on a 3FS mount. */
        MOUNT,
        /** The library refused to create shared memory or a ring. */
        RING
    }

    private final Missing missing;

    public UsrbioUnavailableException(Missing missing, String message) {
        super(message);
        this.missing = missing;
    }

    public Missing missing() {
        return missing;
    }
}
