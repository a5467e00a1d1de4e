package io.mcctl.master.client;

import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.mcctl.master.proto.v1.AllocateDistributedPageRequest;
import io.mcctl.master.proto.v1.CheckPagesRequest;
import io.mcctl.master.proto.v1.CheckPagesResponse;
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
import io.mcctl.master.proto.v1.CreateSnapshotRequest;
import io.mcctl.master.proto.v1.CreateSnapshotResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.ExistKeyRequest;
import io.mcctl.master.proto.v1.FreeDistributedPageRequest;
import io.mcctl.master.proto.v1.GetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.GetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.GetBucketBitmapRequest;
import io.mcctl.master.proto.v1.GetBucketBitmapResponse;
import io.mcctl.master.proto.v1.GetLayoutRequest;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.master.proto.v1.GetReplicaListRequest;
import io.mcctl.master.proto.v1.GetReplicaListResponse;
import io.mcctl.master.proto.v1.GetStatsRequest;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.ListKeysRequest;
import io.mcctl.master.proto.v1.ListKeysResponse;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessRequest;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessResponse;
import io.mcctl.master.proto.v1.RemoveRequest;
import io.mcctl.master.proto.v1.SessionRequest;
import io.mcctl.master.proto.v1.SessionResponse;
import io.mcctl.master.protocol.WireErrors;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The master's client for any JVM program: every call has a deadline; calls that only read are retried
 * when the master is briefly unavailable, calls that change state never are (a retried allocate or notify
 * could act twice). Failures are {@link MasterException}s carrying the Mooncake error code.
 *
 * <p>Thread-safe; one instance per process is enough (gRPC multiplexes calls on one connection).
 */
public final class MasterClient implements AutoCloseable {

    public static final String DEFAULT_TARGET = "localhost:50051";
    private static final int READ_ATTEMPTS = 3;

    private final String target;
    private final ManagedChannel channel;
    private final MasterServiceGrpc.MasterServiceBlockingStub stub;
    private final MasterServiceGrpc.MasterServiceFutureStub futureStub;
    private final Duration callTimeout;
    private final ClientSecurity security;
    /** Null when the batch calls go unary. */
    private final MasterSession session;
    /** Set once the master turned the stream down as unknown (an older master): the batch calls go unary from then on. */
    private volatile boolean streamUnsupported;

    /** How the batch calls (allocate, notify, lookup, free, remove) travel: over one Session stream, or as unary calls. */
    public enum Transport { STREAM, UNARY }

    public MasterClient(String target, Duration callTimeout) {
        this(target, callTimeout, ClientSecurity.NONE);
    }

    /** @throws IllegalArgumentException when a TLS file cannot be used (one line naming it) */
    public MasterClient(String target, Duration callTimeout, ClientSecurity security) {
        this(target, callTimeout, security, defaultTransport(target));
    }

    /**
     * The Session stream for one master; unary calls for masters found through etcd, since only a unary call is sent
     * again to the new leader after a fail-over when that is safe (docs/ha.md), while a stream cut by the leader's
     * death fails every request on it at once, even those it never sent.
     */
    static Transport defaultTransport(String target) {
        return io.mcctl.master.etcd.EtcdTarget.names(target) ? Transport.UNARY : Transport.STREAM;
    }

    /** @throws IllegalArgumentException when a TLS file cannot be used (one line naming it) */
    public MasterClient(String target, Duration callTimeout, ClientSecurity security, Transport transport) {
        this.target = checkTarget(target);
        this.callTimeout = callTimeout;
        this.security = security;
        // etcd://... gives a channel that follows the leader (docs/ha.md); host:port, one to that master.
        this.channel = LeaderFollowingChannel.open(target, callTimeout, address -> {
            NettyChannelBuilder builder = NettyChannelBuilder.forTarget(address).maxInboundMessageSize(64 << 20)
                    .directExecutor(); // blocking stubs wait on the caller's thread; responses need no extra hand-off
            security.configure(builder);
            return builder.build();
        });
        this.stub = MasterServiceGrpc.newBlockingStub(channel);
        this.futureStub = MasterServiceGrpc.newFutureStub(channel);
        this.session = transport == Transport.STREAM ? new MasterSession(MasterServiceGrpc.newStub(channel)) : null;
    }

