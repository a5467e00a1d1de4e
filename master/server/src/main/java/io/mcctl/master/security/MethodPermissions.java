package io.mcctl.master.security;

import io.mcctl.master.proto.v1.AllocateDistributedPageRequest;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageRequest;
import io.mcctl.master.proto.v1.BatchExistKeyRequest;
import io.mcctl.master.proto.v1.BatchFreeDistributedPageRequest;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.BatchRemoveRequest;
import io.mcctl.master.proto.v1.CheckPagesRequest;
import io.mcctl.master.proto.v1.ExistKeyRequest;
import io.mcctl.master.proto.v1.FreeDistributedPageRequest;
import io.mcctl.master.proto.v1.GetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.GetReplicaListRequest;
import io.mcctl.master.proto.v1.ListKeysRequest;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessRequest;
import io.mcctl.master.proto.v1.RemoveRequest;
import io.mcctl.master.proto.v1.SessionRequest;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Which permission each RPC of MasterService needs, and which tenants a request names. An RPC missing from
 * this table needs {@link Permission#ADMIN} and names no tenant, so a new RPC is admin-only until it is
 * declared here (a test fails while any RPC of the service is missing).
 */
public final class MethodPermissions {

    /**
     * What one RPC needs: a permission (which may depend on the request) and the tenants the request names;
     * {@code admin}: whether it may need monitor or admin, so an allowed call is audited.
     */
    public record Rule(Function<Object, Permission> permission, Function<Object, List<String>> tenants, boolean admin) {
        public Permission permissionFor(Object request) {
            return permission.apply(request);
        }

        public List<String> tenantsOf(Object request) {
            return tenants.apply(request);
        }
    }

    /** The batched stream, whose requests are checked one by one, each by the rule of its unary twin. */
    public static final String SESSION = "Session";

    private static final Rule UNDECLARED = fixed(Permission.ADMIN);

    private static final Map<String, Rule> RULES = Map.ofEntries(
            tenants("AllocateDistributedPage", Permission.TENANT_WRITE, AllocateDistributedPageRequest.class, r -> List.of(r.getTenantId())),
            tenants("BatchAllocateDistributedPage", Permission.TENANT_WRITE, BatchAllocateDistributedPageRequest.class,
                    BatchAllocateDistributedPageRequest::getTenantIdsList),
            tenants("FreeDistributedPage", Permission.TENANT_WRITE, FreeDistributedPageRequest.class, r -> List.of(r.getTenantId())),
            tenants("BatchFreeDistributedPage", Permission.TENANT_WRITE, BatchFreeDistributedPageRequest.class,
                    BatchFreeDistributedPageRequest::getTenantIdsList),
            tenants("NotifyDistributedDiskSuccess", Permission.TENANT_WRITE, NotifyDistributedDiskSuccessRequest.class,
                    NotifyDistributedDiskSuccessRequest::getTenantIdsList),
            tenants("Remove", Permission.TENANT_WRITE, RemoveRequest.class, r -> List.of(r.getTenantId())),
            tenants("BatchRemove", Permission.TENANT_WRITE, BatchRemoveRequest.class, BatchRemoveRequest::getTenantIdsList),
            tenants("RenewDistributedPageAllocation", Permission.TENANT_WRITE, io.mcctl.master.proto.v1.RenewDistributedPageAllocationRequest.class,
                    io.mcctl.master.proto.v1.RenewDistributedPageAllocationRequest::getTenantIdsList),
            // A quota decides what a tenant keeps: admin only, on the tenant it names.
            tenants("SetTenantQuota", Permission.ADMIN, io.mcctl.master.proto.v1.SetTenantQuotaRequest.class, r -> List.of(r.getTenantId())),
            // Dropping another writer's allocation can hurt whoever is writing it: admin only, on the tenants it names.
            tenants("DropInFlightAllocation", Permission.ADMIN, io.mcctl.master.proto.v1.DropInFlightAllocationRequest.class,
                    r -> List.of(r.getTenantId())),
            tenants("GetDistributedPageMapping", Permission.TENANT_READ, GetDistributedPageMappingRequest.class, r -> List.of(r.getTenantId())),
            tenants("BatchGetDistributedPageMapping", Permission.TENANT_READ, BatchGetDistributedPageMappingRequest.class,
                    BatchGetDistributedPageMappingRequest::getTenantIdsList),
            tenants("ExistKey", Permission.TENANT_READ, ExistKeyRequest.class, r -> List.of(r.getTenantId())),
            tenants("BatchExistKey", Permission.TENANT_READ, BatchExistKeyRequest.class, BatchExistKeyRequest::getTenantIdsList),
            tenants("GetReplicaList", Permission.TENANT_READ, GetReplicaListRequest.class, r -> List.of(r.getTenantId())),
            tenants("ListKeys", Permission.TENANT_READ, ListKeysRequest.class, r -> List.of(r.getTenantId())),
            // Any known caller may open the stream; each request it carries is checked, one by one, by its unary twin's rule
            // (SESSION_TWINS), so a stream can do nothing its caller could not do with the unary calls.
            Map.entry(SESSION, fixed(Permission.CLUSTER_READ)),
            // Nodes: registering, pinging and listing concern the cluster, not a tenant's keys; a node's own replicas are
            // its tenants' writes. NodeService (a node's endpoint) has the same names' rules.
            Map.entry("RegisterClient", fixed(Permission.CLUSTER_READ)),
            Map.entry("Ping", fixed(Permission.CLUSTER_READ)),
            Map.entry("ListClients", fixed(Permission.CLUSTER_READ)),
            tenants("PutStart", Permission.TENANT_WRITE, io.mcctl.master.proto.v1.PutStartRequest.class, r -> List.of(r.getTenantId())),
            tenants("PutEnd", Permission.TENANT_WRITE, io.mcctl.master.proto.v1.PutEndRequest.class, r -> List.of(r.getTenantId())),
            tenants("PutRevoke", Permission.TENANT_WRITE, io.mcctl.master.proto.v1.PutRevokeRequest.class, r -> List.of(r.getTenantId())),
            tenants("ReadLocalObject", Permission.TENANT_READ, io.mcctl.master.proto.v1.ReadLocalObjectRequest.class, r -> List.of(r.getTenantId())),
            tenants("WriteObject", Permission.TENANT_WRITE, io.mcctl.master.proto.v1.WriteObjectChunk.class,
                    r -> r.hasHeader() ? List.of(r.getHeader().getTenantId()) : List.of()),
            tenants("GetObject", Permission.TENANT_READ, io.mcctl.master.proto.v1.GetObjectRequest.class, r -> List.of(r.getTenantId())),
            // Promotion: a task names any tenant's object and where its pages are, so taking and finishing tasks is for nodes
            // trusted with every tenant (an admin token); listing them shows every tenant's keys. A tenant may queue its own.
            Map.entry("PromotionObjectHeartbeat", fixed(Permission.ADMIN)),
            Map.entry("NotifyPromotionSuccess", fixed(Permission.ADMIN)),
            Map.entry("NotifyPromotionFailure", fixed(Permission.ADMIN)),
            Map.entry("ListPromotions", fixed(Permission.MONITOR)),
            tenants("Promote", Permission.TENANT_WRITE, io.mcctl.master.proto.v1.PromoteRequest.class, r -> List.of(r.getTenantId())),
            Map.entry("GetLayout", fixed(Permission.CLUSTER_READ)),
            Map.entry("GetStats", fixed(Permission.CLUSTER_READ)),
            Map.entry("GetMasterStatus", fixed(Permission.CLUSTER_READ)),
            Map.entry("GetBucketBitmap", fixed(Permission.MONITOR)),
            Map.entry("CreateSnapshot", fixed(Permission.ADMIN)),
            // Extends every bucket file of the cluster.
            Map.entry("GrowLayout", fixed(Permission.ADMIN)),
            // A check that repairs changes every tenant's page state; one that only looks reads it.
            Map.entry("CheckPages", new Rule(r -> ((CheckPagesRequest) r).getRepair() ? Permission.ADMIN : Permission.MONITOR,
                    r -> List.of(), true)));

    /** The unary twin of each request kind the Session stream carries. */
    private static final Map<SessionRequest.RequestCase, String> SESSION_TWINS = Map.of(
            SessionRequest.RequestCase.ALLOCATE, "BatchAllocateDistributedPage",
            SessionRequest.RequestCase.NOTIFY, "NotifyDistributedDiskSuccess",
            SessionRequest.RequestCase.LOOKUP, "BatchGetDistributedPageMapping",
            SessionRequest.RequestCase.FREE, "BatchFreeDistributedPage",
            SessionRequest.RequestCase.REMOVE, "BatchRemove");

    private MethodPermissions() {
    }

    /** The unary RPC whose rule checks a Session request of this kind, or null for a request that carries none. */
    public static String sessionTwin(SessionRequest.RequestCase kind) {
        return SESSION_TWINS.get(kind);
    }

    /** The unary request a Session request carries (the message its twin's rule reads), or null when it carries none. */
    public static Object sessionInner(SessionRequest request) {
        return switch (request.getRequestCase()) {
            case ALLOCATE -> request.getAllocate();
            case NOTIFY -> request.getNotify();
            case LOOKUP -> request.getLookup();
            case FREE -> request.getFree();
            case REMOVE -> request.getRemove();
            case BUNDLE, REQUEST_NOT_SET -> null; // a bundle's requests are each checked by their own kinds
        };
    }

    /** The rule of the RPC named {@code bareMethodName}; an undeclared one is admin-only. */
    public static Rule ruleOf(String bareMethodName) {
        return RULES.getOrDefault(bareMethodName, UNDECLARED);
    }

    /** Whether {@code bareMethodName} has a rule of its own. */
    public static boolean declared(String bareMethodName) {
        return RULES.containsKey(bareMethodName);
    }

    private static Rule fixed(Permission permission) {
        return new Rule(r -> permission, r -> List.of(), permission == Permission.ADMIN || permission == Permission.MONITOR);
    }

    private static <T> Map.Entry<String, Rule> tenants(String method, Permission permission, Class<T> type, Function<T, List<String>> tenants) {
        return Map.entry(method, new Rule(r -> permission, r -> tenants.apply(type.cast(r)), false));
    }
}
