package io.mcctl.master.server;

import static io.mcctl.master.server.CallOutcomes.checkBatch;
import static io.mcctl.master.server.CallOutcomes.keyError;
import static io.mcctl.master.server.CallOutcomes.orThrow;

import io.grpc.stub.StreamObserver;
import io.mcctl.master.proto.v1.AllocateDistributedPageRequest;
import io.mcctl.master.proto.v1.AllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageRequest;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.BatchFreeDistributedPageRequest;
import io.mcctl.master.proto.v1.BatchFreeDistributedPageResponse;
import io.mcctl.master.proto.v1.BatchRemoveRequest;
import io.mcctl.master.proto.v1.BatchRemoveResponse;
import io.mcctl.master.proto.v1.DropInFlightAllocationRequest;
import io.mcctl.master.proto.v1.DropInFlightAllocationResponse;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.FreeDistributedPageRequest;
import io.mcctl.master.proto.v1.FreeDistributedPageResponse;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessRequest;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessResponse;
import io.mcctl.master.proto.v1.RemoveRequest;
import io.mcctl.master.proto.v1.RemoveResponse;
import io.mcctl.master.proto.v1.RenewDistributedPageAllocationRequest;
import io.mcctl.master.proto.v1.RenewDistributedPageAllocationResponse;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.PackedPlacements;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.master.service.AnswerBarrier;
import io.mcctl.master.service.KvBlocks;
import io.mcctl.master.service.PageService;
import io.mcctl.master.service.Result;
import io.mcctl.master.service.Tenant;
import java.util.List;

/**
 * The page RPCs that change mappings: an offload's allocate, notify, renew and abort (free, drop), and remove. Each
 * answers once its changes are durable ({@link DurableAnswers}).
 *
 * <p>The batch operations are one method each, shared by the unary calls and the Session stream. Each checks the
 * request as a whole (throwing the call's status before anything changes), then acts key by key, with each distinct
 * tenant of the batch checked and resolved once. Stateless beyond its collaborators: thread-safe.
 */
final class PageWriteRpcs {

    private final PageService pages;
    private final DescriptorCodec codec;
    private final DurableAnswers answers;
    private final NodeRpcs nodes;

    PageWriteRpcs(PageService pages, DescriptorCodec codec, DurableAnswers answers, NodeRpcs nodes) {
        this.pages = pages;
        this.codec = codec;
        this.answers = answers;
        this.nodes = nodes;
    }

    void allocateDistributedPage(AllocateDistributedPageRequest request, StreamObserver<AllocateDistributedPageResponse> observer) {
        AnswerBarrier answer = new AnswerBarrier();
        Placement placement = orThrow(pages.allocate(pages.tenant(request.getTenantId()), request.getKey(), request.getSize(),
                request.getOverwrite(), request.getPin(), answer));
        answers.replyWhenDurable(observer, AllocateDistributedPageResponse.newBuilder().setDistributedDisk(codec.toWire(placement))
                .setDeadlineMs(pages.allocationDeadlineMillis()).build(), answer.sequence());
    }