    /** How this client's batch calls travel. */
    public Transport transport() {
        return session == null ? Transport.UNARY : Transport.STREAM;
    }

    public MasterClient(String target) {
        this(target, Duration.ofSeconds(10));
    }

    /** Checks that {@code target} has the form host:port, or etcd://host:port[,host:port...][/prefix] for a cluster's leader. */
    public static String checkTarget(String target) {
        if (io.mcctl.master.etcd.EtcdTarget.names(target)) {
            io.mcctl.master.etcd.EtcdTarget.parse(target);
            return target;
        }
        int colon = target == null ? -1 : target.lastIndexOf(':');
        boolean ok = colon > 0 && colon < target.length() - 1;
        if (ok) {
            try {
                int port = Integer.parseInt(target.substring(colon + 1));
                ok = port > 0 && port <= 65535;
            } catch (NumberFormatException e) {
                ok = false;
            }
        }
        if (!ok) {
            throw new IllegalArgumentException("invalid master address '" + target + "': allowed is host:port, e.g. " + DEFAULT_TARGET
                    + ", or etcd://host:port[,host:port...][/prefix] for the leader of a master cluster");
        }
        return target;
    }

    /** This master's role under high availability, its epoch and log position (role SINGLE without --ha). */
    public io.mcctl.master.proto.v1.GetMasterStatusResponse masterStatus() {
        return read(() -> stub().getMasterStatus(io.mcctl.master.proto.v1.GetMasterStatusRequest.getDefaultInstance()));
    }

    public String target() {
        return target;
    }

