package io.mcctl.master.server;

import io.grpc.stub.StreamObserver;
import io.mcctl.master.durability.Snapshotter;
import io.mcctl.master.proto.v1.AllocateDistributedPageRequest;
import io.mcctl.master.proto.v1.AllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageRequest;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.BatchExistKeyRequest;
import io.mcctl.master.proto.v1.BatchExistKeyResponse;
import io.mcctl.master.proto.v1.BatchFreeDistributedPageRequest;
import io.mcctl.master.proto.v1.BatchFreeDistributedPageResponse;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.BatchRemoveRequest;
import io.mcctl.master.proto.v1.BatchRemoveResponse;
import io.mcctl.master.proto.v1.CheckPagesRequest;
import io.mcctl.master.proto.v1.CheckPagesResponse;
import io.mcctl.master.proto.v1.CreateSnapshotRequest;
import io.mcctl.master.proto.v1.CreateSnapshotResponse;
import io.mcctl.master.proto.v1.DropInFlightAllocationRequest;
import io.mcctl.master.proto.v1.DropInFlightAllocationResponse;
import io.mcctl.master.proto.v1.ExistKeyRequest;
import io.mcctl.master.proto.v1.ExistKeyResponse;
import io.mcctl.master.proto.v1.FreeDistributedPageRequest;
import io.mcctl.master.proto.v1.FreeDistributedPageResponse;
import io.mcctl.master.proto.v1.GetBucketBitmapRequest;
import io.mcctl.master.proto.v1.GetBucketBitmapResponse;
import io.mcctl.master.proto.v1.GetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.GetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.GetLayoutRequest;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.master.proto.v1.GetReplicaListRequest;
import io.mcctl.master.proto.v1.GetReplicaListResponse;
import io.mcctl.master.proto.v1.GetStatsRequest;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.GrowLayoutRequest;
import io.mcctl.master.proto.v1.GrowLayoutResponse;
import io.mcctl.master.proto.v1.ListClientsRequest;
import io.mcctl.master.proto.v1.ListClientsResponse;
import io.mcctl.master.proto.v1.ListKeysRequest;
import io.mcctl.master.proto.v1.ListKeysResponse;
import io.mcctl.master.proto.v1.ListPromotionsRequest;
import io.mcctl.master.proto.v1.ListPromotionsResponse;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessRequest;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessResponse;
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
import io.mcctl.master.proto.v1.PutEndRequest;
import io.mcctl.master.proto.v1.PutEndResponse;
import io.mcctl.master.proto.v1.PutRevokeRequest;
import io.mcctl.master.proto.v1.PutRevokeResponse;
import io.mcctl.master.proto.v1.PutStartRequest;
import io.mcctl.master.proto.v1.PutStartResponse;
import io.mcctl.master.proto.v1.RegisterClientRequest;
import io.mcctl.master.proto.v1.RegisterClientResponse;
import io.mcctl.master.proto.v1.RemoveRequest;
import io.mcctl.master.proto.v1.RemoveResponse;
import io.mcctl.master.proto.v1.RenewDistributedPageAllocationRequest;
import io.mcctl.master.proto.v1.RenewDistributedPageAllocationResponse;
import io.mcctl.master.proto.v1.SessionRequest;
import io.mcctl.master.proto.v1.SessionResponse;
import io.mcctl.master.proto.v1.SetTenantQuotaRequest;
import io.mcctl.master.proto.v1.SetTenantQuotaResponse;
import io.mcctl.master.service.AnswerBarrier;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.LayoutFile;
import java.util.concurrent.CompletableFuture;

/**
 * The gRPC face of {@link PageService}: the one door of the master's contract, every RPC handed to the class that
 * serves its kind.
 * <ul>
 *   <li>{@link PageWriteRpcs}: allocate, notify, renew, free, drop and remove (the changes of an offload);</li>
 *   <li>{@link PageReadRpcs}: mapping lookups, existence, replica lists, key listings;</li>
 *   <li>{@link AdminRpcs}: layout, statistics, bitmaps, snapshots, quotas, the page check, layout growth;</li>
 *   <li>{@link NodeRpcs}: node registration, owner-coupled puts and promotion into the DRAM tier;</li>
 *   <li>{@link SessionRpcs}: the Session stream, over the batch operations of the first two.</li>
 * </ul>
 * They share {@link CallOutcomes} (batch checks, error mapping), {@link DescriptorCodec} (placements on the wire) and
 * {@link DurableAnswers} (when an answer may go out). A handler that throws a status exception closes its call with it.
 *
 * <p>Thread-safe: no lock is taken here or in the classes above; what is set after construction (transport loops,
 * node registry, metrics) is volatile.
 */
