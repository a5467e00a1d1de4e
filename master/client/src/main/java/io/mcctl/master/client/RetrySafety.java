package io.mcctl.master.client;

import io.grpc.MethodDescriptor;
import io.mcctl.master.proto.v1.BatchFreeDistributedPageRequest;
import io.mcctl.master.proto.v1.CheckPagesRequest;
import io.mcctl.master.proto.v1.FreeDistributedPageRequest;

/**
 * Which master calls a client may send again when it cannot know whether the first attempt acted: the connection
 * closed while the call was out (a leader killed under it), or a leader answered that the outcome is unknown (its
 * lease lapsed after it logged the change). A call that was certainly not acted on (no connection was made, or a
 * standby refused it) may always be sent again; this class is about the other case. docs/ha.md gives the reasons.
 *
 * <ul>
 * <li>Lookups: they change nothing.</li>
 * <li>Notify: the master answers OK to a notify whose descriptor is already committed for the key, so a second
 *     notify of the same descriptor commits nothing twice.</li>
 * <li>Free with a descriptor for every key, and renew (which always carries one): they act only on the allocation
 *     of that very descriptor, never on a newer one; a retried free of an allocation the first attempt freed
 *     answers OBJECT_NOT_FOUND for that key, which its caller (a writer giving its pages up) takes as done.</li>
 * <li>Not retried: allocations (the first may hold a page run until its deadline; a second would either fail on
 *     the first's in-flight allocation or, with overwrite, take a second run, and the caller could not tell which
 *     descriptor is live), a free without descriptor and removes (they act on the key, so a retry could free or
 *     remove the object another node stored under the key in between), dropping an in-flight allocation, quotas,
 *     snapshots, a page check with repair, and any call this class does not know.</li>
 * </ul>
 */
final class RetrySafety {

    private RetrySafety() {
    }

    static boolean resendableWithUnknownOutcome(MethodDescriptor<?, ?> method, Object request) {
        String name = method.getBareMethodName();
        if (name == null) {
            return false;
        }
        return switch (name) {
            case "GetDistributedPageMapping", "BatchGetDistributedPageMapping", "ExistKey", "BatchExistKey", "GetReplicaList", "ListKeys",
                 "GetLayout", "GetStats", "GetBucketBitmap", "GetMasterStatus", "NotifyDistributedDiskSuccess",
                 "RenewDistributedPageAllocation" -> true;
            case "FreeDistributedPage" -> request instanceof FreeDistributedPageRequest free && free.hasDistributedDisk();
            case "BatchFreeDistributedPage" -> request instanceof BatchFreeDistributedPageRequest free
                    && free.getDescriptorsCount() == free.getKeysCount();
            case "CheckPages" -> request instanceof CheckPagesRequest check && !check.getRepair();
            default -> false;
        };
    }
}
