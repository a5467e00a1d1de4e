package io.mcctl.master.server;

import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaStatus;
import io.mcctl.master.proto.v1.ReplicaType;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The order in which replicas are worth reading: MEMORY > NOF > DISTRIBUTED_DISK > LOCAL_DISK > DISK,
 * complete before processing. A direct pread of the shared file beats an RPC to the node that owns a
 * LOCAL_DISK copy.
 */
public final class ReplicaPriority {

    private ReplicaPriority() {
    }

    public static int rank(ReplicaType type) {
        return switch (type) {
            case MEMORY -> 0;
            case NOF -> 1;
            case DISTRIBUTED_DISK -> 2;
            case LOCAL_DISK -> 3;
            case DISK -> 4;
            case REPLICA_TYPE_UNSPECIFIED, UNRECOGNIZED -> 5;
        };
    }

    public static List<Replica> sortBestFirst(List<Replica> replicas) {
        List<Replica> sorted = new ArrayList<>(replicas);
        sorted.sort(Comparator.comparingInt((Replica r) -> r.getStatus() == ReplicaStatus.COMPLETE ? 0 : 1)
                .thenComparingInt(r -> rank(r.getType())));
        return sorted;
    }
}