    private MasterServiceGrpc.MasterServiceBlockingStub stub() {
        return stub.withDeadlineAfter(callTimeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    private <T> T mutate(Supplier<T> call) {
        try {
            return call.get();
        } catch (StatusRuntimeException e) {
            reconnectSoonIfLost(e);
            throw translate(e);
        }
    }

    private <T> T read(Supplier<T> call) {
        for (int attempt = 1; ; attempt++) {
            try {
                return call.get();
            } catch (StatusRuntimeException e) {
                reconnectSoonIfLost(e);
                if (!connectionLost(e) || attempt == READ_ATTEMPTS) {
                    throw translate(e);
                }
                try {
                    Thread.sleep(100L * attempt);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw translate(e);
                }
            }
        }
    }

    /**
     * After a call failed for want of a connection, the channel tries to connect again at once rather than after its
     * backoff, which grows to seconds while a master is down: a master restarted meanwhile is reached by the next
     * attempt, not refused until the backoff runs out.
     */
    private void reconnectSoonIfLost(StatusRuntimeException e) {
        if (connectionLost(e)) {
            channel.resetConnectBackoff();
        }
    }

    /**
     * Whether the call failed because the connection did: UNAVAILABLE, or UNKNOWN caused by a closed channel, which is
     * how gRPC's Netty transport reports a connection that closed under a call (a master killed mid-call, say).
     */
    static boolean connectionLost(StatusRuntimeException e) {
        Status.Code code = e.getStatus().getCode();
        if (code == Status.Code.UNAVAILABLE) {
            return !WireErrors.isChangesRefused(e); // that master answered: it takes no changes
        }
        if (code != Status.Code.UNKNOWN) {
            return false;
        }
        for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
            if (cause instanceof java.nio.channels.ClosedChannelException) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether a failed call never reached the master's service: UNAVAILABLE because no connection could be made (refused,
     * or no route) or because the master refused it before any method ran (still recovering its state, a standby), as
     * opposed to a connection that closed while the call was out, after which the master may have acted.
     */
    static boolean notSent(StatusRuntimeException e) {
        if (e.getStatus().getCode() != Status.Code.UNAVAILABLE) {
            return false;
        }
        if (WireErrors.isNotServed(e)) {
            return true;
        }
        for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
            if (cause instanceof java.net.ConnectException || cause instanceof java.net.NoRouteToHostException
                    || cause instanceof java.net.UnknownHostException) {
                return true;
            }
        }
        return false;
    }

    private MasterException translate(StatusRuntimeException e) {
        Status.Code code = e.getStatus().getCode();
        if (LeaderFollowingChannel.earlierAttemptMayHaveLanded(e)) {
            return MasterException.earlierAttemptMayHaveLanded(WireErrors.codeOf(e), "the outcome of the call to the master at " + target
                    + " is unknown: " + e.getStatus().getDescription(), e);
        }
        if (WireErrors.isChangesRefused(e)) {
            return new MasterException(ErrorCode.INTERNAL_ERROR, "the master at " + target + " takes no changes: " + e.getStatus().getDescription(),
                    true, e);
        }
        if (connectionLost(e)) {
            Throwable root = e;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            String reason = root != e && root.getMessage() != null ? root.getMessage()
                    : e.getStatus().getDescription() != null ? e.getStatus().getDescription() : "unavailable";
            boolean handshake = handshakeFailed(e);
            String tlsProblem = tlsProblem(handshake, reason);
            if (tlsProblem != null) {
                String message = "TLS with the master at " + target + " failed: " + tlsProblem;
                return handshake ? MasterException.tlsHandshake(message, e) : new MasterException(ErrorCode.INTERNAL_ERROR, message, true, e);
            }
            boolean notSent = notSent(e);
            return new MasterException(ErrorCode.INTERNAL_ERROR, "cannot reach the master at " + target + ": " + reason
                    + " (is 'mcctl master start' running there? set --master or MCCTL_MASTER)", true, notSent, !notSent, e);
        }
        if (code == Status.Code.DEADLINE_EXCEEDED) {
            return new MasterException(ErrorCode.INTERNAL_ERROR, "the master at " + target + " did not answer within "
                    + callTimeout.toMillis() + " ms", true, e);
        }
        if (code == Status.Code.UNAUTHENTICATED || code == Status.Code.PERMISSION_DENIED) {
            return new MasterException(ErrorCode.INTERNAL_ERROR, "the master at " + target + " refused the call (" + code + "): "
                    + e.getStatus().getDescription(), false, e);
        }
        return new MasterException(WireErrors.codeOf(e), WireErrors.messageOf(e), false, e);
    }

    /** Whether the connection under a failed call broke in its TLS handshake: an SSLException below the status. */
    private static boolean handshakeFailed(StatusRuntimeException e) {
        for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
            if (cause instanceof javax.net.ssl.SSLException) {
                return true;
            }
        }
        return false;
    }

    /**
     * What went wrong with TLS, for people, or null when the failure was not about TLS.
     *
     * @param handshake the TLS handshake failed ({@link #handshakeFailed}); without it only {@code reason} tells
     */
    private String tlsProblem(boolean handshake, String reason) {
        String lower = reason.toLowerCase(java.util.Locale.ROOT);
        if (!handshake && !lower.contains("ssl") && !lower.contains("tls")) {
            return security.tls() || !lower.contains("network closed") ? null
                    : reason + " (plaintext: if the master serves TLS, pass --tls-ca with the CA that signed its certificate)";
        }
        if (lower.contains("expired")) {
            return "a certificate has expired (" + reason + "); renew it";
        }
        if (lower.contains("pkix") || lower.contains("certification path") || lower.contains("unable to find valid")) {
            return "the master's certificate is not signed by a CA in " + security.tlsCa() + " (" + reason + ")";
        }
        if (lower.contains("certificate_required") || lower.contains("bad_certificate") || lower.contains("handshake_failure")) {
            return reason + " (the master wants a client certificate it trusts: pass --tls-cert and --tls-key)";
        }
        return reason;
    }

    // ---- calls ----

    public AllocateDistributedPageResponse allocate(String tenant, String key, long size, boolean overwrite) {
        return mutate(() -> stub().allocateDistributedPage(AllocateDistributedPageRequest.newBuilder()
                .setTenantId(tenant).setKey(key).setSize(size).setOverwrite(overwrite).build()));
    }

