package io.mcctl.master.server;

import io.mcctl.master.protocol.BatchLimits;
import io.mcctl.master.protocol.PackedPlacements;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.master.service.eviction.EvictionPolicy;
import com.google.protobuf.ByteString;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.mcctl.master.proto.v1.AllocateDistributedPageRequest;
import io.mcctl.master.proto.v1.AllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.AllocationResult;
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
import io.mcctl.master.proto.v1.BucketStats;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.ExistKeyRequest;
import io.mcctl.master.proto.v1.ExistKeyResponse;
import io.mcctl.master.proto.v1.FreeDistributedPageRequest;
import io.mcctl.master.proto.v1.FreeDistributedPageResponse;
import io.mcctl.master.proto.v1.GetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.GetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.GetLayoutRequest;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.master.proto.v1.GetReplicaListRequest;
import io.mcctl.master.proto.v1.GetReplicaListResponse;
import io.mcctl.master.proto.v1.GetStatsRequest;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.proto.v1.KeyInfo;
import io.mcctl.master.proto.v1.ListKeysRequest;
import io.mcctl.master.proto.v1.ListKeysResponse;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.master.proto.v1.MemoryReplicas;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessRequest;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessResponse;
import io.mcctl.master.proto.v1.RemoveRequest;
import io.mcctl.master.proto.v1.RemoveResponse;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaStatus;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.master.durability.Snapshotter;
import io.mcctl.master.proto.v1.CreateSnapshotRequest;
import io.mcctl.master.proto.v1.GetBucketBitmapRequest;
import io.mcctl.master.proto.v1.GetBucketBitmapResponse;
import io.mcctl.master.proto.v1.CreateSnapshotResponse;
import io.mcctl.master.proto.v1.BucketPageCounters;
import io.mcctl.master.proto.v1.CheckPagesRequest;
import io.mcctl.master.proto.v1.CheckPagesResponse;
import io.mcctl.master.proto.v1.PageClaimant;
import io.mcctl.master.proto.v1.PageRun;
import io.mcctl.master.service.AnswerBarrier;
import io.mcctl.master.service.PageCheck;
import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.master.service.Result;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.service.Tenant;
import io.mcctl.storage.layout.LayoutFile;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.Map;

/**
 * The gRPC face of {@link PageService}: request checks that span fields, translation, and error mapping.
 *
 * <p>Longer than 800 lines on purpose: it holds one handler per RPC of the master's contract (unary, batched and the
 * Session stream's), each a short translation to and from the page service; splitting it by RPC would scatter the
 * contract's one place.
 */
public final class MasterGrpcService extends MasterServiceGrpc.MasterServiceImplBase {

    /** Bytes of keys and paths a listing page carries by default, and at most. */
    static final long DEFAULT_LIST_BYTES = 1 << 20;
    static final long MAX_LIST_BYTES = 16 << 20;

    private final PageService pages;
    private final LayoutFile.Record layoutRecord;
    private final String fsType;
    /** Each bucket's path, UTF-8 encoded once: every descriptor carries one. */
    private final ByteString[] bucketPathBytes;

    /** When changes are durable. */
    @FunctionalInterface
    public interface Durability {
        /** Completes once every change up to {@code sequence} is durable ({@link AnswerBarrier#EVERYTHING}: all made so far). */
        CompletableFuture<Void> whenDurable(long sequence);
    }

    private final Durability durability;
    private final Snapshotter snapshotter;
    /**
     * The transport loops calls are served on: an answer completed after a group commit goes back to its call's loop
     * ({@link TransportLoops#currentLoopOr}); null (a server on gRPC's own loops) sends it from a reply thread.
     */
    private volatile TransportLoops loops;

    /** Answers calls completed on other threads on {@code loops}, the ones the server runs them on. */
    public void answerOn(TransportLoops loops) {
        this.loops = loops;
    }

    /** Sends the answers of mutating calls once their changes are durable, where no transport loop takes them. */
    private final ExecutorService replyExecutor = Executors.newFixedThreadPool(2, r -> {
        Thread thread = new Thread(r, "mcctl-master-reply");
        thread.setDaemon(true);
        return thread;
    });
    /** Snapshots are long: they run here, never on a transport thread. */
    private final ExecutorService adminExecutor = Executors.newSingleThreadExecutor(r -> {
        Thread thread = new Thread(r, "mcctl-master-admin");
        thread.setDaemon(true);
        return thread;
    });

    /** Nodes and their owner-coupled replicas; null until {@link #serveClients} (then node RPCs are answered). */
    private volatile ClientRegistry clients;

    /** Where Session requests are counted by kind; null until {@link MasterServer#intercepted} (tests may run without). */
    private volatile MasterMetrics metrics;

    void useMetrics(MasterMetrics metrics) {
        this.metrics = metrics;
        metrics.watchSessions(sessionBacklog);
    }

    /** What Session streams hold for clients that have not taken their answers, and its bounds. */
    private final SessionBacklog sessionBacklog = new SessionBacklog();

    SessionBacklog sessionBacklog() {
        return sessionBacklog;
    }

    /**
     * Bounds the answers Session streams hold for clients that do not take them: {@code perStream} bytes for one stream,
     * {@code total} for all ({@link MasterSettings#SESSION_BACKLOG}, {@link MasterSettings#SESSION_BACKLOG_TOTAL}).
     */
    public void limitSessions(long perStream, long total) {
        sessionBacklog.limit(perStream, total);
    }

    MasterMetrics metrics() {
        return metrics;
    }

    /** Promotion into the DRAM tier; null until {@link #serveClients}. */
    private volatile Promoter promoter;

    /**
     * Serves the node RPCs (RegisterClient, Ping, PutStart, PutEnd, PutRevoke, ListClients) from {@code registry}, and
     * promotion into its nodes' DRAM segments (as the page service was built to admit and queue them); the promoter stops
     * when the registry closes.
     */
    public void serveClients(ClientRegistry registry) {
        Promoter promoting = new Promoter(pages, registry, Promoter.DEFAULT_HOLD_LIMIT, this::toWire);
        registry.closeWith(promoting);
        this.promoter = promoting;
        this.clients = registry;
    }

    public MasterGrpcService(PageService pages, LayoutFile.Record layoutRecord, String fsType, Durability durability, Snapshotter snapshotter) {
        this.durability = durability;
        this.snapshotter = snapshotter;
        this.pages = pages;
        this.bucketPathBytes = new ByteString[pages.layout().bucketCount()];
        for (int b = 0; b < bucketPathBytes.length; b++) {
            bucketPathBytes[b] = ByteString.copyFromUtf8(pages.bucketPath(b));
        }
        this.layoutRecord = layoutRecord;
        this.fsType = fsType;
        this.layoutGrowth = new LayoutGrowth(pages, durability);
    }

