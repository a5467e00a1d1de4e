package io.mcctl.master.protocol;

import io.mcctl.master.proto.v1.SessionRequest;

/**
 * How much one call may carry, which the master enforces and the client sizes its batches and Session bundles by:
 * both must count the same way, or the client's batches would be refused.
 */
public final class BatchLimits {

    /** Most keys one batch call may carry. */
    public static final int MAX_BATCH = 10_000;

    private BatchLimits() {
    }

    /** The keys a Session request carries; 0 for a bundle (its requests carry them) and for one that carries nothing. */
    public static int keysOf(SessionRequest request) {
        return switch (request.getRequestCase()) {
            case ALLOCATE -> request.getAllocate().getKeysCount();
            case NOTIFY -> request.getNotify().getKeysCount();
            case LOOKUP -> request.getLookup().getKeysCount();
            case FREE -> request.getFree().getKeysCount();
            case REMOVE -> request.getRemove().getKeysCount();
            case BUNDLE, REQUEST_NOT_SET -> 0;
        };
    }
}