    public BatchAllocateDistributedPageResponse batchAllocate(List<String> keys, List<String> tenants, List<Long> sizes, boolean overwrite) {
        return batchAllocate(keys, tenants, sizes, overwrite, false);
    }

    /** {@code pin}: every object of the batch is soft-pinned once committed. */
    public BatchAllocateDistributedPageResponse batchAllocate(List<String> keys, List<String> tenants, List<Long> sizes, boolean overwrite,
                                                              boolean pin) {
        return batchAllocate(BatchAllocateDistributedPageRequest.newBuilder()
                .addAllKeys(keys).addAllTenantIds(tenants).addAllSizes(sizes).setOverwrite(overwrite).setPin(pin).build());
    }

    private BatchAllocateDistributedPageResponse batchAllocate(BatchAllocateDistributedPageRequest request) {
        return mutate(() -> viaStream(SessionRequest.newBuilder().setAllocate(request), SessionResponse::getAllocate,
                () -> stub().batchAllocateDistributedPage(request)));
    }

    /**
     * {@link #batchAllocate} answered packed: the placements in one array ({@code PackedPlacements.of(
     * response.getPlacements(), keys.size())}, CRC32C 0) and every failed key's KeyError by index. A master that does
     * not know the flag answers unpacked: check the placements' length before reading them.
     */
    public BatchAllocateDistributedPageResponse batchAllocatePacked(List<String> keys, List<String> tenants, List<Long> sizes,
                                                                    boolean overwrite, boolean pin) {
        return batchAllocate(BatchAllocateDistributedPageRequest.newBuilder().addAllKeys(keys)
                .addAllTenantIds(tenants).addAllSizes(sizes).setOverwrite(overwrite).setPin(pin).setPacked(true).build());
    }

    public void free(String tenant, String key, DistributedDiskDescriptor allocation) {
        FreeDistributedPageRequest.Builder request = FreeDistributedPageRequest.newBuilder().setTenantId(tenant).setKey(key);
        if (allocation != null) {
            request.setDistributedDisk(allocation);
        }
        mutate(() -> stub().freeDistributedPage(request.build()));
    }

    public BatchFreeDistributedPageResponse batchFree(List<String> keys, List<String> tenants, List<DistributedDiskDescriptor> allocations) {
        BatchFreeDistributedPageRequest request = BatchFreeDistributedPageRequest.newBuilder()
                .addAllKeys(keys).addAllTenantIds(tenants).addAllDescriptors(allocations).build();
        return mutate(() -> viaStream(SessionRequest.newBuilder().setFree(request), SessionResponse::getFree,
                () -> stub().batchFreeDistributedPage(request)));
    }

    public NotifyDistributedDiskSuccessResponse notifySuccess(List<String> keys, List<String> tenants,
                                                              List<DistributedDiskDescriptor> written) {
        return notifySuccess(NotifyDistributedDiskSuccessRequest.newBuilder()
                .addAllKeys(keys).addAllTenantIds(tenants).addAllDescriptors(written).build());
    }

    /**
     * {@link #notifySuccess(List, List, List)} committing the engine KV blocks each object holds ({@code kvBlocks}: null,
     * or one per key, an empty message for a key without), announced to KV-aware routers.
     */
    public NotifyDistributedDiskSuccessResponse notifySuccess(List<String> keys, List<String> tenants, List<DistributedDiskDescriptor> written,
                                                              List<io.mcctl.master.proto.v1.KvBlocks> kvBlocks) {
        NotifyDistributedDiskSuccessRequest.Builder request = NotifyDistributedDiskSuccessRequest.newBuilder()
                .addAllKeys(keys).addAllTenantIds(tenants).addAllDescriptors(written);
        if (kvBlocks != null) {
            request.addAllKvBlocks(kvBlocks);
        }
        return notifySuccess(request.build());
    }