public final class MasterGrpcService extends MasterServiceGrpc.MasterServiceImplBase {

    /** When changes are durable. */
    @FunctionalInterface
    public interface Durability {
        /** Completes once every change up to {@code sequence} is durable ({@link AnswerBarrier#EVERYTHING}: all made so far). */
        CompletableFuture<Void> whenDurable(long sequence);
    }

    private final DurableAnswers answers;
    private final NodeRpcs nodes;
    private final PageWriteRpcs writes;
    private final PageReadRpcs reads;
    private final AdminRpcs admin;
    private final SessionRpcs sessions;

    public MasterGrpcService(PageService pages, LayoutFile.Record layoutRecord, String fsType, Durability durability, Snapshotter snapshotter) {
        DescriptorCodec codec = new DescriptorCodec(pages);
        this.answers = new DurableAnswers(durability);
        this.nodes = new NodeRpcs(pages, codec, answers);
        this.writes = new PageWriteRpcs(pages, codec, answers, nodes);
        this.reads = new PageReadRpcs(pages, codec, answers, nodes);
        this.admin = new AdminRpcs(pages, layoutRecord, fsType, snapshotter, new LayoutGrowth(pages, durability), answers, nodes);
        this.sessions = new SessionRpcs(writes, reads, answers);
    }

    /** Answers calls completed on other threads on {@code loops}, the ones the server runs them on. */
    public void answerOn(TransportLoops loops) {
        answers.answerOn(loops);
    }

    /**
     * Serves the node RPCs (RegisterClient, Ping, PutStart, PutEnd, PutRevoke, ListClients) from {@code registry}, and
     * promotion into its nodes' DRAM segments (as the page service was built to admit and queue them); the promoter stops
     * when the registry closes.
     */
    public void serveClients(ClientRegistry registry) {
        nodes.serve(registry);
    }

    /** Counts Session requests by kind and page checks in {@code metrics} ({@link MasterServer#intercepted}). */
    void useMetrics(MasterMetrics metrics) {
        admin.useMetrics(metrics);
        sessions.useMetrics(metrics);
    }

    /**
     * Bounds the answers Session streams hold for clients that do not take them: {@code perStream} bytes for one stream,
     * {@code total} for all ({@link MasterSettings#SESSION_BACKLOG}, {@link MasterSettings#SESSION_BACKLOG_TOTAL}).
     */
    public void limitSessions(long perStream, long total) {
        sessions.backlog.limit(perStream, total);
    }

    // ---- the page RPCs that change mappings ----

    @Override
    public void allocateDistributedPage(AllocateDistributedPageRequest request, StreamObserver<AllocateDistributedPageResponse> observer) {
        writes.allocateDistributedPage(request, observer);
    }

    @Override
    public void batchAllocateDistributedPage(BatchAllocateDistributedPageRequest request,
                                             StreamObserver<BatchAllocateDistributedPageResponse> observer) {
        writes.batchAllocateDistributedPage(request, observer);
    }

    @Override
    public void notifyDistributedDiskSuccess(NotifyDistributedDiskSuccessRequest request,
                                             StreamObserver<NotifyDistributedDiskSuccessResponse> observer) {
        writes.notifyDistributedDiskSuccess(request, observer);
    }

    @Override
    public void renewDistributedPageAllocation(RenewDistributedPageAllocationRequest request,
                                               StreamObserver<RenewDistributedPageAllocationResponse> observer) {
        writes.renewDistributedPageAllocation(request, observer);
    }

    @Override
    public void freeDistributedPage(FreeDistributedPageRequest request, StreamObserver<FreeDistributedPageResponse> observer) {
        writes.freeDistributedPage(request, observer);
    }

    @Override
    public void batchFreeDistributedPage(BatchFreeDistributedPageRequest request, StreamObserver<BatchFreeDistributedPageResponse> observer) {
        writes.batchFreeDistributedPage(request, observer);
    }

    @Override
    public void dropInFlightAllocation(DropInFlightAllocationRequest request, StreamObserver<DropInFlightAllocationResponse> observer) {
        writes.dropInFlightAllocation(request, observer);
    }

    @Override
    public void remove(RemoveRequest request, StreamObserver<RemoveResponse> observer) {
        writes.remove(request, observer);
    }

    @Override
    public void batchRemove(BatchRemoveRequest request, StreamObserver<BatchRemoveResponse> observer) {
        writes.batchRemove(request, observer);
    }

    // ---- the page RPCs that read ----

