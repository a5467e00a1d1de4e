package io.mcctl.master.server;

import static io.mcctl.master.server.CallOutcomes.orThrow;
import static io.mcctl.master.server.CallOutcomes.reply;

import io.grpc.stub.StreamObserver;
import io.mcctl.master.dram.Promoter;
import io.mcctl.master.proto.v1.ClientStatus;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.ListClientsRequest;
import io.mcctl.master.proto.v1.ListClientsResponse;
import io.mcctl.master.proto.v1.ListPromotionsRequest;
import io.mcctl.master.proto.v1.ListPromotionsResponse;
import io.mcctl.master.proto.v1.NotifyPromotionFailureRequest;
import io.mcctl.master.proto.v1.NotifyPromotionFailureResponse;
import io.mcctl.master.proto.v1.NotifyPromotionSuccessRequest;
import io.mcctl.master.proto.v1.NotifyPromotionSuccessResponse;
import io.mcctl.master.proto.v1.PingRequest;
import io.mcctl.master.proto.v1.PingResponse;
import io.mcctl.master.proto.v1.PromoteRequest;
import io.mcctl.master.proto.v1.PromoteResponse;
import io.mcctl.master.proto.v1.PromotionObjectHeartbeatRequest;
import io.mcctl.master.proto.v1.PromotionObjectHeartbeatResponse;
import io.mcctl.master.proto.v1.PromotionTask;
import io.mcctl.master.proto.v1.PutEndRequest;
import io.mcctl.master.proto.v1.PutEndResponse;
import io.mcctl.master.proto.v1.PutRevokeRequest;
import io.mcctl.master.proto.v1.PutRevokeResponse;
import io.mcctl.master.proto.v1.PutStartRequest;
import io.mcctl.master.proto.v1.PutStartResponse;
import io.mcctl.master.proto.v1.RegisterClientRequest;
import io.mcctl.master.proto.v1.RegisterClientResponse;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.master.service.PageService;
import java.util.List;

/**
 * The RPCs of nodes and the DRAM tier: registration and pings, the owner-coupled LOCAL_DISK and MEMORY puts
 * ({@link ClientRegistry}), and promotion into nodes' DRAM segments ({@link Promoter}). Both are null until
 * {@link #serve}; the other RPC classes read them here too, and a master without them answers the RPCs of this class
 * with INTERNAL_ERROR.
 *
 * <p>Thread-safe: both are volatile, set once; nothing here takes a lock.
 */
final class NodeRpcs {

    private final PageService pages;
    private final DescriptorCodec codec;
    private final DurableAnswers answers;
    /** Nodes and their owner-coupled replicas; null until {@link #serve} (then node RPCs are answered). */
    private volatile ClientRegistry clients;
    /** Promotion into the DRAM tier; null until {@link #serve}. */
    private volatile Promoter promoter;

    NodeRpcs(PageService pages, DescriptorCodec codec, DurableAnswers answers) {
        this.pages = pages;
        this.codec = codec;
        this.answers = answers;
    }

    /** See {@link MasterGrpcService#serveClients}. */
    void serve(ClientRegistry registry) {
        Promoter promoting = new Promoter(pages, registry, registry.memory(), Promoter.DEFAULT_HOLD_LIMIT, codec::toWire);
        registry.closeWith(promoting);
        this.promoter = promoting;
        this.clients = registry;
    }

    /** The node registry, or null when this master serves none. */
    ClientRegistry registryOrNull() {
        return clients;
    }

    /** The promoter, or null when this master serves no DRAM tier. */
    Promoter promoterOrNull() {
        return promoter;
    }

    // ---- nodes and the owner-coupled LOCAL_DISK path (ClientRegistry) ----

    private ClientRegistry clients() {
        ClientRegistry registry = clients;
        if (registry == null) {
            throw WireErrors.exception(ErrorCode.INTERNAL_ERROR, "this master serves no node registry");
        }
        return registry;
    }

    void registerClient(RegisterClientRequest request, StreamObserver<RegisterClientResponse> observer) {
        orThrow(clients().register(request.getClientId(), request.getTransportEndpoint(), request.getLocalDiskDir(), request.getPageMode(),
                request.getMemoryBytes()));
        reply(observer, RegisterClientResponse.newBuilder().setTtlMs(clients().ttl().toMillis()).build());
    }

