package io.mcctl.master.etcd;

import io.grpc.Metadata;

/**
 * The wire contract of a standby's refusal: gRPC UNAVAILABLE with the leader's address in the trailer
 * {@code mcctl-leader} (absent when no leader is known). The standby did nothing with the call, so any call,
 * a mutation too, may be sent again to the leader.
 */
public final class LeaderRedirect {

    public static final Metadata.Key<String> LEADER = Metadata.Key.of("mcctl-leader", Metadata.ASCII_STRING_MARSHALLER);

    private LeaderRedirect() {
    }

    /** The leader named by a refusal's trailers, or null. */
    public static String leaderOf(Metadata trailers) {
        return trailers == null ? null : trailers.get(LEADER);
    }
}