    @Override
    public void getDistributedPageMapping(GetDistributedPageMappingRequest request,
                                          StreamObserver<GetDistributedPageMappingResponse> observer) {
        reads.getDistributedPageMapping(request, observer);
    }

    @Override
    public void batchGetDistributedPageMapping(BatchGetDistributedPageMappingRequest request,
                                               StreamObserver<BatchGetDistributedPageMappingResponse> observer) {
        reads.batchGetDistributedPageMapping(request, observer);
    }

    @Override
    public void existKey(ExistKeyRequest request, StreamObserver<ExistKeyResponse> observer) {
        reads.existKey(request, observer);
    }

    @Override
    public void batchExistKey(BatchExistKeyRequest request, StreamObserver<BatchExistKeyResponse> observer) {
        reads.batchExistKey(request, observer);
    }

    @Override
    public void getReplicaList(GetReplicaListRequest request, StreamObserver<GetReplicaListResponse> observer) {
        reads.getReplicaList(request, observer);
    }

    @Override
    public void listKeys(ListKeysRequest request, StreamObserver<ListKeysResponse> observer) {
        reads.listKeys(request, observer);
    }

    // ---- the Session stream ----

    @Override
    public StreamObserver<SessionRequest> session(StreamObserver<SessionResponse> responses) {
        return sessions.session(responses);
    }

    // ---- the operators' RPCs ----

    @Override
    public void getLayout(GetLayoutRequest request, StreamObserver<GetLayoutResponse> observer) {
        admin.getLayout(request, observer);
    }

    @Override
    public void growLayout(GrowLayoutRequest request, StreamObserver<GrowLayoutResponse> observer) {
        admin.growLayout(request, observer);
    }

    @Override
    public void getStats(GetStatsRequest request, StreamObserver<GetStatsResponse> observer) {
        admin.getStats(request, observer);
    }

    @Override
    public void getBucketBitmap(GetBucketBitmapRequest request, StreamObserver<GetBucketBitmapResponse> observer) {
        admin.getBucketBitmap(request, observer);
    }

    @Override
    public void createSnapshot(CreateSnapshotRequest request, StreamObserver<CreateSnapshotResponse> observer) {
        admin.createSnapshot(request, observer);
    }

    @Override
    public void setTenantQuota(SetTenantQuotaRequest request, StreamObserver<SetTenantQuotaResponse> observer) {
        admin.setTenantQuota(request, observer);
    }

    @Override
    public void checkPages(CheckPagesRequest request, StreamObserver<CheckPagesResponse> observer) {
        admin.checkPages(request, observer);
    }

    // ---- nodes, owner-coupled puts and the DRAM tier ----

    @Override
    public void registerClient(RegisterClientRequest request, StreamObserver<RegisterClientResponse> observer) {
        nodes.registerClient(request, observer);
    }

    @Override
    public void ping(PingRequest request, StreamObserver<PingResponse> observer) {
        nodes.ping(request, observer);
    }

    @Override
    public void putStart(PutStartRequest request, StreamObserver<PutStartResponse> observer) {
        nodes.putStart(request, observer);
    }

    @Override
    public void putEnd(PutEndRequest request, StreamObserver<PutEndResponse> observer) {
        nodes.putEnd(request, observer);
    }

    @Override
    public void putRevoke(PutRevokeRequest request, StreamObserver<PutRevokeResponse> observer) {
        nodes.putRevoke(request, observer);
    }

    @Override
    public void listClients(ListClientsRequest request, StreamObserver<ListClientsResponse> observer) {
        nodes.listClients(request, observer);
    }

    @Override
    public void promotionObjectHeartbeat(PromotionObjectHeartbeatRequest request, StreamObserver<PromotionObjectHeartbeatResponse> observer) {
        nodes.promotionObjectHeartbeat(request, observer);
    }

    @Override
    public void notifyPromotionSuccess(NotifyPromotionSuccessRequest request, StreamObserver<NotifyPromotionSuccessResponse> observer) {
        nodes.notifyPromotionSuccess(request, observer);
    }

    @Override
    public void notifyPromotionFailure(NotifyPromotionFailureRequest request, StreamObserver<NotifyPromotionFailureResponse> observer) {
        nodes.notifyPromotionFailure(request, observer);
    }

    @Override
    public void listPromotions(ListPromotionsRequest request, StreamObserver<ListPromotionsResponse> observer) {
        nodes.listPromotions(request, observer);
    }

    @Override
    public void promote(PromoteRequest request, StreamObserver<PromoteResponse> observer) {
        nodes.promote(request, observer);
    }
}