    void ping(PingRequest request, StreamObserver<PingResponse> observer) {
        boolean known = clients().ping(request.getClientId());
        reply(observer, PingResponse.newBuilder().setTtlMs(clients().ttl().toMillis())
                .setClientStatus(known ? ClientStatus.CLIENT_OK : ClientStatus.NEED_REGISTER)
                .build());
    }

    void putStart(PutStartRequest request, StreamObserver<PutStartResponse> observer) {
        if (request.getReplicaType() == ReplicaType.MEMORY && pages.peek(request.getTenantId(), request.getKey()).isOk()) {
            throw WireErrors.exception(ErrorCode.OBJECT_ALREADY_EXISTS, "key " + Quoted.of(request.getKey()) + " of tenant " + request.getTenantId()
                    + " has a DISTRIBUTED_DISK object: a MEMORY copy of it comes by promotion (mcctl promote), not by PutStart");
        }
        Replica started = orThrow(clients().putStart(request.getClientId(), request.getTenantId(), request.getKey(), request.getSize(),
                request.getReplicaType()));
        reply(observer, PutStartResponse.newBuilder().setReplica(started).build());
    }

    void putEnd(PutEndRequest request, StreamObserver<PutEndResponse> observer) {
        orThrow(clients().putEnd(request.getClientId(), request.getTenantId(), request.getKey(), request.getReplicaType(), request.getCrc32C()));
        reply(observer, PutEndResponse.getDefaultInstance());
    }

    void putRevoke(PutRevokeRequest request, StreamObserver<PutRevokeResponse> observer) {
        orThrow(clients().putRevoke(request.getClientId(), request.getTenantId(), request.getKey(), request.getReplicaType()));
        reply(observer, PutRevokeResponse.getDefaultInstance());
    }

    void listClients(ListClientsRequest request, StreamObserver<ListClientsResponse> observer) {
        reply(observer, ListClientsResponse.newBuilder().addAllClients(clients().list())
                .setTtlMs(clients().ttl().toMillis()).build());
    }

    // ---- the DRAM tier: promotion (Promoter) ----

    private Promoter promoter() {
        Promoter promoting = promoter;
        if (promoting == null) {
            throw WireErrors.exception(ErrorCode.INTERNAL_ERROR, "this master serves no DRAM tier");
        }
        return promoting;
    }

    void promotionObjectHeartbeat(PromotionObjectHeartbeatRequest request, StreamObserver<PromotionObjectHeartbeatResponse> observer) {
        List<PromotionTask> taken = orThrow(promoter().heartbeat(request.getClientId(), request.getMaxTasks()));
        reply(observer, PromotionObjectHeartbeatResponse.newBuilder().addAllTasks(taken).build());
    }

    void notifyPromotionSuccess(NotifyPromotionSuccessRequest request, StreamObserver<NotifyPromotionSuccessResponse> observer) {
        Replica complete = orThrow(promoter().succeeded(request.getClientId(), request.getTenantId(), request.getKey(), request.getCrc32C()));
        answers.replyWhenDurable(observer, NotifyPromotionSuccessResponse.newBuilder().setReplica(complete).build());
    }

    void notifyPromotionFailure(NotifyPromotionFailureRequest request, StreamObserver<NotifyPromotionFailureResponse> observer) {
        orThrow(promoter().failed(request.getClientId(), request.getTenantId(), request.getKey(), request.getReason()));
        answers.replyWhenDurable(observer, NotifyPromotionFailureResponse.getDefaultInstance());
    }

    void listPromotions(ListPromotionsRequest request, StreamObserver<ListPromotionsResponse> observer) {
        Promoter promoting = promoter();
        long[] inDram = promoting.memoryTotals();
        reply(observer, ListPromotionsResponse.newBuilder().addAllTasks(promoting.list())
                .setAdmissionReads(promoting.admissionReads()).setQueuedTotal(pages.promotions().queuedTotal())
                .setSucceededTotal(pages.promotions().succeededTotal()).setFailedTotal(pages.promotions().failedTotal())
                .setMemoryObjects(inDram[0]).setMemoryBytes(inDram[1]).setMemoryEvictedTotal(promoting.memoryEvictedTotal()).build());
    }

    void promote(PromoteRequest request, StreamObserver<PromoteResponse> observer) {
        PromotionTask task = orThrow(promoter().promote(request.getTenantId(), request.getKey()));
        answers.replyWhenDurable(observer, PromoteResponse.newBuilder().setTask(task).build());
    }
}
