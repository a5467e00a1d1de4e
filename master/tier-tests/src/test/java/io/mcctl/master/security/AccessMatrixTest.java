package io.mcctl.master.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.server.MasterServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every RPC of the service descriptor, called by a tenant token for its own tenant and for another, by a monitor,
 * by an admin, with no token and with an unknown one, against a real master on loopback: each refusal is the
 * right status and leaves the stats and every tenant's listing as they were.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AccessMatrixTest {

    /** What each RPC needs, written out here independently of MethodPermissions. */
    private static final Set<String> TENANT_WRITES = Set.of("AllocateDistributedPage", "BatchAllocateDistributedPage",
            "FreeDistributedPage", "BatchFreeDistributedPage", "NotifyDistributedDiskSuccess", "Remove", "BatchRemove",
            "RenewDistributedPageAllocation", "PutStart", "PutEnd", "PutRevoke", "Promote");
    private static final Set<String> TENANT_READS = Set.of("GetDistributedPageMapping", "BatchGetDistributedPageMapping", "ExistKey",
            "BatchExistKey", "GetReplicaList", "ListKeys");
    private static final Set<String> ANY_CALLER = Set.of("GetLayout", "GetStats", "GetMasterStatus", "Session", "RegisterClient", "Ping",
            "ListClients");
    /** Each request kind the Session stream carries, with the unary twin whose rule it must follow. */
    private static final Map<String, String> SESSION_KINDS = Map.of("allocate", "BatchAllocateDistributedPage",
            "notify", "NotifyDistributedDiskSuccess", "lookup", "BatchGetDistributedPageMapping", "free", "BatchFreeDistributedPage",
            "remove", "BatchRemove");
    private static final Set<String> MONITOR_OR_ADMIN = Set.of("GetBucketBitmap", "CheckPages", "ListPromotions");
    private static final Set<String> ADMIN_ONLY = Set.of("CreateSnapshot", "CheckPages(repair)", "DropInFlightAllocation", "SetTenantQuota",
            "GrowLayout", "PromotionObjectHeartbeat", "NotifyPromotionSuccess", "NotifyPromotionFailure");

    enum Caller { OWN_TENANT, OTHER_TENANT, MONITOR, ADMIN, NO_TOKEN, UNKNOWN_TOKEN }

    @TempDir
    Path dir;
    private MasterSecurity security;
    private MasterServer master;
    private MasterClient admin;
    private final List<ManagedChannel> channels = new ArrayList<>();
    private int serial;

    @BeforeEach
    void start() throws Exception {
        security = MasterSecurity.of(null, null, null, TokenFixture.write(dir, TokenFixture.standardTokens()));
        master = TokenFixture.start(dir.resolve("root"), security);
        admin = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(10), ClientSecurity.NONE.withToken(TokenFixture.ADMIN));
        for (String tenant : List.of("a", "b")) {
            for (int i = 0; i < 3; i++) {
                String key = "seed-" + i;
                DistributedDiskDescriptor d = admin.allocate(tenant, key, 5000, false).getDistributedDisk();
                admin.notifySuccess(List.of(key), List.of(tenant), List.of(d.toBuilder().setCrc32C(7).build()));
            }
        }
    }

    @AfterEach
    void stop() {
        channels.forEach(ManagedChannel::shutdownNow);
        admin.close();
        master.close();
    }

    @Test
    void every_rpc_of_the_service_for_every_caller() {
        List<String> failures = new ArrayList<>();
        int refused = 0;
        for (MethodDescriptor<?, ?> method : MasterServiceGrpc.getServiceDescriptor().getMethods()) {
            String name = method.getBareMethodName();
            if (method.getType() == MethodDescriptor.MethodType.BIDI_STREAMING) {
                assertEquals("Session", name, "a new stream: say here how each of its requests is checked");
                for (Map.Entry<String, String> kind : SESSION_KINDS.entrySet()) {
                    for (Caller caller : Caller.values()) {
                        // Each request on the stream is checked as its unary twin is, with the same outcome.
                        Object before = observable();
                        Status.Code got = callOnStream(kind.getKey(), kind.getValue(), caller);
                        refused += judge("Session " + kind.getKey(), caller, expected(kind.getValue(), caller), got, before, failures);
                    }
                }
                continue;
            }
            for (boolean repair : name.equals("CheckPages") ? new boolean[] {false, true} : new boolean[] {false}) {
                String rpc = repair ? "CheckPages(repair)" : name;
                for (Caller caller : Caller.values()) {
                    Object before = observable();
                    Status.Code got = call(method, caller, repair);
                    refused += judge(rpc, caller, expected(rpc, caller), got, before, failures);
                }
            }
        }
        assertEquals(List.of(), failures);
        assertTrue(refused > 40, "refusals checked: " + refused);
        assertTrue(master.pages().inFlightCount() > 0, "allowed allocations reached the service");
    }

    /** Adds to {@code failures} what is wrong with a call that ended with {@code got}; 1 when it was to be refused. */
    private int judge(String rpc, Caller caller, Status.Code expected, Status.Code got, Object before, List<String> failures) {
        if (expected != Status.Code.OK) {
            if (got != expected) {
                failures.add(rpc + " by " + caller + ": expected " + expected + ", got " + got);
            } else if (!before.equals(observable())) {
                failures.add(rpc + " by " + caller + " was refused but changed the stats or a listing");
            }
            return 1;
        }
        if (got == Status.Code.PERMISSION_DENIED || got == Status.Code.UNAUTHENTICATED) {
            failures.add(rpc + " by " + caller + ": expected to be allowed, got " + got);
        }
        return 0;
    }

    @Test
    void a_batch_with_one_tenant_not_allowed_is_refused_whole() {
        ManagedChannel channel = channel(TokenFixture.OWN);
        Object before = observable();
        StatusRuntimeException e = org.junit.jupiter.api.Assertions.assertThrows(StatusRuntimeException.class, () ->
                MasterServiceGrpc.newBlockingStub(channel).batchAllocateDistributedPage(
                        io.mcctl.master.proto.v1.BatchAllocateDistributedPageRequest.newBuilder()
                                .addKeys("x1").addTenantIds("a").addSizes(100)
                                .addKeys("x2").addTenantIds("b").addSizes(100).build()));
        assertEquals(Status.Code.PERMISSION_DENIED, e.getStatus().getCode());
        assertTrue(e.getStatus().getDescription().contains("may not use tenant 'b'"), e.getStatus().getDescription());
        assertEquals(before, observable());
        assertEquals(0, master.pages().inFlightCount(), "not even tenant a's key was allocated");
        assertEquals(6, master.pages().mappingCount());
    }

    @Test
    void a_stream_request_with_one_tenant_not_allowed_is_refused_whole_and_the_stream_goes_on() throws Exception {
        ManagedChannel channel = channel(TokenFixture.OWN);
        Object before = observable();
        AccessControl access = masterAccess();
        long refusedBefore = access.refusals(AccessControl.Refusal.tenant_not_allowed);
        java.util.concurrent.LinkedBlockingQueue<io.mcctl.master.proto.v1.SessionResponse> answers = new java.util.concurrent.LinkedBlockingQueue<>();
        io.grpc.stub.StreamObserver<io.mcctl.master.proto.v1.SessionRequest> requests = openStream(channel, answers);
        requests.onNext(io.mcctl.master.proto.v1.SessionRequest.newBuilder().setId(1).setAllocate(
                io.mcctl.master.proto.v1.BatchAllocateDistributedPageRequest.newBuilder()
                        .addKeys("x1").addTenantIds("a").addSizes(100)
                        .addKeys("x2").addTenantIds("b").addSizes(100)).build());
        io.mcctl.master.proto.v1.SessionResponse refused = answers.poll(20, TimeUnit.SECONDS);
        assertEquals(1, refused.getId());
        assertEquals(Status.Code.PERMISSION_DENIED.value(), refused.getError().getGrpcCode());
        assertTrue(refused.getError().getMessage().contains("may not use tenant 'b'"), refused.getError().getMessage());
        assertEquals(before, observable());
        assertEquals(0, master.pages().inFlightCount(), "not even tenant a's key was allocated");
        assertEquals(refusedBefore + 1, access.refusals(AccessControl.Refusal.tenant_not_allowed));
        // The same stream still serves what the token may do.
        requests.onNext(io.mcctl.master.proto.v1.SessionRequest.newBuilder().setId(2).setLookup(
                io.mcctl.master.proto.v1.BatchGetDistributedPageMappingRequest.newBuilder().addKeys("seed-0").addTenantIds("a")).build());
        io.mcctl.master.proto.v1.SessionResponse looked = answers.poll(20, TimeUnit.SECONDS);
        assertEquals(2, looked.getId());
        assertTrue(!looked.hasError() && looked.getLookup().getResults(0).hasDistributedDisk(), looked.toString());
        requests.onCompleted();
    }

    @Test
    void a_bundle_member_not_allowed_is_refused_by_its_id_and_the_others_are_served() throws Exception {
        ManagedChannel channel = channel(TokenFixture.OWN);
        AccessControl access = masterAccess();
        long refusedBefore = access.refusals(AccessControl.Refusal.tenant_not_allowed);
        java.util.concurrent.LinkedBlockingQueue<io.mcctl.master.proto.v1.SessionResponse> answers = new java.util.concurrent.LinkedBlockingQueue<>();
        io.grpc.stub.StreamObserver<io.mcctl.master.proto.v1.SessionRequest> requests = openStream(channel, answers);
        requests.onNext(io.mcctl.master.proto.v1.SessionRequest.newBuilder().setId(9).setBundle(io.mcctl.master.proto.v1.SessionRequests.newBuilder()
                .addRequests(io.mcctl.master.proto.v1.SessionRequest.newBuilder().setId(1).setAllocate(
                        io.mcctl.master.proto.v1.BatchAllocateDistributedPageRequest.newBuilder().addKeys("x2").addTenantIds("b").addSizes(100)))
                .addRequests(io.mcctl.master.proto.v1.SessionRequest.newBuilder().setId(2).setLookup(
                        io.mcctl.master.proto.v1.BatchGetDistributedPageMappingRequest.newBuilder().addKeys("seed-0").addTenantIds("a")))).build());
        Map<Long, io.mcctl.master.proto.v1.SessionResponse> byId = new java.util.HashMap<>();
        for (int i = 0; i < 2; i++) {
            io.mcctl.master.proto.v1.SessionResponse answer = answers.poll(20, TimeUnit.SECONDS);
            assertTrue(answer != null, "answer " + i + " did not come");
            byId.put(answer.getId(), answer);
        }
        assertEquals(Status.Code.PERMISSION_DENIED.value(), byId.get(1L).getError().getGrpcCode());
        assertTrue(byId.get(1L).getError().getMessage().contains("may not use tenant 'b'"), byId.get(1L).toString());
        assertTrue(!byId.get(2L).hasError() && byId.get(2L).getLookup().getResults(0).hasDistributedDisk(), byId.get(2L).toString());
        assertEquals(0, master.pages().inFlightCount(), "the refused allocation was not made");
        assertEquals(6, master.pages().mappingCount());
        assertEquals(refusedBefore + 1, access.refusals(AccessControl.Refusal.tenant_not_allowed));
        requests.onCompleted();
    }

    /** Opens a Session stream on {@code channel} whose answers (a bundle's opened up) go to {@code answers}. */
    private static io.grpc.stub.StreamObserver<io.mcctl.master.proto.v1.SessionRequest> openStream(ManagedChannel channel,
            java.util.concurrent.BlockingQueue<io.mcctl.master.proto.v1.SessionResponse> answers) {
        return MasterServiceGrpc.newStub(channel).withDeadlineAfter(20, TimeUnit.SECONDS).session(new io.grpc.stub.StreamObserver<>() {
            @Override
            public void onNext(io.mcctl.master.proto.v1.SessionResponse response) {
                answers.addAll(response.hasBundle() ? response.getBundle().getResponsesList() : List.of(response));
            }

            @Override
            public void onError(Throwable t) {
            }

            @Override
            public void onCompleted() {
            }
        });
    }

    @Test
    void refusals_are_counted_by_reason_and_the_client_gets_one_line() {
        AccessControl access = masterAccess();
        long before = access.refusals(AccessControl.Refusal.tenant_not_allowed);
        try (MasterClient own = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(5), ClientSecurity.NONE.withToken(TokenFixture.OWN))) {
            io.mcctl.master.client.MasterException e = org.junit.jupiter.api.Assertions.assertThrows(
                    io.mcctl.master.client.MasterException.class, () -> own.remove("b", "seed-0"));
            assertEquals(1, e.getMessage().lines().count());
            assertTrue(e.getMessage().contains("PERMISSION_DENIED") && e.getMessage().contains("'ingest-a' may not use tenant 'b'"), e.getMessage());
        }
        assertEquals(before + 1, access.refusals(AccessControl.Refusal.tenant_not_allowed));
        assertTrue(admin.exists("b", "seed-0"));
    }

    private AccessControl masterAccess() {
        return security.access();
    }

    /** Stats (but the age of the oldest use, which time changes) and every tenant's full listing (keys and descriptors). */
    private Object observable() {
        return List.of(admin.stats().toBuilder().clearOldestUseAgeMs().build(), admin.listKeys("a", "", 1000, "").getKeysList(),
                admin.listKeys("b", "", 1000, "").getKeysList());
    }

    private static Status.Code expected(String rpc, Caller caller) {
        if (caller == Caller.NO_TOKEN || caller == Caller.UNKNOWN_TOKEN) {
            return Status.Code.UNAUTHENTICATED;
        }
        boolean allowed;
        if (TENANT_WRITES.contains(rpc)) {
            allowed = caller == Caller.OWN_TENANT || caller == Caller.ADMIN;
        } else if (TENANT_READS.contains(rpc)) {
            allowed = caller != Caller.OTHER_TENANT; // the monitor's tenant is b, the one called for
        } else if (ANY_CALLER.contains(rpc)) {
            allowed = true;
        } else if (MONITOR_OR_ADMIN.contains(rpc)) {
            allowed = caller == Caller.MONITOR || caller == Caller.ADMIN;
        } else if (ADMIN_ONLY.contains(rpc)) {
            allowed = caller == Caller.ADMIN;
        } else {
            throw new AssertionError(rpc + " is new: say here who may call it (and in MethodPermissions)");
        }
        return allowed ? Status.Code.OK : Status.Code.PERMISSION_DENIED;
    }

    /** Calls {@code method} with a request built from its descriptor for the caller's tenant; the status it ended with. */
    private Status.Code call(MethodDescriptor<?, ?> method, Caller caller, boolean repair) {
        String token = tokenOf(caller);
        String tenant = caller == Caller.OWN_TENANT ? "a" : "b";
        @SuppressWarnings("unchecked")
        MethodDescriptor<Object, Object> typed = (MethodDescriptor<Object, Object>) method;
        Message prototype = (Message) ((MethodDescriptor.PrototypeMarshaller<?>) method.getRequestMarshaller()).getMessagePrototype();
        Message request = request(prototype, tenant, "m-" + serial++, repair);
        try {
            ClientCalls.blockingUnaryCall(channel(token), typed, CallOptions.DEFAULT.withDeadlineAfter(20, TimeUnit.SECONDS), request);
            return Status.Code.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        }
    }

    private static String tokenOf(Caller caller) {
        return switch (caller) {
            case OWN_TENANT, OTHER_TENANT -> TokenFixture.OWN;
            case MONITOR -> TokenFixture.MONITOR;
            case ADMIN -> TokenFixture.ADMIN;
            case NO_TOKEN -> null;
            case UNKNOWN_TOKEN -> "a-token-nobody-issued";
        };
    }

    /**
     * Opens a Session stream as the caller, sends one request of {@code kind} (built as for its unary twin), and returns
     * the status of its answer: the answer's error code, OK, or the status the stream ended with.
     */
    private Status.Code callOnStream(String kind, String twin, Caller caller) {
        MethodDescriptor<?, ?> twinMethod = MasterServiceGrpc.getServiceDescriptor().getMethods().stream()
                .filter(m -> m.getBareMethodName().equals(twin)).findFirst().orElseThrow();
        Message prototype = (Message) ((MethodDescriptor.PrototypeMarshaller<?>) twinMethod.getRequestMarshaller()).getMessagePrototype();
        Message inner = request(prototype, caller == Caller.OWN_TENANT ? "a" : "b", "s-" + serial++, false);
        io.mcctl.master.proto.v1.SessionRequest.Builder request = io.mcctl.master.proto.v1.SessionRequest.newBuilder().setId(41);
        request.setField(request.getDescriptorForType().findFieldByName(kind), inner);
        return firstAnswer(channel(tokenOf(caller)), request.build());
    }

    /** Sends one request on a new stream of {@code channel}; the status of its answer (or of the stream's end), then half-closes. */
    static Status.Code firstAnswer(ManagedChannel channel, io.mcctl.master.proto.v1.SessionRequest request) {
        java.util.concurrent.CompletableFuture<Status.Code> got = new java.util.concurrent.CompletableFuture<>();
        io.grpc.stub.StreamObserver<io.mcctl.master.proto.v1.SessionRequest> requests = MasterServiceGrpc.newStub(channel)
                .withDeadlineAfter(20, TimeUnit.SECONDS).session(new io.grpc.stub.StreamObserver<>() {
                    @Override
                    public void onNext(io.mcctl.master.proto.v1.SessionResponse response) {
                        assertEquals(request.getId(), response.getId());
                        got.complete(response.hasError() ? Status.fromCodeValue(response.getError().getGrpcCode()).getCode() : Status.Code.OK);
                    }

                    @Override
                    public void onError(Throwable t) {
                        got.complete(Status.fromThrowable(t).getCode());
                    }

                    @Override
                    public void onCompleted() {
                        got.complete(Status.Code.UNKNOWN); // ended without answering
                    }
                });
        requests.onNext(request);
        try {
            return got.get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("no answer on the stream", e);
        } finally {
            requests.onCompleted();
        }
    }

    /** A request with every tenant, key and size field filled: one key, or two keys of the same tenant for batches. */
    private Message request(Message prototype, String tenant, String key, boolean repair) {
        Message.Builder builder = prototype.newBuilderForType();
        for (FieldDescriptor field : prototype.getDescriptorForType().getFields()) {
            switch (field.getName()) {
                case "tenant_id" -> builder.setField(field, tenant);
                case "key" -> builder.setField(field, key);
                case "size" -> builder.setField(field, 5000L);
                case "tenant_ids" -> {
                    builder.addRepeatedField(field, tenant);
                    builder.addRepeatedField(field, tenant);
                }
                case "keys" -> {
                    builder.addRepeatedField(field, key + "-1");
                    builder.addRepeatedField(field, key + "-2");
                }
                case "sizes" -> {
                    builder.addRepeatedField(field, 5000L);
                    builder.addRepeatedField(field, 5000L);
                }
                case "repair" -> builder.setField(field, repair);
                default -> {
                    // descriptors and paging fields stay unset: the call may fail on its own terms, after the access check
                }
            }
        }
        return builder.build();
    }

    private final Map<String, ManagedChannel> byToken = new java.util.HashMap<>();

    private ManagedChannel channel(String token) {
        return byToken.computeIfAbsent(token == null ? "" : token, t -> {
            NettyChannelBuilder builder = NettyChannelBuilder.forTarget("127.0.0.1:" + master.port()).usePlaintext();
            if (!t.isEmpty()) {
                Metadata headers = new Metadata();
                headers.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + t);
                builder.intercept(MetadataUtils.newAttachHeadersInterceptor(headers));
            }
            ManagedChannel channel = builder.build();
            channels.add(channel);
            return channel;
        });
    }
}