    void batchAllocateDistributedPage(BatchAllocateDistributedPageRequest request,
                                      StreamObserver<BatchAllocateDistributedPageResponse> observer) {
        AnswerBarrier answer = new AnswerBarrier();
        BatchAllocateDistributedPageResponse response = batchAllocate(request, answer);
        answers.replyWhenDurable(observer, response, answer.sequence());
    }

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
                item.setDistributedDisk(codec.toWire(result.value())); // an unset status reads as OK
            } else {
                item.setStatus(keyError(result));
            }
            response.addResults(item);
        }
        return response.build();
    }

    void notifyDistributedDiskSuccess(NotifyDistributedDiskSuccessRequest request,
                                      StreamObserver<NotifyDistributedDiskSuccessResponse> observer) {
        AnswerBarrier answer = new AnswerBarrier();
        NotifyDistributedDiskSuccessResponse response = notifySuccess(request, answer);
        answers.replyWhenDurable(observer, response, answer.sequence());
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
                    codec.fromWire(request.getDescriptors(i)), kvBlocks(request, i), answer)));
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
    private static KvBlocks kvBlocks(NotifyDistributedDiskSuccessRequest request, int i) {
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
        return new KvBlocks(hashes, wire.hasParentBlockHash(), wire.getParentBlockHash(), wire.getBlockSize(), tokens, wire.getLoraName());
    }

    void renewDistributedPageAllocation(RenewDistributedPageAllocationRequest request,
                                        StreamObserver<RenewDistributedPageAllocationResponse> observer) {
        checkBatch(request.getKeysCount(), request.getTenantIdsCount(), "descriptors", request.getDescriptorsCount());
        RenewDistributedPageAllocationResponse.Builder response =
                RenewDistributedPageAllocationResponse.newBuilder().setDeadlineMs(pages.allocationDeadlineMillis());
        Tenant.Batch tenants = pages.batchTenants();
        for (int i = 0; i < request.getKeysCount(); i++) {
            response.addResults(keyError(pages.renew(tenants.of(request.getTenantIds(i)), request.getKeys(i), codec.fromWire(request.getDescriptors(i)))));
        }
        answers.replyWhenDurable(observer, response.build());
    }

    void freeDistributedPage(FreeDistributedPageRequest request, StreamObserver<FreeDistributedPageResponse> observer) {
        Placement expected = request.hasDistributedDisk() ? codec.fromWire(request.getDistributedDisk()) : null;
        orThrow(pages.free(request.getTenantId(), request.getKey(), expected));
        answers.replyWhenDurable(observer, FreeDistributedPageResponse.getDefaultInstance());
    }

    void batchFreeDistributedPage(BatchFreeDistributedPageRequest request, StreamObserver<BatchFreeDistributedPageResponse> observer) {
        answers.replyWhenDurable(observer, batchFree(request));
    }

    BatchFreeDistributedPageResponse batchFree(BatchFreeDistributedPageRequest request) {
        boolean withDescriptors = request.getDescriptorsCount() > 0;
        checkBatch(request.getKeysCount(), request.getTenantIdsCount(), withDescriptors ? "descriptors" : null, request.getDescriptorsCount());
        BatchFreeDistributedPageResponse.Builder response = BatchFreeDistributedPageResponse.newBuilder();
        Tenant.Batch tenants = pages.batchTenants();
        for (int i = 0; i < request.getKeysCount(); i++) {
            Placement expected = withDescriptors ? codec.fromWire(request.getDescriptors(i)) : null;
            response.addResults(keyError(pages.free(tenants.of(request.getTenantIds(i)), request.getKeys(i), expected)));
        }
        return response.build();
    }

    void dropInFlightAllocation(DropInFlightAllocationRequest request, StreamObserver<DropInFlightAllocationResponse> observer) {
        PageService.InFlightDrop dropped = orThrow(pages.dropInFlight(request.getTenantId(), request.getKey()));
        answers.replyWhenDurable(observer, DropInFlightAllocationResponse.newBuilder()
                .setDistributedDisk(codec.toWire(dropped.placement())).setQuarantinedUntilMs(dropped.quarantinedUntilMs()).build());
    }

    void remove(RemoveRequest request, StreamObserver<RemoveResponse> observer) {
        orThrow(removeWithDramCopy(request.getTenantId(), request.getKey(), pages.remove(request.getTenantId(), request.getKey())));
        answers.replyWhenDurable(observer, RemoveResponse.getDefaultInstance());
    }

    void batchRemove(BatchRemoveRequest request, StreamObserver<BatchRemoveResponse> observer) {
        answers.replyWhenDurable(observer, batchRemove(request));
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
        ClientRegistry registry = nodes.registryOrNull();
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
}
