package io.mcctl.master.node;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.mcctl.master.protocol.WireErrors;

/** A call to a node's endpoint failed: one line for people, and the gRPC status code. */
public final class NodeException extends RuntimeException {

    private final Status.Code code;

    public NodeException(Status.Code code, String message) {
        super(message);
        this.code = code;
    }

    public Status.Code code() {
        return code;
    }

    /** Whether the node could not be reached at all (gone, or not listening). */
    public boolean unreachable() {
        return code == Status.Code.UNAVAILABLE || code == Status.Code.DEADLINE_EXCEEDED;
    }

    static NodeException of(String endpoint, StatusRuntimeException e) {
        Status.Code code = e.getStatus().getCode();
        if (code == Status.Code.UNAVAILABLE) {
            Throwable root = e;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            String reason = root != e && root.getMessage() != null ? root.getMessage() : String.valueOf(e.getStatus().getDescription());
            return new NodeException(code, "cannot reach the node at " + endpoint + ": " + reason);
        }
        if (code == Status.Code.DEADLINE_EXCEEDED) {
            return new NodeException(code, "the node at " + endpoint + " did not answer in time");
        }
        return new NodeException(code, WireErrors.messageOf(e));
    }
}
