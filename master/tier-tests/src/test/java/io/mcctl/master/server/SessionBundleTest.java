package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.mcctl.master.protocol.BatchLimits;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageRequest;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.BatchRemoveRequest;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessRequest;
import io.mcctl.master.proto.v1.SessionRequest;
import io.mcctl.master.proto.v1.SessionRequests;
import io.mcctl.master.proto.v1.SessionResponse;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bundles on the Session stream against a real master: each request of a bundle is done and answered by its id as
 * if it had come alone, bad requests in a bundle fail alone, and callers of one client that send together share
 * messages without any answer going astray.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SessionBundleTest {

    @TempDir
    Path dir;

    /** A raw stream: what is sent goes as built, answers (bundles opened up) are queued by id. */
    private static final class RawStream implements AutoCloseable {
        final ManagedChannel channel;
        final StreamObserver<SessionRequest> requests;
        final LinkedBlockingQueue<SessionResponse> answers = new LinkedBlockingQueue<>();
        /** How many messages came back, and how many of them were bundles. */
        int messages;
        int bundles;

        RawStream(String target) {
            channel = NettyChannelBuilder.forTarget(target).usePlaintext().build();
            requests = MasterServiceGrpc.newStub(channel).session(new StreamObserver<>() {
                @Override
                public void onNext(SessionResponse response) {
                    synchronized (RawStream.this) {
                        messages++;
                        if (response.hasBundle()) {
                            bundles++;
                        }
                    }
                    if (response.hasBundle()) {
                        answers.addAll(response.getBundle().getResponsesList());
                    } else {
                        answers.add(response);
                    }
                }

                @Override
                public void onError(Throwable t) {
                }

                @Override
                public void onCompleted() {
                }
            });
        }

        /** The next {@code count} answers, by id; fails when one id is answered twice. */
        Map<Long, SessionResponse> take(int count) throws InterruptedException {
            Map<Long, SessionResponse> byId = new HashMap<>();
            for (int i = 0; i < count; i++) {
                SessionResponse answer = answers.poll(20, TimeUnit.SECONDS);
                assertTrue(answer != null, "answer " + (i + 1) + " of " + count + " did not come");
                assertTrue(byId.put(answer.getId(), answer) == null, "id " + answer.getId() + " answered twice");
            }
            return byId;
        }

        @Override
        public void close() {
            requests.onCompleted();
            channel.shutdownNow();
        }
    }

    private static SessionRequest bundle(long id, SessionRequest... members) {
        return SessionRequest.newBuilder().setId(id).setBundle(SessionRequests.newBuilder().addAllRequests(List.of(members))).build();
    }

    private static BatchAllocateDistributedPageRequest allocate(String tenant, long size, String... keys) {
        BatchAllocateDistributedPageRequest.Builder request = BatchAllocateDistributedPageRequest.newBuilder();
        for (String key : keys) {
            request.addKeys(key).addTenantIds(tenant).addSizes(size);
        }
        return request.build();
    }

    private static BatchGetDistributedPageMappingRequest lookup(String tenant, String... keys) {
        BatchGetDistributedPageMappingRequest.Builder request = BatchGetDistributedPageMappingRequest.newBuilder();
        for (String key : keys) {
            request.addKeys(key).addTenantIds(tenant);
        }
        return request.build();
    }

    @Test
    void each_request_of_a_bundle_is_done_and_answered_by_its_id_as_if_it_came_alone() throws Exception {
        try (TierCluster cluster = TierCluster.start(dir.resolve("root"), 4, 0);
             RawStream stream = new RawStream(cluster.target())) {
            long page = TierCluster.PAGE;
            stream.requests.onNext(bundle(100,
                    SessionRequest.newBuilder().setId(1).setAllocate(allocate("t", page, "a", "b")).build(),
                    SessionRequest.newBuilder().setId(2).setLookup(lookup("t", "a", "nothing")).build(),
                    SessionRequest.newBuilder().setId(3).build(),
                    bundle(4, SessionRequest.newBuilder().setId(5).setLookup(lookup("t", "a")).build()),
                    SessionRequest.newBuilder().setId(6).setAllocate(allocate("t", page, "a")).build(),
                    SessionRequest.newBuilder().setId(7).setAllocate(allocate("t", page, "c", "")).build(),
                    SessionRequest.newBuilder().setId(8).setRemove(BatchRemoveRequest.newBuilder().addKeys("x").addTenantIds("t")
                            .addKeys("y")).build()));
            Map<Long, SessionResponse> first = stream.take(7);
            assertEquals(java.util.Set.of(1L, 2L, 3L, 4L, 6L, 7L, 8L), first.keySet(), "every request answered once by its own id, the bundle not");
            BatchAllocateDistributedPageResponse allocated = first.get(1L).getAllocate();
            assertEquals(List.of(ErrorCode.OK, ErrorCode.OK), allocated.getResultsList().stream().map(r -> r.getStatus().getError()).toList());
            // Served in order: the lookup after the allocate sees its key in flight, not yet readable.
            List<ErrorCode> looked = first.get(2L).getLookup().getResultsList().stream().map(r -> r.getStatus().getError()).toList();
            assertEquals(List.of(ErrorCode.REPLICA_IS_NOT_READY, ErrorCode.OBJECT_NOT_FOUND), looked);
            assertEquals(ErrorCode.INVALID_PARAMS, first.get(3L).getError().getError());
            assertTrue(first.get(3L).getError().getMessage().contains("session request 3 carries no request"), first.get(3L).toString());
            assertEquals(ErrorCode.INVALID_PARAMS, first.get(4L).getError().getError());
            assertTrue(first.get(4L).getError().getMessage().contains("bundles do not nest"), first.get(4L).toString());
            assertEquals(ErrorCode.REPLICA_IS_NOT_READY, first.get(6L).getAllocate().getResults(0).getStatus().getError(),
                    "the second allocate of a key in flight in the same bundle is refused as it would be alone");
            assertEquals(List.of(ErrorCode.OK, ErrorCode.INVALID_PARAMS),
                    first.get(7L).getAllocate().getResultsList().stream().map(r -> r.getStatus().getError()).toList());
            assertEquals(io.grpc.Status.Code.INVALID_ARGUMENT.value(), first.get(8L).getError().getGrpcCode(),
                    "lengths that do not match fail the request whole, as alone");
            assertEquals(3, cluster.master().pages().inFlightCount(), "a, b and c in flight; the refused requests changed nothing");
            assertTrue(stream.bundles >= 1, "several answers given at once come as one bundle");

            // Notify and look up in one bundle; an empty bundle is answered by its own id; the stream goes on.
            DistributedDiskDescriptor a = allocated.getResults(0).getDistributedDisk();
            DistributedDiskDescriptor b = allocated.getResults(1).getDistributedDisk();
            stream.requests.onNext(bundle(101,
                    SessionRequest.newBuilder().setId(9).setNotify(NotifyDistributedDiskSuccessRequest.newBuilder()
                            .addKeys("a").addTenantIds("t").addDescriptors(a.toBuilder().setCrc32C(21))
                            .addKeys("b").addTenantIds("t").addDescriptors(b.toBuilder().setCrc32C(22))).build(),
                    SessionRequest.newBuilder().setId(10).setLookup(lookup("t", "b", "c")).build()));
            stream.requests.onNext(bundle(102));
            Map<Long, SessionResponse> second = stream.take(3);
            assertEquals(List.of(ErrorCode.OK, ErrorCode.OK), second.get(9L).getNotify().getResultsList().stream().map(r -> r.getError()).toList());
            List<MappingResult> afterNotify = second.get(10L).getLookup().getResultsList();
            assertEquals(22, afterNotify.get(0).getDistributedDisk().getCrc32C(), "the lookup after the notify in the bundle sees it");
            assertEquals(ErrorCode.REPLICA_IS_NOT_READY, afterNotify.get(1).getStatus().getError());
            assertEquals(ErrorCode.INVALID_PARAMS, second.get(102L).getError().getError());
            assertTrue(second.get(102L).getError().getMessage().contains("session bundle 102 carries no request"), second.get(102L).toString());
            assertEquals(2, cluster.master().pages().mappingCount());
        }
    }

    @Test
    void a_bundle_larger_than_one_batch_is_refused_whole_naming_the_limit_and_changes_nothing() throws Exception {
        // 64 files of 1 MiB: 16,384 pages, room for 10,000 one-page allocations and more.
        try (TierCluster cluster = TierCluster.start(dir.resolve("root"), 64, 0);
             RawStream stream = new RawStream(cluster.target())) {
            int limit = BatchLimits.MAX_BATCH;
            List<SessionRequest> allocations = new ArrayList<>();
            for (int i = 0; i < 2 * limit; i++) {
                allocations.add(SessionRequest.newBuilder().setId(i + 1).setAllocate(allocate("t", TierCluster.PAGE, "k" + i)).build());
            }
            stream.requests.onNext(bundle(100_000, allocations.toArray(SessionRequest[]::new)));
            // Two requests of 6,000 keys each: few requests, too many keys.
            String[] keys = new String[6_000];
            for (int i = 0; i < keys.length; i++) {
                keys[i] = "w" + i;
            }
            stream.requests.onNext(bundle(100_001, SessionRequest.newBuilder().setId(100_002).setAllocate(allocate("t", TierCluster.PAGE, keys)).build(),
                    SessionRequest.newBuilder().setId(100_003).setLookup(lookup("t", keys)).build()));
            // At the limit: served.
            stream.requests.onNext(bundle(100_004, allocations.subList(0, limit).toArray(SessionRequest[]::new)));

            Map<Long, SessionResponse> refusals = stream.take(2);
            for (long id : List.of(100_000L, 100_001L)) {
                SessionResponse refusal = refusals.get(id);
                assertTrue(refusal != null, "the bundle " + id + " is answered by its own id: " + refusals.keySet());
                assertEquals(io.grpc.Status.Code.INVALID_ARGUMENT.value(), refusal.getError().getGrpcCode(), refusal.toString());
                assertEquals(ErrorCode.INVALID_PARAMS, refusal.getError().getError());
                assertTrue(refusal.getError().getMessage().contains("at most " + limit + " requests and " + limit + " keys"),
                        refusal.getError().getMessage());
            }
            assertTrue(refusals.get(100_000L).getError().getMessage().contains("carries " + 2 * limit + " requests with " + 2 * limit + " keys"),
                    refusals.get(100_000L).getError().getMessage());
            assertTrue(refusals.get(100_001L).getError().getMessage().contains("carries 2 requests with 12000 keys"),
                    refusals.get(100_001L).getError().getMessage());
            Map<Long, SessionResponse> served = stream.take(limit);
            assertEquals(limit, served.size());
            served.values().forEach(answer -> assertEquals(ErrorCode.OK, answer.getAllocate().getResults(0).getStatus().getError(), answer.toString()));
            assertEquals(limit, cluster.master().pages().inFlightCount(), "only the bundle at the limit was done");
        }
    }

    @Test
    void callers_of_one_client_that_send_together_share_messages_and_every_answer_reaches_its_caller() throws Exception {
        int threads = 16;
        int cycles = 100;
        // 16 files of 1 MiB: 4,096 pages, room for every key.
        try (TierCluster cluster = TierCluster.start(dir.resolve("root"), 16, 0);
             MasterClient client = new MasterClient(cluster.target(), Duration.ofSeconds(20), ClientSecurity.NONE, MasterClient.Transport.STREAM)) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    String tenant = "tenant-" + t;
                    done.add(pool.submit(() -> {
                        for (int c = 0; c < cycles; c++) {
                            List<String> keys = List.of("k" + c + "-0", "k" + c + "-1");
                            List<String> tenants = Collections.nCopies(2, tenant);
                            BatchAllocateDistributedPageResponse allocated = client.batchAllocate(keys, tenants,
                                    List.of(TierCluster.PAGE, TierCluster.PAGE), false);
                            List<DistributedDiskDescriptor> places = new ArrayList<>();
                            for (AllocationResult r : allocated.getResultsList()) {
                                assertEquals(ErrorCode.OK, r.getStatus().getError(), r.toString());
                                places.add(r.getDistributedDisk().toBuilder().setCrc32C(crc(tenant, c)).build());
                            }
                            client.notifySuccess(keys, tenants, places).getResultsList()
                                    .forEach(e -> assertEquals(ErrorCode.OK, e.getError(), e.toString()));
                            // Answers carry no tenant: a caller handed another's answer would see another CRC.
                            for (MappingResult r : client.batchGetMapping(keys, tenants).getResultsList()) {
                                assertEquals(crc(tenant, c), r.getDistributedDisk().getCrc32C(), tenant + " cycle " + c);
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get(100, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertEquals((long) threads * cycles * 2, cluster.master().pages().mappingCount());
            assertEquals(0, cluster.master().pages().inFlightCount());
            String metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.metricsPort()
                    + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
            double bundles = counter(metrics, "mcctl_master_session_bundles_total");
            double bundled = counter(metrics, "mcctl_master_session_bundled_requests_total");
            // 16 callers in closed loops on two cores: some of their 4,800 requests meet while another is being sent.
            assertTrue(bundles >= 1 && bundled >= 2 * bundles, "bundles " + bundles + ", requests in them " + bundled);
        }
    }

    private static int crc(String tenant, int cycle) {
        return (tenant + "/" + cycle).hashCode();
    }

    private static double counter(String metrics, String name) {
        Matcher m = Pattern.compile("(?m)^" + name + " (\\S+)$").matcher(metrics);
        assertTrue(m.find(), name + " in\n" + metrics);
        return Double.parseDouble(m.group(1));
    }
}
