package io.mcctl.master.server;

import static io.mcctl.master.server.CallOutcomes.checkBatch;
import static io.mcctl.master.server.CallOutcomes.keyError;
import static io.mcctl.master.server.CallOutcomes.orThrow;

import io.grpc.stub.StreamObserver;
import io.mcctl.master.proto.v1.BatchExistKeyRequest;
import io.mcctl.master.proto.v1.BatchExistKeyResponse;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.ExistKeyRequest;
import io.mcctl.master.proto.v1.ExistKeyResponse;
import io.mcctl.master.proto.v1.GetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.GetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.GetReplicaListRequest;
import io.mcctl.master.proto.v1.GetReplicaListResponse;
import io.mcctl.master.proto.v1.KeyInfo;
import io.mcctl.master.proto.v1.ListKeysRequest;
import io.mcctl.master.proto.v1.ListKeysResponse;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.master.proto.v1.MemoryReplicas;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaStatus;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.PackedPlacements;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.master.service.AnswerBarrier;
import io.mcctl.master.service.PageService;
import io.mcctl.master.service.Result;
import io.mcctl.master.service.Tenant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The page RPCs that read: mapping lookups, existence checks, replica lists and key listings. Each hands out leased
 * descriptors, and answers at once unless it met a commit the log does not hold yet ({@link DurableAnswers#answerLookup}).
 * The batch lookup is shared with the Session stream. Stateless beyond its collaborators: thread-safe.
 */
final class PageReadRpcs {

    /** Bytes of keys and paths a listing page carries by default, and at most. */
    static final long DEFAULT_LIST_BYTES = 1 << 20;
    static final long MAX_LIST_BYTES = 16 << 20;

    private final PageService pages;
    private final DescriptorCodec codec;
    private final DurableAnswers answers;
    private final NodeRpcs nodes;

    PageReadRpcs(PageService pages, DescriptorCodec codec, DurableAnswers answers, NodeRpcs nodes) {
        this.pages = pages;
        this.codec = codec;
        this.answers = answers;
        this.nodes = nodes;
    }

    void getDistributedPageMapping(GetDistributedPageMappingRequest request, StreamObserver<GetDistributedPageMappingResponse> observer) {
        AnswerBarrier wait = new AnswerBarrier();
        Result<Placement> found = pages.getMapping(pages.tenant(request.getTenantId()), request.getKey(), wait);
        answers.answerLookup(observer, wait, () -> {
            Placement placement = orThrow(wait.sequence() == 0 ? found : pages.getMapping(request.getTenantId(), request.getKey()));
            return GetDistributedPageMappingResponse.newBuilder().setDistributedDisk(codec.toWire(placement))
                    .setLeaseMs(pages.readLeaseMillis()).build();
        });
    }

    void batchGetDistributedPageMapping(BatchGetDistributedPageMappingRequest request,
                                        StreamObserver<BatchGetDistributedPageMappingResponse> observer) {
        AnswerBarrier wait = new AnswerBarrier();
        List<Result<Placement>> found = batchLookupResults(request, wait);
        answers.answerLookup(observer, wait, () -> batchLookup(request, wait.sequence() == 0 ? found : lookAgain(request, found)));
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
        return DurableAnswers.lookAgain(found, i -> pages.getMapping(tenants.of(request.getTenantIds(i)), request.getKeys(i)));
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
                item.setDistributedDisk(codec.toWire(result.value()));
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
        ClientRegistry registry = nodes.registryOrNull();
        if (registry == null || registry.memory().isEmpty()) {
            return null;
        }
        return registry.memory().readable(KeyRules.scopedKey(tenant, key), placement);
    }

    void existKey(ExistKeyRequest request, StreamObserver<ExistKeyResponse> observer) {
        AnswerBarrier wait = new AnswerBarrier();
        Result<Boolean> found = pages.exists(request.getTenantId(), request.getKey(), wait);
        answers.answerLookup(observer, wait, () -> ExistKeyResponse.newBuilder()
                .setExists(orThrow(wait.sequence() == 0 ? found : pages.exists(request.getTenantId(), request.getKey()))).build());
    }

    void batchExistKey(BatchExistKeyRequest request, StreamObserver<BatchExistKeyResponse> observer) {
        checkBatch(request.getKeysCount(), request.getTenantIdsCount(), null, 0);
        AnswerBarrier wait = new AnswerBarrier();
        Tenant.Batch tenants = pages.batchTenants();
        List<Result<Boolean>> found = pages.existsAll(tenants, request.getTenantIdsList(), request.getKeysList(), wait);
        answers.answerLookup(observer, wait, () -> {
            BatchExistKeyResponse.Builder response = BatchExistKeyResponse.newBuilder();
            for (Result<Boolean> result : wait.sequence() == 0 ? found
                    : DurableAnswers.lookAgain(found, i -> pages.exists(tenants.of(request.getTenantIds(i)), request.getKeys(i)))) {
                response.addExists(result.isOk() && result.value());
                response.addResults(keyError(result));
            }
            return response.build();
        });
    }

    void getReplicaList(GetReplicaListRequest request, StreamObserver<GetReplicaListResponse> observer) {
        // A descriptor handed out: leased like any mapping lookup, so the pages cannot be reused under its reader.
        AnswerBarrier wait = new AnswerBarrier();
        Result<PageService.KeyDetail> found = pages.getMappingDetail(request.getTenantId(), request.getKey(), wait);
        answers.answerLookup(observer, wait, () -> replicaList(request,
                wait.sequence() == 0 ? found : pages.getMappingDetail(request.getTenantId(), request.getKey())));
    }

    /** The answer of GetReplicaList once the key's DISTRIBUTED_DISK mapping is {@code mapped}. */
    private GetReplicaListResponse replicaList(GetReplicaListRequest request, Result<PageService.KeyDetail> mapped) {
        ClientRegistry registry = nodes.registryOrNull();
        List<Replica> owned = registry == null ? List.of() : registry.replicasOf(request.getTenantId(), request.getKey());
        if (!mapped.isOk() && mapped.error() != ErrorCode.OBJECT_NOT_FOUND) {
            orThrow(mapped);
        }
        // Listed best first: MEMORY > NOF > DISTRIBUTED_DISK > LOCAL_DISK > DISK (see ReplicaPriority).
        List<Replica> replicas = new ArrayList<>(owned);
        Replica inDram = registry == null ? null : registry.memory().readable(KeyRules.scopedKey(request.getTenantId(), request.getKey()),
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
                    .setDistributedDisk(codec.toWire(detail.placement())).build());
            response.setLeaseMs(pages.readLeaseMillis()).setLastUseAgeMs(detail.lastUseAgeMillis()).setPinned(detail.pinned());
        }
        return response.addAllReplicas(ReplicaPriority.sortBestFirst(replicas)).build();
    }

    void listKeys(ListKeysRequest request, StreamObserver<ListKeysResponse> observer) {
        int pageSize = request.getPageSize() == 0 ? 1000 : request.getPageSize();
        long maxBytes = request.getMaxBytes() == 0 ? DEFAULT_LIST_BYTES : request.getMaxBytes();
        if (maxBytes < 1 || maxBytes > MAX_LIST_BYTES) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "max_bytes " + request.getMaxBytes() + " is outside 1.." + MAX_LIST_BYTES
                    + " (0 means " + DEFAULT_LIST_BYTES + ")");
        }
        AnswerBarrier wait = new AnswerBarrier();
        PageService.KeyPage found = orThrow(pages.listKeys(request.getTenantId(), request.getPrefix(), pageSize, request.getPageToken(), maxBytes, wait));
        answers.answerLookup(observer, wait, () -> listed(wait.sequence() == 0 ? found : lookAgain(request.getTenantId(), found)));
    }

    /** A listing's page with each key that waited for the log looked up again: listed if found, left out if a miss now. */
    private PageService.KeyPage lookAgain(String tenant, PageService.KeyPage found) {
        List<Map.Entry<String, Placement>> keys = new ArrayList<>(found.keys().size());
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
            response.addKeys(KeyInfo.newBuilder().setKey(entry.getKey()).setDistributedDisk(codec.toWire(entry.getValue())));
        }
        return response.build();
    }
}