    /** {@link #notifySuccessPacked(List, List, ByteString)} with the engine KV blocks of each object (null: none). */
    public NotifyDistributedDiskSuccessResponse notifySuccessPacked(List<String> keys, List<String> tenants, ByteString written,
                                                                    List<io.mcctl.master.proto.v1.KvBlocks> kvBlocks) {
        NotifyDistributedDiskSuccessRequest.Builder request = NotifyDistributedDiskSuccessRequest.newBuilder()
                .addAllKeys(keys).addAllTenantIds(tenants).setPlacements(written);
        if (kvBlocks != null) {
            request.addAllKvBlocks(kvBlocks);
        }
        return notifySuccess(request.build());
    }

    private NotifyDistributedDiskSuccessResponse notifySuccess(NotifyDistributedDiskSuccessRequest request) {
        return mutate(() -> viaStream(SessionRequest.newBuilder().setNotify(request), SessionResponse::getNotify,
                () -> stub().notifyDistributedDiskSuccess(request)));
    }

    /**
     * {@link #notifySuccess} with the placements packed as a packed allocation answered them, each with the CRC32C of
     * what was written; the answer holds the errors of the keys not committed alone, by index.
     */
    public NotifyDistributedDiskSuccessResponse notifySuccessPacked(List<String> keys, List<String> tenants, ByteString written) {
        return notifySuccess(NotifyDistributedDiskSuccessRequest.newBuilder()
                .addAllKeys(keys).addAllTenantIds(tenants).setPlacements(written).build());
    }

    /** Extends allocations still held to a full deadline from now; see the RPC. Never retried here. */
    public io.mcctl.master.proto.v1.RenewDistributedPageAllocationResponse renew(List<String> keys, List<String> tenants,
                                                                               List<DistributedDiskDescriptor> allocations) {
        return mutate(() -> stub().renewDistributedPageAllocation(io.mcctl.master.proto.v1.RenewDistributedPageAllocationRequest.newBuilder()
                .addAllKeys(keys).addAllTenantIds(tenants).addAllDescriptors(allocations).build()));
    }

    /** Admin: ends the in-flight allocation of (tenant, key); its pages stay quarantined until its deadline plus the grace. */
    public io.mcctl.master.proto.v1.DropInFlightAllocationResponse dropInFlight(String tenant, String key) {
        return mutate(() -> stub().dropInFlightAllocation(io.mcctl.master.proto.v1.DropInFlightAllocationRequest.newBuilder()
                .setTenantId(tenant).setKey(key).build()));
    }

    public GetDistributedPageMappingResponse getMapping(String tenant, String key) {
        return read(() -> stub().getDistributedPageMapping(GetDistributedPageMappingRequest.newBuilder()
                .setTenantId(tenant).setKey(key).build()));
    }

    public BatchGetDistributedPageMappingResponse batchGetMapping(List<String> keys, List<String> tenants) {
        return batchGetMapping(BatchGetDistributedPageMappingRequest.newBuilder().addAllKeys(keys).addAllTenantIds(tenants).build());
    }

    /**
     * {@link #batchGetMapping} answered packed: the placements in one array ({@code PackedPlacements.of(
     * response.getPlacements(), keys.size())}), errors other than OBJECT_NOT_FOUND and MEMORY replicas by key index.
     */
    public BatchGetDistributedPageMappingResponse batchGetMappingPacked(List<String> keys, List<String> tenants) {
        return batchGetMapping(BatchGetDistributedPageMappingRequest.newBuilder().addAllKeys(keys).addAllTenantIds(tenants)
                .setPacked(true).build());
    }

    private BatchGetDistributedPageMappingResponse batchGetMapping(BatchGetDistributedPageMappingRequest request) {
        return read(() -> viaStream(SessionRequest.newBuilder().setLookup(request), SessionResponse::getLookup,
                () -> stub().batchGetDistributedPageMapping(request)));
    }

    /**
     * Starts a batch mapping lookup and returns at once, so a reader can fetch the next batch's mappings
     * while it reads the current one. {@link #await} turns the future into the response or a MasterException.
     */
    public ListenableFuture<BatchGetDistributedPageMappingResponse> batchGetMappingAsync(List<String> keys, List<String> tenants) {
        return batchGetMappingAsync(keys, tenants, false);
    }