    private final LayoutGrowth layoutGrowth;

    // ---- conversions ----

    DistributedDiskDescriptor toWire(Placement placement) {
        return DistributedDiskDescriptor.newBuilder()
                .setFilePathBytes(bucketPathBytes[placement.bucket()])
                .setBucket(placement.bucket())
                .setOffset(placement.offset())
                .setObjectSize(placement.size())
                .setCrc32C(placement.crc32c())
                .build();
    }

    /**
     * The placement a descriptor names. With the bucket index no path is decoded or parsed; a path sent beside it must
     * be that bucket's, byte for byte. A bucket index outside the layout stays as it was sent (an error message echoes
     * it) and matches no allocation; a path that names no bucket file, or another bucket than the index, is -1, which
     * matches none either.
     */
    Placement fromWire(DistributedDiskDescriptor descriptor) {
        return new Placement(bucketOf(descriptor), descriptor.getOffset(), descriptor.getObjectSize(), descriptor.getCrc32C());
    }

    private int bucketOf(DistributedDiskDescriptor descriptor) {
        if (!descriptor.hasBucket()) {
            return pages.bucketOfPath(descriptor.getFilePath());
        }
        int bucket = descriptor.getBucket();
        if (bucket < 0 || bucket >= bucketPathBytes.length) {
            return bucket;
        }
        ByteString path = descriptor.getFilePathBytes();
        if (path.isEmpty() || path.equals(bucketPathBytes[bucket])) {
            return bucket;
        }
        return pages.bucketOfPath(descriptor.getFilePath()) == bucket ? bucket : -1; // the same file spelled another way
    }

    private static final KeyError OK = KeyError.getDefaultInstance();

    private static KeyError keyError(Result<?> result) {
        return result.isOk() ? OK : KeyError.newBuilder().setError(result.error()).setMessage(result.message())
                .setRetryAfterMs(result.retryAfterMillis()).build();
    }

    private static <T> T orThrow(Result<T> result) {
        if (!result.isOk()) {
            throw WireErrors.exception(result.error(), result.message());
        }
        return result.value();
    }

