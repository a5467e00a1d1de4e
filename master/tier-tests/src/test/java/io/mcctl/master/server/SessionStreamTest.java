package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.proto.v1.SessionRequest;
import io.mcctl.master.proto.v1.SessionResponse;
import io.mcctl.master.service.PageCheck;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Session stream against a real master on loopback: every batch call answers over it exactly as its unary twin
 * does (per-key errors, refusals of the whole request that change nothing, leases, overwrite, expiry, tenants), and a
 * client process killed with kill -9 in the middle of its stream loses no acknowledged key and leaks no page.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SessionStreamTest {

    @TempDir
    Path dir;

    /**
     * One script of batch calls, run once over unary calls and once over the stream, each in its own tenant: what each
     * call answered, key by key, written out with the tenant's name taken out.
     */
    private static List<String> script(MasterClient client, String tenant, TierCluster cluster) throws Exception {
        List<String> log = new ArrayList<>();
        List<String> t2 = List.of(tenant, tenant);
        List<String> t3 = List.of(tenant, tenant, tenant);
        long page = TierCluster.PAGE;
        BatchAllocateDistributedPageResponse first = client.batchAllocate(List.of("a", "", "b"), t3, List.of(page, page, 3 * page), false);
        log.add("allocate " + allocations(first));
        DistributedDiskDescriptor a = first.getResults(0).getDistributedDisk();
        DistributedDiskDescriptor b = first.getResults(2).getDistributedDisk();
        assertTrue(a.hasBucket() && a.getBucket() == cluster.master().pages().bucketOfPath(a.getFilePath()), a.toString());
        log.add("allocate again " + allocations(client.batchAllocate(List.of("a"), List.of(tenant), List.of(page), false)));
        log.add("notify " + errors(client.notifySuccess(List.of("a", "b"), t2,
                List.of(a.toBuilder().setCrc32C(11).build(), b.toBuilder().setOffset(b.getOffset() + page).build())).getResultsList()));
        log.add("lookup " + mappings(client.batchGetMapping(List.of("a", "missing", "b"), t3).getResultsList()));
        log.add("exists without overwrite " + allocations(client.batchAllocate(List.of("a"), List.of(tenant), List.of(page), false)));
        BatchAllocateDistributedPageResponse over = client.batchAllocate(List.of("a"), List.of(tenant), List.of(2 * page), true);
        log.add("overwrite " + allocations(over));
        // The bucket index alone names the file: no path needed; a path of another bucket is a descriptor that does not match.
        DistributedDiskDescriptor replaced = over.getResults(0).getDistributedDisk();
        int otherBucket = (replaced.getBucket() + 1) % cluster.layout().bucketCount();
        log.add("notify by a path of another bucket " + errors(client.notifySuccess(List.of("a"), List.of(tenant), List.of(replaced.toBuilder()
                .setFilePath(cluster.master().pages().bucketPath(otherBucket)).build())).getResultsList()));
        log.add("notify by bucket index " + errors(client.notifySuccess(List.of("a"), List.of(tenant),
                List.of(replaced.toBuilder().clearFilePath().setCrc32C(12).build())).getResultsList()));
        log.add("lookup after overwrite " + mappings(client.batchGetMapping(List.of("a"), List.of(tenant)).getResultsList()));
        log.add("free " + errors(client.batchFree(List.of("b", "b"), t2, List.of(b, b)).getResultsList()));
        log.add("remove " + errors(client.batchRemove(List.of("a", "missing"), t2).getResultsList()));
        log.add("lookup after remove " + mappings(client.batchGetMapping(List.of("a"), List.of(tenant)).getResultsList()));
        Object before = List.of(cluster.master().pages().mappingCount(), cluster.master().pages().inFlightCount());
        log.add("lengths that do not match " + whole(() -> client.batchAllocate(List.of("c", "d"), List.of(tenant), List.of(page, page), false)));
        log.add("a batch too large " + whole(() -> client.batchRemove(Collections.nCopies(10_001, "k"), Collections.nCopies(10_001, tenant))));
        log.add("notify without descriptors " + whole(() -> client.notifySuccess(List.of("c"), List.of(tenant), List.of())));
        assertEquals(before, List.of(cluster.master().pages().mappingCount(), cluster.master().pages().inFlightCount()),
                "a request refused whole changed nothing");
        // Expiry: an allocation never notified is reclaimed after its deadline, and its notify is then refused.
        DistributedDiskDescriptor late = client.batchAllocate(List.of("late"), List.of(tenant), List.of(page), false).getResults(0).getDistributedDisk();
        Thread.sleep(cluster.master().pages().allocationDeadlineMillis() + 200);
        log.add("notify after the deadline " + errors(client.notifySuccess(List.of("late"), List.of(tenant),
                List.of(late.toBuilder().setCrc32C(1).build())).getResultsList()));
        // The tenants' keys have the same names, so the same home buckets, at different offsets.
        return log.stream().map(line -> line.replace("'" + tenant + "'", "'TENANT'").replaceAll("@\\d+\\+", "@OFFSET+")).toList();
    }

    private static String allocations(BatchAllocateDistributedPageResponse response) {
        List<String> out = new ArrayList<>();
        for (AllocationResult r : response.getResultsList()) {
            out.add(r.getStatus().getError() == ErrorCode.OK ? "OK size " + r.getDistributedDisk().getObjectSize() : describe(r.getStatus()));
        }
        return out + " deadline " + response.getDeadlineMs();
    }

    private static String mappings(List<MappingResult> results) {
        List<String> out = new ArrayList<>();
        for (MappingResult r : results) {
            out.add(r.getStatus().getError() == ErrorCode.OK ? "OK crc " + r.getDistributedDisk().getCrc32C() : describe(r.getStatus()));
        }
        return out.toString();
    }

    private static String errors(List<KeyError> results) {
        return results.stream().map(SessionStreamTest::describe).toList().toString();
    }

    private static String describe(KeyError error) {
        return error.getError() == ErrorCode.OK ? "OK" : error.getError() + ": " + error.getMessage();
    }

    private static String whole(Supplier<?> call) {
        try {
            call.get();
            return "accepted";
        } catch (MasterException e) {
            return "refused " + e.code() + ": " + e.getMessage();
        }
    }

    @Test
    void every_batch_call_answers_over_the_stream_exactly_as_over_unary_calls() throws Exception {
        try (TierCluster cluster = TierCluster.start(TierCluster.options(TierCluster.smallLayout(dir.resolve("root"), 4), Duration.ofSeconds(1),
                Duration.ofSeconds(5), Duration.ofMillis(100)), 0);
             MasterClient unary = new MasterClient(cluster.target(), Duration.ofSeconds(10), ClientSecurity.NONE, MasterClient.Transport.UNARY);
             MasterClient stream = new MasterClient(cluster.target(), Duration.ofSeconds(10), ClientSecurity.NONE, MasterClient.Transport.STREAM)) {
            List<String> overUnary = script(unary, "unary-tenant", cluster);
            List<String> overStream = script(stream, "stream-tenant", cluster);
            assertEquals(overUnary, overStream);
            // The script's answers are the unary contract; a few lines pinned here so that an equal failure of both shows.
            assertTrue(overStream.get(0).startsWith("allocate [OK size 4096, INVALID_PARAMS: key is empty, OK size 12288]"), overStream.get(0));
            assertTrue(overStream.get(2).startsWith("notify [OK, INVALID_PARAMS:"), overStream.get(2));
            assertTrue(overStream.get(3).startsWith("lookup [OK crc 11, OBJECT_NOT_FOUND:"), overStream.get(3));
            assertTrue(overStream.get(4).contains("OBJECT_ALREADY_EXISTS"), overStream.get(4));
            assertTrue(overStream.get(6).contains("INVALID_PARAMS"), overStream.get(6));
            assertEquals("notify by bucket index [OK]", overStream.get(7));
            assertEquals("lookup after overwrite [OK crc 12]", overStream.get(8));
            assertTrue(overStream.get(12).startsWith("lengths that do not match refused INVALID_PARAMS"), overStream.get(12));
            assertTrue(overStream.get(15).startsWith("notify after the deadline [OBJECT_NOT_FOUND"), overStream.get(15));
            // Tenants are walls on the stream too: the other tenant's key of the same name is not visible.
            assertEquals(ErrorCode.OBJECT_NOT_FOUND,
                    stream.batchGetMapping(List.of("a"), List.of("other")).getResults(0).getStatus().getError());
        }
    }

    @Test
    void lookups_over_the_stream_grant_the_same_read_lease_so_removed_pages_wait_in_quarantine() throws Exception {
        try (TierCluster cluster = TierCluster.start(dir.resolve("root"), 4, 0);
             MasterClient stream = new MasterClient(cluster.target(), Duration.ofSeconds(10), ClientSecurity.NONE, MasterClient.Transport.STREAM)) {
            DistributedDiskDescriptor d = stream.batchAllocate(List.of("k"), List.of("t"), List.of(TierCluster.PAGE), false).getResults(0)
                    .getDistributedDisk();
            stream.notifySuccess(List.of("k"), List.of("t"), List.of(d.toBuilder().setCrc32C(3).build()));
            long lease = stream.batchGetMapping(List.of("k"), List.of("t")).getLeaseMs();
            assertEquals(cluster.master().pages().readLeaseMillis(), lease);
            assertEquals(ErrorCode.OK, stream.batchRemove(List.of("k"), List.of("t")).getResults(0).getError());
            assertEquals(1, stream.stats().getQuarantinedPages(), "the leased page is not free before the lease runs out");
        }
    }

    @Test
    void a_stream_opened_inside_a_call_that_then_ends_serves_the_next_requests() throws Exception {
        // As a node does: it offloads for its caller from inside that caller's call, whose gRPC context is cancelled
        // when the call answers. The stream it opened there must not go with it.
        try (TierCluster cluster = TierCluster.start(dir.resolve("root"), 4, 0);
             MasterClient client = cluster.newClient()) {
            io.grpc.Context.CancellableContext call = io.grpc.Context.current().withCancellation();
            call.run(() -> assertEquals(1, client.batchGetMapping(List.of("k"), List.of("t")).getResultsCount()));
            call.cancel(null);
            assertEquals(MasterClient.Transport.STREAM, client.transport());
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, client.batchGetMapping(List.of("k"), List.of("t")).getResults(0).getStatus().getError());
        }
    }

    @Test
    void a_request_that_carries_nothing_is_refused_by_its_id_and_the_stream_goes_on() throws Exception {
        try (TierCluster cluster = TierCluster.start(dir.resolve("root"), 4, 0)) {
            io.grpc.ManagedChannel channel = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder.forTarget(cluster.target()).usePlaintext().build();
            try {
                LinkedBlockingQueue<SessionResponse> answers = new LinkedBlockingQueue<>();
                io.grpc.stub.StreamObserver<SessionRequest> requests = MasterServiceGrpc.newStub(channel).session(new io.grpc.stub.StreamObserver<>() {
                    @Override
                    public void onNext(SessionResponse response) {
                        answers.add(response);
                    }

                    @Override
                    public void onError(Throwable t) {
                    }

                    @Override
                    public void onCompleted() {
                    }
                });
                requests.onNext(SessionRequest.newBuilder().setId(7).build());
                SessionResponse empty = answers.poll(20, TimeUnit.SECONDS);
                assertEquals(7, empty.getId());
                assertEquals(io.grpc.Status.Code.INVALID_ARGUMENT.value(), empty.getError().getGrpcCode());
                assertEquals(ErrorCode.INVALID_PARAMS, empty.getError().getError());
                assertTrue(empty.getError().getMessage().contains("carries no request"), empty.getError().getMessage());
                requests.onNext(SessionRequest.newBuilder().setId(8).setLookup(io.mcctl.master.proto.v1.BatchGetDistributedPageMappingRequest
                        .newBuilder().addKeys("nothing").addTenantIds("t")).build());
                SessionResponse looked = answers.poll(20, TimeUnit.SECONDS);
                assertEquals(8, looked.getId());
                assertEquals(ErrorCode.OBJECT_NOT_FOUND, looked.getLookup().getResults(0).getStatus().getError());
                requests.onCompleted();
            } finally {
                channel.shutdownNow();
            }
        }
    }

    /**
     * A writer in a process of its own: offload cycles over the stream (allocate 16 keys, notify the first 8, leave the
     * rest in flight) until it is killed, printing "ACK tenant key" for each key whose notify answered OK.
     */
    public static final class StreamWriter {
        public static void main(String[] args) throws Exception {
            String target = args[0];
            String tenant = args[1];
            try (MasterClient client = new MasterClient(target, Duration.ofSeconds(10))) {
                for (int batch = 0; ; batch++) {
                    List<String> keys = new ArrayList<>();
                    for (int i = 0; i < 16; i++) {
                        keys.add("w" + batch + "-" + i);
                    }
                    BatchAllocateDistributedPageResponse allocated = client.batchAllocate(keys, Collections.nCopies(16, tenant),
                            Collections.nCopies(16, TierCluster.PAGE), false);
                    List<DistributedDiskDescriptor> written = new ArrayList<>();
                    for (int i = 0; i < 8; i++) {
                        written.add(allocated.getResults(i).getDistributedDisk().toBuilder().setCrc32C(i + 1).build());
                    }
                    List<KeyError> notified = client.notifySuccess(keys.subList(0, 8), Collections.nCopies(8, tenant), written).getResultsList();
                    StringBuilder acks = new StringBuilder();
                    for (int i = 0; i < 8; i++) {
                        if (notified.get(i).getError() == ErrorCode.OK) {
                            acks.append("ACK ").append(tenant).append(' ').append(keys.get(i)).append('\n');
                        }
                    }
                    System.out.print(acks);
                    System.out.flush();
                }
            }
        }
    }

    @Test
    @Tag("process")
    void a_client_process_killed_mid_stream_loses_no_acknowledged_key_and_leaks_nothing_after_the_deadline() throws Exception {
        Duration deadline = Duration.ofSeconds(2);
        try (TierCluster cluster = TierCluster.start(TierCluster.options(TierCluster.smallLayout(dir.resolve("root"), 4), deadline,
                Duration.ofSeconds(1), Duration.ofMillis(200)), 0);
             MasterClient checker = cluster.newClient()) {
            List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx128m", "-cp",
                    System.getProperty("java.class.path"), StreamWriter.class.getName(), cluster.target(), "writer");
            Process writer = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            Set<String> acknowledged = ConcurrentHashMap.newKeySet();
            Thread reader = new Thread(() -> {
                try (BufferedReader lines = new BufferedReader(new InputStreamReader(writer.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line; (line = lines.readLine()) != null; ) {
                        if (line.startsWith("ACK ")) {
                            acknowledged.add(line.substring(4));
                        }
                    }
                } catch (java.io.IOException e) {
                    // the process died: what it printed before is all there is
                }
            });
            reader.start();
            try {
                assertTrue(TierCluster.await(Duration.ofSeconds(60), () -> acknowledged.size() >= 400 || !writer.isAlive()), "no load");
                assertTrue(writer.isAlive(), "the writer died on its own");
            } finally {
                // SIGKILL: in the middle of a cycle, with requests on the stream. Sent through the process handle, which only
                // signals: Process.destroyForcibly also closes the pipe of its output, discarding acknowledgements the
                // writer printed that the reader had not read yet (their keys would then look committed without an answer).
                writer.toHandle().destroyForcibly();
                assertTrue(writer.waitFor(30, TimeUnit.SECONDS));
            }
            reader.join(30_000);
            assertTrue(acknowledged.size() >= 400, "acknowledged: " + acknowledged.size());
            List<String> keys = new ArrayList<>();
            for (String ack : acknowledged) {
                keys.add(ack.substring(ack.indexOf(' ') + 1));
            }
            for (int from = 0; from < keys.size(); from += 1000) {
                List<String> some = keys.subList(from, Math.min(keys.size(), from + 1000));
                List<MappingResult> found = checker.batchGetMapping(some, Collections.nCopies(some.size(), "writer")).getResultsList();
                for (int i = 0; i < some.size(); i++) {
                    assertEquals(ErrorCode.OK, found.get(i).getStatus().getError(), "acknowledged key " + some.get(i) + " lost");
                }
            }
            assertTrue(cluster.master().pages().inFlightCount() > 0, "the killed writer left allocations in flight");
            // After the deadline and the grace the reaper has reclaimed what the writer held; nothing is leaked.
            assertTrue(TierCluster.await(Duration.ofSeconds(30), () -> cluster.master().pages().inFlightCount() == 0
                    && cluster.master().pages().quarantinedRangeCount() == 0), "the killed writer's allocations were not reclaimed");
            PageCheck check = cluster.master().pages().checkPages(0, false, 100);
            assertEquals(0, check.leakedPages(), check.leaked().toString());
            assertEquals(0, check.falseFreePages());
            assertEquals(0, check.overlapPages());
            // The cycle cut by the kill may have committed its keys without the writer seeing the answer: in doubt, never lost.
            assertTrue(check.mappings() >= acknowledged.size() && check.mappings() <= acknowledged.size() + 8,
                    check.mappings() + " mappings for " + acknowledged.size() + " acknowledged keys");
        }
    }
}