    /** {@link #batchGetMappingAsync}, answered packed when {@code packed} (see {@link #batchGetMappingPacked}). */
    public ListenableFuture<BatchGetDistributedPageMappingResponse> batchGetMappingAsync(List<String> keys, List<String> tenants, boolean packed) {
        BatchGetDistributedPageMappingRequest request = BatchGetDistributedPageMappingRequest.newBuilder()
                .addAllKeys(keys).addAllTenantIds(tenants).setPacked(packed).build();
        if (session == null || streamUnsupported) {
            return futureStub.withDeadlineAfter(callTimeout.toMillis(), TimeUnit.MILLISECONDS).batchGetDistributedPageMapping(request);
        }
        return com.google.common.util.concurrent.Futures.transform(session.send(SessionRequest.newBuilder().setLookup(request)),
                response -> {
                    if (response.hasError()) {
                        throw MasterSession.toException(response.getError());
                    }
                    return response.getLookup();
                }, Runnable::run);
    }

    /**
     * A batch call over the stream when this client uses one, else (or when the master does not know the stream) as the
     * unary call {@code unary}. Throws the StatusRuntimeException the unary call would have thrown.
     */
    private <T> T viaStream(SessionRequest.Builder request, java.util.function.Function<SessionResponse, T> answer, Supplier<T> unary) {
        if (session == null || streamUnsupported) {
            return unary.get();
        }
        SessionResponse response;
        com.google.common.util.concurrent.SettableFuture<SessionResponse> call = session.send(request);
        try {
            response = call.get(callTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            call.cancel(false);
            throw Status.DEADLINE_EXCEEDED.withDescription("no answer on the stream within " + callTimeout.toMillis() + " ms").asRuntimeException();
        } catch (InterruptedException e) {
            call.cancel(false);
            Thread.currentThread().interrupt();
            throw Status.CANCELLED.withDescription("interrupted").withCause(e).asRuntimeException();
        } catch (ExecutionException e) {
            StatusRuntimeException failure = e.getCause() instanceof StatusRuntimeException s ? s
                    : Status.fromThrowable(e.getCause()).asRuntimeException();
            if (failure.getStatus().getCode() == Status.Code.UNIMPLEMENTED) {
                streamUnsupported = true; // nothing was done: the master never knew the call
                return unary.get();
            }
            throw failure;
        }
        if (response.hasError()) {
            throw MasterSession.toException(response.getError());
        }
        return answer.apply(response);
    }

    /** The result of a call started with one of the async methods. */
    public <T> T await(ListenableFuture<T> call) {
        try {
            return call.get(callTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS); // a unary call's own deadline ends it first
        } catch (java.util.concurrent.TimeoutException e) {
            call.cancel(false);
            throw translate(Status.DEADLINE_EXCEEDED.asRuntimeException());
        } catch (InterruptedException e) {
            call.cancel(true);
            Thread.currentThread().interrupt();
            throw new MasterException(ErrorCode.INTERNAL_ERROR, "interrupted while waiting for the master at " + target, false, e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof StatusRuntimeException status) {
                reconnectSoonIfLost(status);
                throw translate(status);
            }
            throw new MasterException(ErrorCode.INTERNAL_ERROR, "call to the master at " + target + " failed: " + e.getCause(), false, e);
        }
    }

    public void remove(String tenant, String key) {
        mutate(() -> stub().remove(RemoveRequest.newBuilder().setTenantId(tenant).setKey(key).build()));
    }

    public BatchRemoveResponse batchRemove(List<String> keys, List<String> tenants) {
        BatchRemoveRequest request = BatchRemoveRequest.newBuilder().addAllKeys(keys).addAllTenantIds(tenants).build();
        return mutate(() -> viaStream(SessionRequest.newBuilder().setRemove(request), SessionResponse::getRemove,
                () -> stub().batchRemove(request)));
    }

    public boolean exists(String tenant, String key) {
        return read(() -> stub().existKey(ExistKeyRequest.newBuilder().setTenantId(tenant).setKey(key).build())).getExists();
    }

    public BatchExistKeyResponse batchExists(List<String> keys, List<String> tenants) {
        return read(() -> stub().batchExistKey(BatchExistKeyRequest.newBuilder().addAllKeys(keys).addAllTenantIds(tenants).build()));
    }

    public GetReplicaListResponse replicaList(String tenant, String key) {
        return read(() -> stub().getReplicaList(GetReplicaListRequest.newBuilder().setTenantId(tenant).setKey(key).build()));
    }

    public ListKeysResponse listKeys(String tenant, String prefix, int pageSize, String pageToken) {
        return read(() -> stub().listKeys(ListKeysRequest.newBuilder().setTenantId(tenant).setPrefix(prefix)
                .setPageSize(pageSize).setPageToken(pageToken).build()));
    }

    public GetLayoutResponse layout() {
        return read(() -> stub().getLayout(GetLayoutRequest.getDefaultInstance()));
    }

    /** The bucket layout that a master's {@link #layout()} answer describes. */
    public static BucketLayout bucketLayout(GetLayoutResponse layout) {
        return new BucketLayout(Path.of(layout.getRootDir()), layout.getBucketCount(), layout.getPageSize(), layout.getBucketSize());
    }

    /** Asks the master for a snapshot now; waits up to ten minutes, whatever the call timeout. */
    public CreateSnapshotResponse createSnapshot() {
        return mutate(() -> stub.withDeadlineAfter(10, TimeUnit.MINUTES).createSnapshot(CreateSnapshotRequest.getDefaultInstance()));
    }

    public GetBucketBitmapResponse bucketBitmap(int bucket) {
        return read(() -> stub().getBucketBitmap(GetBucketBitmapRequest.newBuilder().setBucket(bucket).build()));
    }

    /**
     * Checks every bucket's bitmap against the claims on its pages; with {@code repair}, fixes false-free pages and
     * leaked ranges at least {@code minAgeMs} old (negative: the master's allocation deadline). Holds the master's
     * serving for the check: the deadline is this client's call timeout.
     */
    public CheckPagesResponse checkPages(boolean repair, long minAgeMs, int maxRanges) {
        CheckPagesRequest request = CheckPagesRequest.newBuilder().setRepair(repair).setMinAgeMs(minAgeMs).setMaxRanges(maxRanges).build();
        return repair ? mutate(() -> stub().checkPages(request)) : read(() -> stub().checkPages(request));
    }

    /** Admin: a tenant's byte quota (0 removes it). */
    public io.mcctl.master.proto.v1.SetTenantQuotaResponse setQuota(String tenant, long maxBytes) {
        return mutate(() -> stub().setTenantQuota(io.mcctl.master.proto.v1.SetTenantQuotaRequest.newBuilder().setTenantId(tenant)
                .setMaxBytes(maxBytes).build()));
    }

    /** Admin: grows every bucket to {@code bucketSize} bytes; waits up to an hour (extending many files), whatever the call timeout. */
    public io.mcctl.master.proto.v1.GrowLayoutResponse growLayout(long bucketSize, boolean preallocate) {
        return mutate(() -> stub.withDeadlineAfter(1, TimeUnit.HOURS).growLayout(io.mcctl.master.proto.v1.GrowLayoutRequest.newBuilder()
                .setBucketSize(bucketSize).setPreallocate(preallocate).build()));
    }

    public GetStatsResponse stats() {
        return read(() -> stub().getStats(GetStatsRequest.getDefaultInstance()));
    }

    // ---- nodes and the owner-coupled LOCAL_DISK path ----

    /** RegisterClient; returns the master's TTL in milliseconds. Never retried (a second try would meet the first). */
    public long registerClient(String clientId, String endpoint, String localDiskDir, boolean pageMode) {
        return registerClient(clientId, endpoint, localDiskDir, pageMode, 0);
    }

    /** RegisterClient of a node with a DRAM segment of {@code memoryBytes} (0: none); returns the TTL in milliseconds. */
    public long registerClient(String clientId, String endpoint, String localDiskDir, boolean pageMode, long memoryBytes) {
        return mutate(() -> stub().registerClient(io.mcctl.master.proto.v1.RegisterClientRequest.newBuilder().setClientId(clientId)
                .setTransportEndpoint(endpoint).setLocalDiskDir(localDiskDir).setPageMode(pageMode).setMemoryBytes(memoryBytes)
                .build())).getTtlMs();
    }

    public io.mcctl.master.proto.v1.PingResponse ping(String clientId) {
        return mutate(() -> stub().ping(io.mcctl.master.proto.v1.PingRequest.newBuilder().setClientId(clientId).build()));
    }

    /** The deadline of each call. */
    public Duration callTimeout() {
        return callTimeout;
    }

    /** The PROCESSING replica started; for MEMORY, where in the client's segment to write. */
    public io.mcctl.master.proto.v1.Replica putStart(String clientId, String tenant, String key, long size, io.mcctl.master.proto.v1.ReplicaType type) {
        return mutate(() -> stub().putStart(io.mcctl.master.proto.v1.PutStartRequest.newBuilder().setClientId(clientId).setTenantId(tenant)
                .setKey(key).setSize(size).setReplicaType(type).build())).getReplica();
    }

    /** Promotion tasks handed to this node now (0: the master's default number). */
    public List<io.mcctl.master.proto.v1.PromotionTask> promotionHeartbeat(String clientId, int maxTasks) {
        return mutate(() -> stub().promotionObjectHeartbeat(io.mcctl.master.proto.v1.PromotionObjectHeartbeatRequest.newBuilder()
                .setClientId(clientId).setMaxTasks(maxTasks).build())).getTasksList();
    }

    /** The staged copy holds the source's bytes: answers the COMPLETE MEMORY replica. */
    public io.mcctl.master.proto.v1.Replica notifyPromotionSuccess(String clientId, String tenant, String key, int crc32c) {
        return mutate(() -> stub().notifyPromotionSuccess(io.mcctl.master.proto.v1.NotifyPromotionSuccessRequest.newBuilder()
                .setClientId(clientId).setTenantId(tenant).setKey(key).setCrc32C(crc32c).build())).getReplica();
    }

    public void notifyPromotionFailure(String clientId, String tenant, String key, String reason) {
        mutate(() -> stub().notifyPromotionFailure(io.mcctl.master.proto.v1.NotifyPromotionFailureRequest.newBuilder()
                .setClientId(clientId).setTenantId(tenant).setKey(key).setReason(reason).build()));
    }

    public io.mcctl.master.proto.v1.ListPromotionsResponse listPromotions() {
        return read(() -> stub().listPromotions(io.mcctl.master.proto.v1.ListPromotionsRequest.getDefaultInstance()));
    }

    /** Queues the object for promotion now: the task queued, or the one already queued for it. */
    public io.mcctl.master.proto.v1.PromotionTask promote(String tenant, String key) {
        return mutate(() -> stub().promote(io.mcctl.master.proto.v1.PromoteRequest.newBuilder().setTenantId(tenant).setKey(key).build()))
                .getTask();
    }

    public void putEnd(String clientId, String tenant, String key, io.mcctl.master.proto.v1.ReplicaType type, int crc32c) {
        mutate(() -> stub().putEnd(io.mcctl.master.proto.v1.PutEndRequest.newBuilder().setClientId(clientId).setTenantId(tenant)
                .setKey(key).setReplicaType(type).setCrc32C(crc32c).build()));
    }

    public void putRevoke(String clientId, String tenant, String key, io.mcctl.master.proto.v1.ReplicaType type) {
        mutate(() -> stub().putRevoke(io.mcctl.master.proto.v1.PutRevokeRequest.newBuilder().setClientId(clientId).setTenantId(tenant)
                .setKey(key).setReplicaType(type).build()));
    }

    public io.mcctl.master.proto.v1.ListClientsResponse listClients() {
        return read(() -> stub().listClients(io.mcctl.master.proto.v1.ListClientsRequest.getDefaultInstance()));
    }

    @Override
    public void close() {
        if (session != null) {
            session.close();
        }
        channel.shutdown();
        try {
            if (!channel.awaitTermination(5, TimeUnit.SECONDS)) {
                channel.shutdownNow();
            }
        } catch (InterruptedException e) {
            channel.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }
}
