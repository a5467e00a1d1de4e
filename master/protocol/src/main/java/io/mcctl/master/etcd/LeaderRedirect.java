package io.mcctl.master.etcd;

import io.grpc.Metadata;

/**
 * The wire contract of a standby's refusal: gRPC UNAVAILABLE with the trailer {@code mcctl-leader}, whose value is
 * the leader's address, or empty when no leader is known (then a client asks etcd). The trailer is on every refusal
 * of a master that does not lead, and only there: the master did nothing with the call, so any call, a mutation
 * too, may be sent again to the leader.
 */
public final class LeaderRedirect {

    public static final Metadata.Key<String> LEADER = Metadata.Key.of("mcctl-leader", Metadata.ASCII_STRING_MARSHALLER);

    private LeaderRedirect() {
    }

    /** A refusal's trailers naming {@code leader} ("" when none is known). */
    public static Metadata trailers(String leader) {
        Metadata trailers = new Metadata();
        trailers.put(LEADER, leader);
        return trailers;
    }

    /** The leader named by a refusal's trailers, or null. */
    public static String leaderOf(Metadata trailers) {
        return trailers == null ? null : trailers.get(LEADER);
    }
}