    private static void checkBatch(int keys, int tenants, String otherName, int others) {
        if (keys > BatchLimits.MAX_BATCH) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "batch of " + keys + " keys is larger than " + BatchLimits.MAX_BATCH);
        }
        if (tenants != keys) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "batch has " + keys + " keys but " + tenants + " tenant_ids");
        }
        if (otherName != null && others != keys) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "batch has " + keys + " keys but " + others + " " + otherName);
        }
    }

    private static <T> void reply(StreamObserver<T> observer, T response) {
        observer.onNext(response);
        observer.onCompleted();
    }

    /**
     * Answers once the changes this call made are on disk. The transport thread does not wait: the log's
     * writer completes the answer after its fsync, one fsync for every call waiting at that moment.
     */
    private <T> void replyWhenDurable(StreamObserver<T> observer, T response) {
        replyWhenDurable(observer, response, AnswerBarrier.EVERYTHING);
    }

    /** {@link #replyWhenDurable(StreamObserver, Object)} once the changes up to {@code sequence} are on disk (0: at once). */
    private <T> void replyWhenDurable(StreamObserver<T> observer, T response, long sequence) {
        whenDurable(sequence, () -> reply(observer, response), observer::onError);
    }

    /**
     * Runs {@code answer} once every change up to {@code sequence} is on disk ({@link AnswerBarrier#EVERYTHING}: every
     * change made so far; 0: at once), or {@code fail} with the status that says the outcome is unknown when the log
     * failed. Unary calls and the stream answer mutations through this alone.
     */
    void whenDurable(long sequence, Runnable answer, java.util.function.Consumer<StatusRuntimeException> fail) {
        if (sequence == 0) {
            answer.run();
            return;
        }
        CompletableFuture<Void> durable = durability.whenDurable(sequence);
        if (durable.isDone() && !durable.isCompletedExceptionally()) {
            answer.run();
            return;
        }
        // Answers are encoded and sent by the call's transport loop (or a reply thread), so the log's writer goes straight
        // back to its next fsync; asked here, on the thread serving the call.
        TransportLoops serving = loops;
        java.util.concurrent.Executor answering = serving == null ? replyExecutor : serving.currentLoopOr(replyExecutor);
        durable.whenCompleteAsync((ignored, failure) -> {
            if (failure != null) {
                Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null ? failure.getCause() : failure;
                fail.accept(WireErrors.changesRefused("the outcome is unknown: the change may not be durable (" + cause.getMessage()
                        + "); the master accepts no changes until it is restarted, then check with mcctl stat"));
            } else {
                answer.run();
            }
        }, answering);
    }

    /**
     * Runs {@code then} once every change up to {@code sequence} is on disk or the log has failed (0: at once), on the
     * call's transport loop or a reply thread: a lookup that met mappings whose commits the log did not hold yet looks
     * those keys up again then, and finds each one, or a miss if the log failed.
     */
    void whenLogged(long sequence, Runnable then) {
        if (sequence == 0) {
            then.run();
            return;
        }
        CompletableFuture<Void> durable = durability.whenDurable(sequence);
        if (durable.isDone()) {
            then.run();
            return;
        }
        TransportLoops serving = loops;
        java.util.concurrent.Executor answering = serving == null ? replyExecutor : serving.currentLoopOr(replyExecutor);
        durable.whenCompleteAsync((ignored, failure) -> then.run(), answering);
    }

    /**
     * Answers a lookup with {@code answer}: at once when every mapping it met is durable (nearly always), else once the
     * log holds what {@code wait} noted, or failed ({@link #whenLogged}). A failure of the answer there closes the call.
     */
    private <T> void answerLookup(StreamObserver<T> observer, AnswerBarrier wait, java.util.function.Supplier<T> answer) {
        if (wait.sequence() == 0) {
            reply(observer, answer.get());
            return;
        }
        whenLogged(wait.sequence(), () -> {
            T answered;
            try {
                answered = answer.get();
            } catch (StatusRuntimeException e) {
                observer.onError(e);
                return;
            } catch (RuntimeException e) {
                observer.onError(WireErrors.exception(ErrorCode.INTERNAL_ERROR, "lookup failed: " + e));
                return;
            }
            reply(observer, answered);
        });
    }

    /** {@code found} with each answer that waited for the log ({@link PageService#waitsForLog}) replaced by {@code again} of its index. */
    static <T> List<Result<T>> lookAgain(List<Result<T>> found, java.util.function.IntFunction<Result<T>> again) {
        List<Result<T>> settled = new java.util.ArrayList<>(found);
        for (int i = 0; i < settled.size(); i++) {
            if (PageService.waitsForLog(settled.get(i))) {
                settled.set(i, again.apply(i));
            }
        }
        return settled;
    }

    // ---- the page RPCs ----

    @Override
    public void allocateDistributedPage(AllocateDistributedPageRequest request, StreamObserver<AllocateDistributedPageResponse> observer) {
        AnswerBarrier answer = new AnswerBarrier();
        Placement placement = orThrow(pages.allocate(pages.tenant(request.getTenantId()), request.getKey(), request.getSize(),
                request.getOverwrite(), request.getPin(), answer));
        replyWhenDurable(observer, AllocateDistributedPageResponse.newBuilder().setDistributedDisk(toWire(placement))
                .setDeadlineMs(pages.allocationDeadlineMillis()).build(), answer.sequence());
    }

    @Override
    public void batchAllocateDistributedPage(BatchAllocateDistributedPageRequest request,
                                             StreamObserver<BatchAllocateDistributedPageResponse> observer) {
        AnswerBarrier answer = new AnswerBarrier();
        BatchAllocateDistributedPageResponse response = batchAllocate(request, answer);
        replyWhenDurable(observer, response, answer.sequence());
    }

    // ---- the batch operations, one method each, shared by the unary calls and the Session stream ----
    // Each checks the request as a whole (throwing the call's status before anything changes), then acts key by key,
    // with each distinct tenant of the batch checked and resolved once.

    /** @param answer filled with what the answer must wait for: an allocation's own record need not be durable first */
    BatchAllocateDistributedPageResponse batchAllocate(BatchAllocateDistributedPageRequest request, AnswerBarrier answer) {
        checkBatch(request.getKeysCount(), request.getTenantIdsCount(), "sizes", request.getSizesCount());
        BatchAllocateDistributedPageResponse.Builder response = BatchAllocateDistributedPageResponse.newBuilder()
                .setDeadlineMs(pages.allocationDeadlineMillis());
        List<Result<Placement>> results = pages.allocateAll(pages.batchTenants(), request.getTenantIdsList(), request.getKeysList(),
                request.getSizesList(), request.getOverwrite(), request.getPin(), answer);
        if (request.getPacked()) {
            PackedPlacements packed = PackedPlacements.forKeys(results.size());
            for (int i = 0; i < results.size(); i++) {
                Result<Placement> result = results.get(i);
                if (result.isOk()) {
                    packed.place(i, result.value());
                } else {
                    packed.miss(i, result.error());
                    response.putErrors(i, keyError(result));
                }
            }
            return response.setPlacements(packed.toByteString()).build();
        }
        for (Result<Placement> result : results) {
            AllocationResult.Builder item = AllocationResult.newBuilder();
            if (result.isOk()) {
                item.setDistributedDisk(toWire(result.value())); // an unset status reads as OK
            } else {
                item.setStatus(keyError(result));
            }
            response.addResults(item);
        }
        return response.build();
    }

    BatchFreeDistributedPageResponse batchFree(BatchFreeDistributedPageRequest request) {
        boolean withDescriptors = request.getDescriptorsCount() > 0;
        checkBatch(request.getKeysCount(), request.getTenantIdsCount(), withDescriptors ? "descriptors" : null, request.getDescriptorsCount());
        BatchFreeDistributedPageResponse.Builder response = BatchFreeDistributedPageResponse.newBuilder();
        Tenant.Batch tenants = pages.batchTenants();
        for (int i = 0; i < request.getKeysCount(); i++) {
            Placement expected = withDescriptors ? fromWire(request.getDescriptors(i)) : null;
            response.addResults(keyError(pages.free(tenants.of(request.getTenantIds(i)), request.getKeys(i), expected)));
        }
        return response.build();
    }

    /**
     * The mappings a batch lookup finds, a key whose commit the log does not hold yet {@link PageService#waitsForLog}
     * with its sequence noted in {@code wait}: answer with {@link #batchLookup(BatchGetDistributedPageMappingRequest, List)}
     * at once when nothing waits, else of {@link #lookAgain(BatchGetDistributedPageMappingRequest, List)} once the log holds it.
     */
    List<Result<Placement>> batchLookupResults(BatchGetDistributedPageMappingRequest request, AnswerBarrier wait) {
        checkBatch(request.getKeysCount(), request.getTenantIdsCount(), null, 0);
        return pages.getMappings(pages.batchTenants(), request.getTenantIdsList(), request.getKeysList(), wait);
    }

    /** A batch lookup's results with each key that waited for the log looked up again: found, or a miss if the log failed. */
    List<Result<Placement>> lookAgain(BatchGetDistributedPageMappingRequest request, List<Result<Placement>> found) {
        Tenant.Batch tenants = pages.batchTenants();
        return lookAgain(found, i -> pages.getMapping(tenants.of(request.getTenantIds(i)), request.getKeys(i)));
    }

    /** The answer of a batch lookup whose {@code results} wait for nothing. */
    BatchGetDistributedPageMappingResponse batchLookup(BatchGetDistributedPageMappingRequest request, List<Result<Placement>> results) {
        BatchGetDistributedPageMappingResponse.Builder response = BatchGetDistributedPageMappingResponse.newBuilder()
                .setLeaseMs(pages.readLeaseMillis());
        int count = request.getKeysCount();
        PackedPlacements packed = request.getPacked() ? PackedPlacements.forKeys(count) : null;
        for (int i = 0; i < count; i++) {
            Result<Placement> result = results.get(i);
            Replica inDram = result.isOk() ? readableInDram(request.getTenantIds(i), request.getKeys(i), result.value()) : null;
            if (packed != null) {
                if (result.isOk()) {
                    packed.place(i, result.value());
                    if (inDram != null) {
                        response.putMemory(i, MemoryReplicas.newBuilder().addReplicas(inDram).build());
                    }
                } else {
                    packed.miss(i, result.error());
                    if (result.error() != ErrorCode.OBJECT_NOT_FOUND) {
                        response.putErrors(i, keyError(result));
                    }
                }
                continue;
            }
            MappingResult.Builder item = MappingResult.newBuilder();
            if (result.isOk()) {
                item.setDistributedDisk(toWire(result.value()));
                if (inDram != null) {
                    item.addMemory(inDram);
                }
            } else {
                item.setStatus(keyError(result));
            }
            response.addResults(item);
        }
        if (packed != null) {
            response.setPlacements(packed.toByteString());
        }
        return response.build();
    }

    /** The COMPLETE copy of (tenant, key) in a node's DRAM that holds the same bytes as {@code placement}, or null. */
    private Replica readableInDram(String tenant, String key, Placement placement) {
        ClientRegistry registry = clients;
        if (registry == null || registry.memory().isEmpty()) {
            return null;
        }
        return registry.memory().readable(KeyRules.scopedKey(tenant, key), placement);
    }

    /** @param answer filled with what the answer must wait for: the commits it made (see {@link PageService#notifySuccess}) */
    NotifyDistributedDiskSuccessResponse notifySuccess(NotifyDistributedDiskSuccessRequest request, AnswerBarrier answer) {
        if (!request.getPlacements().isEmpty()) {
            return notifyPacked(request, answer);
        }
        checkBatch(request.getKeysCount(), request.getTenantIdsCount(), "descriptors", request.getDescriptorsCount());
        checkKvBlocks(request);
        NotifyDistributedDiskSuccessResponse.Builder response = NotifyDistributedDiskSuccessResponse.newBuilder();
        Tenant.Batch tenants = pages.batchTenants();
        for (int i = 0; i < request.getKeysCount(); i++) {
            response.addResults(keyError(pages.notifySuccess(tenants.of(request.getTenantIds(i)), request.getKeys(i),
                    fromWire(request.getDescriptors(i)), kvBlocks(request, i), answer)));
        }
        return response.build();
    }

    /**
     * A notify that sends the placements packed, as a packed allocation answered them: the same per-key outcome as
     * with descriptors, and only the keys not committed are answered. A placements field that is not one record per
     * key refuses the whole request before anything is committed.
     */
    private NotifyDistributedDiskSuccessResponse notifyPacked(NotifyDistributedDiskSuccessRequest request, AnswerBarrier answer) {
        int count = request.getKeysCount();
        checkBatch(count, request.getTenantIdsCount(), null, 0);
        if (request.getDescriptorsCount() > 0) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "notify sends both " + request.getDescriptorsCount()
                    + " descriptors and packed placements: send one of them");
        }
        PackedPlacements written;
        try {
            written = PackedPlacements.of(request.getPlacements(), count);
        } catch (IllegalArgumentException wrongLength) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "notify of " + count + " keys sends " + request.getPlacements().size()
                    + " bytes of placements: expected " + PackedPlacements.RECORD_BYTES + " bytes a key");
        }
        checkKvBlocks(request);
        NotifyDistributedDiskSuccessResponse.Builder response = NotifyDistributedDiskSuccessResponse.newBuilder();
        Tenant.Batch tenants = pages.batchTenants();
        for (int i = 0; i < count; i++) {
            // A record naming no bucket file (or a miss sent back) matches no allocation: that key's error, as with descriptors.
            Result<Void> result = pages.notifySuccess(tenants.of(request.getTenantIds(i)), request.getKeys(i), written.placement(i),
                    kvBlocks(request, i), answer);
            if (!result.isOk()) {
                response.putErrors(i, keyError(result));
            }
        }
        return response.build();
    }

    /** kv_blocks is empty or one per key; anything else refuses the whole notify before anything is committed. */
    private static void checkKvBlocks(NotifyDistributedDiskSuccessRequest request) {
        int blocks = request.getKvBlocksCount();
        if (blocks != 0 && blocks != request.getKeysCount()) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "notify of " + request.getKeysCount() + " keys sends " + blocks
                    + " kv_blocks entries: send none, or one per key (an empty entry for a key without blocks)");
        }
    }

    /** The engine KV blocks the notify names for key {@code i}, or null for none. */
    private static io.mcctl.master.service.KvBlocks kvBlocks(NotifyDistributedDiskSuccessRequest request, int i) {
        if (request.getKvBlocksCount() == 0) {
            return null;
        }
        io.mcctl.master.proto.v1.KvBlocks wire = request.getKvBlocks(i);
        if (wire.getBlockHashesCount() == 0 && !wire.hasParentBlockHash() && wire.getTokenIdsCount() == 0 && wire.getBlockSize() == 0
                && wire.getLoraName().isEmpty()) {
            return null; // an empty entry: this key has none
        }
        long[] hashes = new long[wire.getBlockHashesCount()];
        for (int h = 0; h < hashes.length; h++) {
            hashes[h] = wire.getBlockHashes(h);
        }
        int[] tokens = new int[wire.getTokenIdsCount()];
        for (int t = 0; t < tokens.length; t++) {
            tokens[t] = wire.getTokenIds(t);
        }
        return new io.mcctl.master.service.KvBlocks(hashes, wire.hasParentBlockHash(), wire.getParentBlockHash(), wire.getBlockSize(), tokens,
                wire.getLoraName());
    }

    BatchRemoveResponse batchRemove(BatchRemoveRequest request) {
        checkBatch(request.getKeysCount(), request.getTenantIdsCount(), null, 0);
        BatchRemoveResponse.Builder response = BatchRemoveResponse.newBuilder();
        Tenant.Batch tenants = pages.batchTenants();
        for (int i = 0; i < request.getKeysCount(); i++) {
            response.addResults(keyError(removeWithDramCopy(request.getTenantIds(i), request.getKeys(i),
                    pages.remove(tenants.of(request.getTenantIds(i)), request.getKeys(i)))));
        }
        return response.build();
    }

    /**
     * A remove takes the key's MEMORY replica with it: an object put into a node's segment (which has no
     * DISTRIBUTED_DISK mapping, so the page service found nothing) or a promoted copy, whose DRAM is freed at once
     * rather than when the stale copy is next looked at. The node's bytes are simply no longer listed.
     */
    private Result<Void> removeWithDramCopy(String tenant, String key, Result<Void> removed) {
        ClientRegistry registry = clients;
        if (registry == null || !removed.isOk() && removed.error() != ErrorCode.OBJECT_NOT_FOUND) {
            return removed;
        }
        boolean dropped = !registry.memory().isEmpty() && registry.memory().dropComplete(KeyRules.scopedKey(tenant, key));
        if (dropped && !removed.isOk()) {
            return Result.ok();
        }
        if (!removed.isOk()) {
            List<Replica> owned = registry.replicasOf(tenant, key);
            if (!owned.isEmpty()) {
                // Not built: the owner's file would have to go too, or its next ScanMeta would report the object again.
                return Result.error(ErrorCode.INVALID_PARAMS, "key " + Quoted.of(key) + " of tenant " + tenant + " is a LOCAL_DISK object of client "
                        + owned.get(0).getLocalDisk().getClientId() + " (page_mode=false): removing owner-coupled objects is not built; "
                        + "remove removes DISTRIBUTED_DISK and MEMORY objects");
            }
        }
        return removed;
    }

    @Override
    public StreamObserver<io.mcctl.master.proto.v1.SessionRequest> session(StreamObserver<io.mcctl.master.proto.v1.SessionResponse> responses) {
        return new SessionStream(this, io.mcctl.master.security.AccessControl.SESSION_GUARD.get(),
                (io.grpc.stub.ServerCallStreamObserver<io.mcctl.master.proto.v1.SessionResponse>) responses);
    }

    @Override
    public void freeDistributedPage(FreeDistributedPageRequest request, StreamObserver<FreeDistributedPageResponse> observer) {
        Placement expected = request.hasDistributedDisk() ? fromWire(request.getDistributedDisk()) : null;
        orThrow(pages.free(request.getTenantId(), request.getKey(), expected));
        replyWhenDurable(observer, FreeDistributedPageResponse.getDefaultInstance());
    }

    @Override
    public void batchFreeDistributedPage(BatchFreeDistributedPageRequest request, StreamObserver<BatchFreeDistributedPageResponse> observer) {
        replyWhenDurable(observer, batchFree(request));
    }

    @Override
    public void getDistributedPageMapping(GetDistributedPageMappingRequest request,
                                          StreamObserver<GetDistributedPageMappingResponse> observer) {
        AnswerBarrier wait = new AnswerBarrier();
        Result<Placement> found = pages.getMapping(pages.tenant(request.getTenantId()), request.getKey(), wait);
        answerLookup(observer, wait, () -> {
            Placement placement = orThrow(wait.sequence() == 0 ? found : pages.getMapping(request.getTenantId(), request.getKey()));
            return GetDistributedPageMappingResponse.newBuilder().setDistributedDisk(toWire(placement)).setLeaseMs(pages.readLeaseMillis()).build();
        });
    }

    @Override
    public void batchGetDistributedPageMapping(BatchGetDistributedPageMappingRequest request,
                                               StreamObserver<BatchGetDistributedPageMappingResponse> observer) {
        AnswerBarrier wait = new AnswerBarrier();
        List<Result<Placement>> found = batchLookupResults(request, wait);
        answerLookup(observer, wait, () -> batchLookup(request, wait.sequence() == 0 ? found : lookAgain(request, found)));
    }

    @Override
    public void notifyDistributedDiskSuccess(NotifyDistributedDiskSuccessRequest request,
                                             StreamObserver<NotifyDistributedDiskSuccessResponse> observer) {
        AnswerBarrier answer = new AnswerBarrier();
        NotifyDistributedDiskSuccessResponse response = notifySuccess(request, answer);
        replyWhenDurable(observer, response, answer.sequence());
    }

    @Override
    public void renewDistributedPageAllocation(io.mcctl.master.proto.v1.RenewDistributedPageAllocationRequest request,
                                               StreamObserver<io.mcctl.master.proto.v1.RenewDistributedPageAllocationResponse> observer) {
        checkBatch(request.getKeysCount(), request.getTenantIdsCount(), "descriptors", request.getDescriptorsCount());
        io.mcctl.master.proto.v1.RenewDistributedPageAllocationResponse.Builder response =
                io.mcctl.master.proto.v1.RenewDistributedPageAllocationResponse.newBuilder().setDeadlineMs(pages.allocationDeadlineMillis());
        Tenant.Batch tenants = pages.batchTenants();
        for (int i = 0; i < request.getKeysCount(); i++) {
            response.addResults(keyError(pages.renew(tenants.of(request.getTenantIds(i)), request.getKeys(i), fromWire(request.getDescriptors(i)))));
        }
        replyWhenDurable(observer, response.build());
    }

    @Override
    public void dropInFlightAllocation(io.mcctl.master.proto.v1.DropInFlightAllocationRequest request,
                                       StreamObserver<io.mcctl.master.proto.v1.DropInFlightAllocationResponse> observer) {
        PageService.InFlightDrop dropped = orThrow(pages.dropInFlight(request.getTenantId(), request.getKey()));
        replyWhenDurable(observer, io.mcctl.master.proto.v1.DropInFlightAllocationResponse.newBuilder()
                .setDistributedDisk(toWire(dropped.placement())).setQuarantinedUntilMs(dropped.quarantinedUntilMs()).build());
    }

    @Override
    public void remove(RemoveRequest request, StreamObserver<RemoveResponse> observer) {
        orThrow(removeWithDramCopy(request.getTenantId(), request.getKey(), pages.remove(request.getTenantId(), request.getKey())));
        replyWhenDurable(observer, RemoveResponse.getDefaultInstance());
    }

    @Override
    public void batchRemove(BatchRemoveRequest request, StreamObserver<BatchRemoveResponse> observer) {
        replyWhenDurable(observer, batchRemove(request));
    }

    @Override
    public void existKey(ExistKeyRequest request, StreamObserver<ExistKeyResponse> observer) {
        AnswerBarrier wait = new AnswerBarrier();
        Result<Boolean> found = pages.exists(request.getTenantId(), request.getKey(), wait);
        answerLookup(observer, wait, () -> ExistKeyResponse.newBuilder()
                .setExists(orThrow(wait.sequence() == 0 ? found : pages.exists(request.getTenantId(), request.getKey()))).build());
    }

    @Override
    public void batchExistKey(BatchExistKeyRequest request, StreamObserver<BatchExistKeyResponse> observer) {
        checkBatch(request.getKeysCount(), request.getTenantIdsCount(), null, 0);
        AnswerBarrier wait = new AnswerBarrier();
        Tenant.Batch tenants = pages.batchTenants();
        List<Result<Boolean>> found = pages.existsAll(tenants, request.getTenantIdsList(), request.getKeysList(), wait);
        answerLookup(observer, wait, () -> {
            BatchExistKeyResponse.Builder response = BatchExistKeyResponse.newBuilder();
            for (Result<Boolean> result : wait.sequence() == 0 ? found
                    : lookAgain(found, i -> pages.exists(tenants.of(request.getTenantIds(i)), request.getKeys(i)))) {
                response.addExists(result.isOk() && result.value());
                response.addResults(keyError(result));
            }
            return response.build();
        });
    }

    @Override
    public void getReplicaList(GetReplicaListRequest request, StreamObserver<GetReplicaListResponse> observer) {
        // A descriptor handed out: leased like any mapping lookup, so the pages cannot be reused under its reader.
        AnswerBarrier wait = new AnswerBarrier();
        Result<PageService.KeyDetail> found = pages.getMappingDetail(request.getTenantId(), request.getKey(), wait);
        answerLookup(observer, wait, () -> replicaList(request,
                wait.sequence() == 0 ? found : pages.getMappingDetail(request.getTenantId(), request.getKey())));
    }

    /** The answer of GetReplicaList once the key's DISTRIBUTED_DISK mapping is {@code mapped}. */
    private GetReplicaListResponse replicaList(GetReplicaListRequest request, Result<PageService.KeyDetail> mapped) {
        List<Replica> owned = clients == null ? List.of() : clients.replicasOf(request.getTenantId(), request.getKey());
        if (!mapped.isOk() && mapped.error() != ErrorCode.OBJECT_NOT_FOUND) {
            orThrow(mapped);
        }
        // Listed best first: MEMORY > NOF > DISTRIBUTED_DISK > LOCAL_DISK > DISK (see ReplicaPriority).
        List<Replica> replicas = new java.util.ArrayList<>(owned);
        Replica inDram = clients == null ? null : clients.memory().readable(KeyRules.scopedKey(request.getTenantId(), request.getKey()),
                mapped.isOk() ? mapped.value().placement() : null);
        if (inDram != null) {
            replicas.add(inDram);
        } else if (!mapped.isOk() && owned.isEmpty()) {
            orThrow(mapped);
        }
        GetReplicaListResponse.Builder response = GetReplicaListResponse.newBuilder();
        if (mapped.isOk()) {
            PageService.KeyDetail detail = mapped.value();
            replicas.add(Replica.newBuilder().setType(ReplicaType.DISTRIBUTED_DISK).setStatus(ReplicaStatus.COMPLETE)
                    .setDistributedDisk(toWire(detail.placement())).build());
            response.setLeaseMs(pages.readLeaseMillis()).setLastUseAgeMs(detail.lastUseAgeMillis()).setPinned(detail.pinned());
        }
        return response.addAllReplicas(ReplicaPriority.sortBestFirst(replicas)).build();
    }

    @Override
    public void listKeys(ListKeysRequest request, StreamObserver<ListKeysResponse> observer) {
        int pageSize = request.getPageSize() == 0 ? 1000 : request.getPageSize();
        long maxBytes = request.getMaxBytes() == 0 ? DEFAULT_LIST_BYTES : request.getMaxBytes();
        if (maxBytes < 1 || maxBytes > MAX_LIST_BYTES) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "max_bytes " + request.getMaxBytes() + " is outside 1.." + MAX_LIST_BYTES
                    + " (0 means " + DEFAULT_LIST_BYTES + ")");
        }
        AnswerBarrier wait = new AnswerBarrier();
        PageService.KeyPage found = orThrow(pages.listKeys(request.getTenantId(), request.getPrefix(), pageSize, request.getPageToken(), maxBytes, wait));
        answerLookup(observer, wait, () -> listed(wait.sequence() == 0 ? found : lookAgain(request.getTenantId(), found)));
    }

    /** A listing's page with each key that waited for the log looked up again: listed if found, left out if a miss now. */
    private PageService.KeyPage lookAgain(String tenant, PageService.KeyPage found) {
        List<Map.Entry<String, Placement>> keys = new java.util.ArrayList<>(found.keys().size());
        for (Map.Entry<String, Placement> entry : found.keys()) {
            if (entry.getValue() != null) {
                keys.add(entry);
                continue;
            }
            Result<Placement> again = pages.getMapping(tenant, entry.getKey());
            if (again.isOk()) {
                keys.add(Map.entry(entry.getKey(), again.value()));
            }
        }
        return new PageService.KeyPage(keys, found.nextToken());
    }

    private ListKeysResponse listed(PageService.KeyPage page) {
        ListKeysResponse.Builder response = ListKeysResponse.newBuilder().setNextPageToken(page.nextToken()).setLeaseMs(pages.readLeaseMillis());
        for (Map.Entry<String, Placement> entry : page.keys()) {
            response.addKeys(KeyInfo.newBuilder().setKey(entry.getKey()).setDistributedDisk(toWire(entry.getValue())));
        }
        return response.build();
    }

    @Override
    public void getBucketBitmap(GetBucketBitmapRequest request, StreamObserver<GetBucketBitmapResponse> observer) {
        int bucket = request.getBucket();
        if (bucket < 0 || bucket >= pages.layout().bucketCount()) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "bucket " + bucket + " is outside 0.." + (pages.layout().bucketCount() - 1));
        }
        io.mcctl.storage.alloc.BitmapPageAllocator allocator = pages.allocator(bucket);
        GetBucketBitmapResponse.Builder response = GetBucketBitmapResponse.newBuilder().setBucket(bucket)
                .setPageCount(allocator.pageCount()).setAllocated(allocator.allocatedCount()).setHint(allocator.hint());
        for (long word : allocator.bitmapWords()) {
            response.addWords(word);
        }
        reply(observer, response.build());
    }

    @Override
    public void createSnapshot(CreateSnapshotRequest request, StreamObserver<CreateSnapshotResponse> observer) {
        adminExecutor.execute(() -> {
            try {
                Snapshotter.Taken taken = snapshotter.take();
                reply(observer, CreateSnapshotResponse.newBuilder().setPath(taken.path().toString()).setWalSequence(taken.walSequence())
                        .setMappings(taken.mappings()).setInFlight(taken.inFlight()).setQuarantinedRanges(taken.quarantined())
                        .setBytes(taken.bytes()).setMillis(taken.millis()).build());
            } catch (java.io.IOException | RuntimeException e) {
                observer.onError(WireErrors.exception(ErrorCode.INTERNAL_ERROR, "snapshot failed: " + e.getMessage()));
            }
        });
    }

    @Override
    public void setTenantQuota(io.mcctl.master.proto.v1.SetTenantQuotaRequest request,
                               StreamObserver<io.mcctl.master.proto.v1.SetTenantQuotaResponse> observer) {
        long previous = orThrow(pages.setQuota(request.getTenantId(), request.getMaxBytes()));
        replyWhenDurable(observer, io.mcctl.master.proto.v1.SetTenantQuotaResponse.newBuilder().setPreviousMaxBytes(previous)
                .setUsedBytes(pages.usedBytes(request.getTenantId())).build());
    }

    /** Most ranges one check lists per kind. */
    static final int MAX_CHECK_RANGES = 100_000;

    @Override
    public void checkPages(CheckPagesRequest request, StreamObserver<CheckPagesResponse> observer) {
        int maxRanges = request.getMaxRanges() == 0 ? 1000 : request.getMaxRanges();
        if (maxRanges < 1 || maxRanges > MAX_CHECK_RANGES) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "max_ranges " + request.getMaxRanges() + " is outside 1.." + MAX_CHECK_RANGES
                    + " (0 means 1000)");
        }
        long minAgeMs = request.getMinAgeMs() < 0 ? pages.allocationDeadlineMillis() : request.getMinAgeMs();
        // Long (a pass over every mapping): never on a transport thread, and one at a time with snapshots.
        adminExecutor.execute(() -> {
            try {
                PageCheck check = pages.checkPages(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(minAgeMs), request.getRepair(), maxRanges);
                MasterMetrics watching = metrics;
                if (watching != null) {
                    watching.pagesChecked(check, request.getRepair());
                }
                CheckPagesResponse.Builder response = CheckPagesResponse.newBuilder()
                        .setMappings(check.mappings()).setInFlight(check.inFlight()).setQuarantinedRanges(check.quarantinedRanges())
                        .setLeakedPages(check.leakedPages()).setYoungPages(check.youngPages()).setFalseFreePages(check.falseFreePages())
                        .setOverlapPages(check.overlapPages()).setRepairedLeakedPages(check.repairedLeakedPages())
                        .setRepairedFalseFreePages(check.repairedFalseFreePages()).setLongestHoldMicros(check.longestHoldNanos() / 1000)
                        .setUnsettledPages(check.unsettledPages())
                        .setMinAgeMs(minAgeMs).setStateDir(snapshotter == null ? "" : snapshotter.stateDir().toString())
                        .setPageSize(pages.layout().pageSize());
                check.leaked().forEach(run -> response.addLeaked(toWire(run)));
                check.young().forEach(run -> response.addYoung(toWire(run)));
                check.falseFree().forEach(run -> response.addFalseFree(toWire(run)));
                check.overlaps().forEach(run -> response.addOverlaps(toWire(run)));
                for (PageCheck.BucketCounters c : check.buckets()) {
                    response.addBuckets(BucketPageCounters.newBuilder().setBucket(c.bucket()).setAllocatedCounter(c.allocatedCounter())
                            .setAllocatedPopcount(c.allocatedPopcount()).setClaimedPages(c.claimedPages()).setClaimedEndBytes(c.claimedEndBytes()));
                }
                reply(observer, response.build());
            } catch (RuntimeException e) {
                observer.onError(WireErrors.exception(ErrorCode.INTERNAL_ERROR, "page check failed: " + e.getMessage()));
            }
        });
    }

    private static PageRun toWire(PageCheck.PageRun run) {
        PageRun.Builder out = PageRun.newBuilder().setBucket(run.bucket()).setFirstPage(run.firstPage()).setPages(run.pages()).setRepaired(run.repaired());
        for (PageCheck.Claimant c : run.claimants()) {
            out.addClaimants(PageClaimant.newBuilder().setKind(c.kind()).setTenantId(c.tenant()).setKey(c.key()));
        }
        return out.build();
    }

    @Override
    public void getLayout(GetLayoutRequest request, StreamObserver<GetLayoutResponse> observer) {
        reply(observer, GetLayoutResponse.newBuilder()
                .setRootDir(pages.layout().root().toString())
                .setBucketCount(pages.layout().bucketCount())
                .setPageSize(pages.layout().pageSize())
                .setBucketSize(pages.layout().bucketSize())
                .setClusterId(layoutRecord.clusterId())
                .setFormatVersion(layoutRecord.formatVersion())
                .setFsType(fsType)
                .build());
    }

    @Override
    public void getStats(GetStatsRequest request, StreamObserver<GetStatsResponse> observer) {
        PageService.Stats stats = pages.stats();
        GetStatsResponse.Builder response = GetStatsResponse.newBuilder()
                .setMappings(stats.mappings())
                .setInFlightAllocations(stats.inFlight())
                .setQuarantinedPages(stats.quarantinedPages())
                .setPagesAllocated(stats.pagesAllocated())
                .setPagesTotal(stats.pagesTotal())
                .setTenants(stats.tenants());
        if (pages.refusal() != null) {
            response.setChangesRefused(pages.refusal());
        }
        EvictionPolicy eviction = pages.eviction();
        long lookups = 0;
        response.setEviction(eviction.enabled()).setEvictionHighWatermark(eviction.highWatermark())
                .setEvictionLowWatermark(eviction.lowWatermark())
                .setEvictedKeys(pages.evictedTotal())
                .setEvictedBytes(pages.evictedBytesTotal())
                .setEvictionRuns(pages.evictionRunsTotal()).setOldestUseAgeMs(pages.oldestUseAgeMillis())
                .setPageAllocationsTotal(pages.pageAllocationsTotal())
                .setPinnedKeys(pages.pinnedMappingCount()).setPinnedBytes(pages.pinnedBytes())
                .setReservationHeldPages(pages.heldPageCount());
        for (Map.Entry<String, long[]> t : pages.tenantCounters().entrySet()) {
            long[] c = t.getValue();
            lookups += c[2] + c[3];
            response.addTenantStats(io.mcctl.master.proto.v1.TenantStats.newBuilder().setTenantId(t.getKey()).setKeys(c[0]).setBytes(c[1])
                    .setHits(c[2]).setMisses(c[3]).setEvictedKeys(c[4]).setEvictedBytes(c[5]).setQuotaBytes(c[6]));
        }
        response.setLookupsTotal(lookups);
        ClientRegistry registry = clients;
        Promoter promoting = promoter;
        if (registry != null && promoting != null) {
            long[] live = registry.liveTotals();
            long[] inDram = promoting.memoryTotals();
            response.setNodesAlive(live[0]).setMemorySegmentBytes(live[1]).setMemoryObjects(inDram[0]).setMemoryBytes(inDram[1])
                    .setMemoryEvicted(promoting.memoryEvictedTotal());
        }
        response.setPromotionTasks(pages.promotions().count()).setPromotionsSucceeded(pages.promotions().succeededTotal())
                .setPromotionsFailed(pages.promotions().failedTotal());
        for (int b = 0; b < pages.layout().bucketCount(); b++) {
            long allocated = pages.allocator(b).allocatedCount();
            response.addBuckets(BucketStats.newBuilder().setBucket(b).setPagesAllocated(allocated)
                    .setPagesFree(pages.allocator(b).pageCount() - allocated)
                    .setLargestFreeRun(pages.allocator(b).largestFreeRun()).setFileState(BucketFileWatch.wireState(pages.bucketHealth(b))));
        }
        reply(observer, response.build());
    }

    @Override
    public void growLayout(io.mcctl.master.proto.v1.GrowLayoutRequest request, StreamObserver<io.mcctl.master.proto.v1.GrowLayoutResponse> observer) {
        // Long (it extends every bucket file): never on a transport thread, and one at a time with snapshots and checks.
        adminExecutor.execute(() -> {
            try {
                reply(observer, orThrow(layoutGrowth.grow(request.getBucketSize(), request.getPreallocate())));
            } catch (io.grpc.StatusRuntimeException e) {
                observer.onError(e);
            } catch (io.mcctl.master.service.ChangeLog.Refused e) {
                observer.onError(WireErrors.changesRefused(e.getMessage()));
            } catch (java.io.IOException | RuntimeException e) {
                observer.onError(WireErrors.exception(ErrorCode.INTERNAL_ERROR, "layout grow failed: " + e.getMessage()));
            }
        });
    }

    // ---- nodes and the owner-coupled LOCAL_DISK path (ClientRegistry) ----

    private ClientRegistry clients() {
        ClientRegistry registry = clients;
        if (registry == null) {
            throw WireErrors.exception(ErrorCode.INTERNAL_ERROR, "this master serves no node registry");
        }
        return registry;
    }

    @Override
    public void registerClient(io.mcctl.master.proto.v1.RegisterClientRequest request,
                               StreamObserver<io.mcctl.master.proto.v1.RegisterClientResponse> observer) {
        orThrow(clients().register(request.getClientId(), request.getTransportEndpoint(), request.getLocalDiskDir(), request.getPageMode(),
                request.getMemoryBytes()));
        reply(observer, io.mcctl.master.proto.v1.RegisterClientResponse.newBuilder().setTtlMs(clients().ttl().toMillis()).build());
    }

    @Override
    public void ping(io.mcctl.master.proto.v1.PingRequest request, StreamObserver<io.mcctl.master.proto.v1.PingResponse> observer) {
        boolean known = clients().ping(request.getClientId());
        reply(observer, io.mcctl.master.proto.v1.PingResponse.newBuilder().setTtlMs(clients().ttl().toMillis())
                .setClientStatus(known ? io.mcctl.master.proto.v1.ClientStatus.CLIENT_OK : io.mcctl.master.proto.v1.ClientStatus.NEED_REGISTER)
                .build());
    }

    @Override
    public void putStart(io.mcctl.master.proto.v1.PutStartRequest request, StreamObserver<io.mcctl.master.proto.v1.PutStartResponse> observer) {
        if (request.getReplicaType() == ReplicaType.MEMORY && pages.peek(request.getTenantId(), request.getKey()).isOk()) {
            throw WireErrors.exception(ErrorCode.OBJECT_ALREADY_EXISTS, "key " + Quoted.of(request.getKey()) + " of tenant " + request.getTenantId()
                    + " has a DISTRIBUTED_DISK object: a MEMORY copy of it comes by promotion (mcctl promote), not by PutStart");
        }
        Replica started = orThrow(clients().putStart(request.getClientId(), request.getTenantId(), request.getKey(), request.getSize(),
                request.getReplicaType()));
        reply(observer, io.mcctl.master.proto.v1.PutStartResponse.newBuilder().setReplica(started).build());
    }

    @Override
    public void putEnd(io.mcctl.master.proto.v1.PutEndRequest request, StreamObserver<io.mcctl.master.proto.v1.PutEndResponse> observer) {
        orThrow(clients().putEnd(request.getClientId(), request.getTenantId(), request.getKey(), request.getReplicaType(), request.getCrc32C()));
        reply(observer, io.mcctl.master.proto.v1.PutEndResponse.getDefaultInstance());
    }

    @Override
    public void putRevoke(io.mcctl.master.proto.v1.PutRevokeRequest request, StreamObserver<io.mcctl.master.proto.v1.PutRevokeResponse> observer) {
        orThrow(clients().putRevoke(request.getClientId(), request.getTenantId(), request.getKey(), request.getReplicaType()));
        reply(observer, io.mcctl.master.proto.v1.PutRevokeResponse.getDefaultInstance());
    }

    @Override
    public void listClients(io.mcctl.master.proto.v1.ListClientsRequest request,
                            StreamObserver<io.mcctl.master.proto.v1.ListClientsResponse> observer) {
        reply(observer, io.mcctl.master.proto.v1.ListClientsResponse.newBuilder().addAllClients(clients().list())
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

    @Override
    public void promotionObjectHeartbeat(io.mcctl.master.proto.v1.PromotionObjectHeartbeatRequest request,
                                         StreamObserver<io.mcctl.master.proto.v1.PromotionObjectHeartbeatResponse> observer) {
        List<io.mcctl.master.proto.v1.PromotionTask> taken = orThrow(promoter().heartbeat(request.getClientId(), request.getMaxTasks()));
        reply(observer, io.mcctl.master.proto.v1.PromotionObjectHeartbeatResponse.newBuilder().addAllTasks(taken).build());
    }

    @Override
    public void notifyPromotionSuccess(io.mcctl.master.proto.v1.NotifyPromotionSuccessRequest request,
                                       StreamObserver<io.mcctl.master.proto.v1.NotifyPromotionSuccessResponse> observer) {
        Replica complete = orThrow(promoter().succeeded(request.getClientId(), request.getTenantId(), request.getKey(), request.getCrc32C()));
        replyWhenDurable(observer, io.mcctl.master.proto.v1.NotifyPromotionSuccessResponse.newBuilder().setReplica(complete).build());
    }

    @Override
    public void notifyPromotionFailure(io.mcctl.master.proto.v1.NotifyPromotionFailureRequest request,
                                       StreamObserver<io.mcctl.master.proto.v1.NotifyPromotionFailureResponse> observer) {
        orThrow(promoter().failed(request.getClientId(), request.getTenantId(), request.getKey(), request.getReason()));
        replyWhenDurable(observer, io.mcctl.master.proto.v1.NotifyPromotionFailureResponse.getDefaultInstance());
    }

    @Override
    public void listPromotions(io.mcctl.master.proto.v1.ListPromotionsRequest request,
                               StreamObserver<io.mcctl.master.proto.v1.ListPromotionsResponse> observer) {
        Promoter promoting = promoter();
        long[] inDram = promoting.memoryTotals();
        reply(observer, io.mcctl.master.proto.v1.ListPromotionsResponse.newBuilder().addAllTasks(promoting.list())
                .setAdmissionReads(promoting.admissionReads()).setQueuedTotal(pages.promotions().queuedTotal())
                .setSucceededTotal(pages.promotions().succeededTotal()).setFailedTotal(pages.promotions().failedTotal())
                .setMemoryObjects(inDram[0]).setMemoryBytes(inDram[1]).setMemoryEvictedTotal(promoting.memoryEvictedTotal()).build());
    }

    @Override
    public void promote(io.mcctl.master.proto.v1.PromoteRequest request, StreamObserver<io.mcctl.master.proto.v1.PromoteResponse> observer) {
        io.mcctl.master.proto.v1.PromotionTask task = orThrow(promoter().promote(request.getTenantId(), request.getKey()));
        replyWhenDurable(observer, io.mcctl.master.proto.v1.PromoteResponse.newBuilder().setTask(task).build());
    }
}
