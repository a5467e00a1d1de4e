package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.mcctl.master.protocol.BatchLimits;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.BatchRemoveRequest;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.proto.v1.SessionRequest;
import io.mcctl.master.proto.v1.SessionRequests;
import io.mcctl.master.proto.v1.SessionResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Session streams whose clients send and take no answers, against a real master over real gRPC: the master stops
 * reading such a stream instead of queueing its answers in memory, what it holds stays within its bounds (per stream
 * and in all), an answer past a bound cancels the stream with RESOURCE_EXHAUSTED, and what was held is let go when
 * the stream ends.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SessionBacklogTest {

    @TempDir
    Path dir;

    /** Keys per lookup: a full batch but one, so that a bundle of it and a one-key remove is one batch too. */
    private static final int KEYS = BatchLimits.MAX_BATCH - 1;

    /** A Session stream whose client takes no answer until {@link #read}: gRPC's manual flow control, nothing requested. */
    private static final class NonReadingStream implements AutoCloseable {
        final ManagedChannel channel;
        final LinkedBlockingQueue<SessionResponse> answers = new LinkedBlockingQueue<>();
        final CompletableFuture<Status> ended = new CompletableFuture<>();
        ClientCallStreamObserver<SessionRequest> requests;

        NonReadingStream(String target) {
            // A fixed HTTP/2 window of 64 KiB: the client's transport takes at most that much of the answers nobody reads.
            channel = NettyChannelBuilder.forTarget(target).usePlaintext().flowControlWindow(64 << 10).build();
            MasterServiceGrpc.newStub(channel).session(new ClientResponseObserver<SessionRequest, SessionResponse>() {
                @Override
                public void beforeStart(ClientCallStreamObserver<SessionRequest> stream) {
                    requests = stream;
                    stream.disableAutoRequestWithInitial(0);
                }

                @Override
                public void onNext(SessionResponse response) {
                    answers.add(response);
                }

                @Override
                public void onError(Throwable t) {
                    ended.complete(Status.fromThrowable(t));
                }

                @Override
                public void onCompleted() {
                    ended.complete(Status.OK);
                }
            });
        }

        /** Sends {@code request} whether or not the call is ready, as a client that pushes and never reads does. */
        void send(SessionRequest request) {
            requests.onNext(request);
        }

        void read(int answers) {
            requests.request(answers);
        }

        @Override
        public void close() {
            channel.shutdownNow();
        }
    }

    private static BatchGetDistributedPageMappingRequest lookup() {
        BatchGetDistributedPageMappingRequest.Builder request = BatchGetDistributedPageMappingRequest.newBuilder();
        for (int i = 0; i < KEYS; i++) {
            request.addKeys("missing-key-" + i).addTenantIds("t");
        }
        return request.build();
    }

    private static SessionRequest lookupRequest(long id, BatchGetDistributedPageMappingRequest lookup) {
        return SessionRequest.newBuilder().setId(id).setLookup(lookup).build();
    }

    /** A bundle whose lookup is answered at once and whose remove is answered after it, once its change is durable. */
    private static SessionRequest lookupThenRemove(long id, BatchGetDistributedPageMappingRequest lookup) {
        return SessionRequest.newBuilder().setId(id).setBundle(SessionRequests.newBuilder()
                .addRequests(lookupRequest(id + 1, lookup))
                .addRequests(SessionRequest.newBuilder().setId(id + 2).setRemove(BatchRemoveRequest.newBuilder().addKeys("x").addTenantIds("t"))))
                .build();
    }

    /** A series' value in the master's metrics, 0 when it has none yet (a labelled counter nothing has counted). */
    private static double metric(TierCluster cluster, String series) throws Exception {
        return cluster.metric(series).orElse(0);
    }

    private static double scraped(TierCluster cluster, String series) {
        try {
            return metric(cluster, series);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static boolean metricIs(TierCluster cluster, String series, double value) {
        return scraped(cluster, series) == value;
    }

    private static TierCluster start(Path root, Map<String, String> settings) throws Exception {
        MasterServer.Options defaults = TierCluster.options(TierCluster.smallLayout(root, 4), Duration.ofSeconds(60), Duration.ofSeconds(5),
                MasterServer.Options.DEFAULT_ALLOCATION_GRACE);
        return TierCluster.start(MasterServer.Options.builder(defaults.layout()).fsType(defaults.fsType())
                .bindHost(defaults.bindHost()).allocationDeadline(defaults.allocationDeadline()).readLease(defaults.readLease())
                .durability(defaults.durability()).snapshotInterval(null).settings(settings)
                .allocationGrace(defaults.allocationGrace()).build(), 0);
    }

    /** How large the master's answer to {@code lookup} is, asked over the unary call. */
    private static long answerBytes(TierCluster cluster, BatchGetDistributedPageMappingRequest lookup) {
        try (MasterClient client = cluster.newClient()) {
            return client.batchGetMapping(lookup.getKeysList(), lookup.getTenantIdsList()).getSerializedSize();
        }
    }

    private static final String LOOKUPS_ANSWERED = "mcctl_master_session_requests_total{kind=\"lookup\"}";
    private static final String PAUSED = "mcctl_master_session_streams_paused";
    private static final String BACKLOG = "mcctl_master_session_backlog_bytes";

    @Test
    void a_stream_whose_client_takes_no_answers_is_no_longer_read_and_holds_a_bounded_backlog() throws Exception {
        try (TierCluster cluster = start(dir.resolve("root"), Map.of());
             NonReadingStream stream = new NonReadingStream(cluster.target())) {
            BatchGetDistributedPageMappingRequest lookup = lookup();
            long answer = answerBytes(cluster, lookup);
            int sent = 200;
            assertTrue(sent * answer > 4 * MasterSettings.SESSION_BACKLOG_DEFAULT, "the answers of all requests come to " + sent * answer
                    + " bytes, well past what a stream may hold");
            double before = metric(cluster, LOOKUPS_ANSWERED); // the lookup that measured the answer
            for (int i = 1; i <= sent; i++) {
                stream.send(lookupRequest(i, lookup));
            }
            // Either the master stops reading the stream, or it reads every request and queues every answer.
            assertTrue(TierCluster.await(Duration.ofSeconds(90),
                            () -> metricIs(cluster, PAUSED, 1) || scraped(cluster, LOOKUPS_ANSWERED) - before == sent),
                    () -> "the master neither stopped reading the stream nor answered every request: " + scraped(cluster, LOOKUPS_ANSWERED)
                            + " answered, " + scraped(cluster, BACKLOG) + " bytes held");
            double answered = metric(cluster, LOOKUPS_ANSWERED) - before;
            assertTrue(answered < sent, "the master read and answered all " + sent + " requests of a client that takes no answers");
            assertEquals(1, metric(cluster, PAUSED), "the stream is counted as not read");
            double held = metric(cluster, BACKLOG);
            assertTrue(held > 0 && held <= MasterSettings.SESSION_BACKLOG_DEFAULT, "answers held for the stream: " + held + " bytes");
            assertTrue(answered * answer <= held + 2 * answer + (64 << 10), answered + " answers of " + answer + " bytes went out; "
                    + held + " bytes of them held, at most the client's window sent");
            assertFalse(stream.requests.isReady(), "the client cannot send on: HTTP/2 flow control holds what the master does not read");
            assertEquals(0, metric(cluster, "mcctl_master_session_streams_cancelled_total{reason=\"stream_limit\"}"),
                    "a stream that is no longer read is not cancelled: it holds no more");

            // The master serves others meanwhile; when the client cancels, what was held is let go.
            try (MasterClient other = cluster.newClient()) {
                assertEquals(3, other.batchGetMapping(List.of("a", "b", "c"), Collections.nCopies(3, "t")).getResultsCount());
            }
            stream.requests.cancel("the client gives up", null);
            assertTrue(TierCluster.await(Duration.ofSeconds(30), () -> metricIs(cluster, BACKLOG, 0) && metricIs(cluster, PAUSED, 0)),
                    "held after the stream ended: " + metric(cluster, BACKLOG) + " bytes, paused streams " + metric(cluster, PAUSED));
        }
    }

    @Test
    void an_answer_that_would_pass_the_streams_bound_cancels_it_with_RESOURCE_EXHAUSTED_after_what_it_was_sent()
            throws Exception {
        try (TierCluster cluster = start(dir.resolve("root"), Map.of(MasterSettings.SESSION_BACKLOG.key(), "64KiB"));
             NonReadingStream stream = new NonReadingStream(cluster.target())) {
            BatchGetDistributedPageMappingRequest lookup = lookup();
            assertTrue(answerBytes(cluster, lookup) > 2 * (64 << 10), "the lookup's answer fills more than the client's window and the bound");
            stream.send(lookupThenRemove(100, lookup));
            assertTrue(TierCluster.await(Duration.ofSeconds(60),
                    () -> metricIs(cluster, "mcctl_master_session_streams_cancelled_total{reason=\"stream_limit\"}", 1)),
                    "the stream was not cancelled");

            // The client reads at last: the answer that was sent, then the status in place of the one that was not.
            stream.read(10);
            SessionResponse first = stream.answers.poll(30, TimeUnit.SECONDS);
            assertNotNull(first, "the lookup's answer came");
            assertEquals(101, first.getId());
            assertEquals(KEYS, first.getLookup().getResultsCount());
            Status status = stream.ended.get(30, TimeUnit.SECONDS);
            assertEquals(Status.Code.RESOURCE_EXHAUSTED, status.getCode(), status.toString());
            assertTrue(status.getDescription().contains("session_backlog 64 KiB") && status.getDescription().contains("read its answers"),
                    status.getDescription());
            assertTrue(stream.answers.isEmpty(), "no answer after the status: " + stream.answers);
            assertEquals(1, metric(cluster, "mcctl_master_rpc_failures_total{code=\"RESOURCE_EXHAUSTED\",method=\"Session\"}"));
            assertTrue(TierCluster.await(Duration.ofSeconds(30), () -> metricIs(cluster, BACKLOG, 0)), "held after the stream ended");
        }
    }

    @Test
    void an_answer_that_would_pass_the_masters_bound_cancels_the_stream_of_a_client_not_taking_answers_and_no_other()
            throws Exception {
        try (TierCluster cluster = start(dir.resolve("root"), Map.of(MasterSettings.SESSION_BACKLOG_TOTAL.key(), "1MiB"));
             NonReadingStream first = new NonReadingStream(cluster.target());
             NonReadingStream second = new NonReadingStream(cluster.target())) {
            BatchGetDistributedPageMappingRequest lookup = lookup();
            long answer = answerBytes(cluster, lookup);
            assertTrue(2 * answer > (1 << 20) && answer < (1 << 20) - (64 << 10), "two answers of " + answer + " bytes pass the master's "
                    + "bound and one does not");
            first.send(lookupRequest(1, lookup));
            assertTrue(TierCluster.await(Duration.ofSeconds(60), () -> metricIs(cluster, PAUSED, 1)), "the first stream is not read on");
            second.send(lookupThenRemove(10, lookup));
            assertTrue(TierCluster.await(Duration.ofSeconds(60),
                    () -> metricIs(cluster, "mcctl_master_session_streams_cancelled_total{reason=\"total_limit\"}", 1)),
                    "the second stream was not cancelled");

            second.read(10);
            assertEquals(11, second.answers.poll(30, TimeUnit.SECONDS).getId());
            Status status = second.ended.get(30, TimeUnit.SECONDS);
            assertEquals(Status.Code.RESOURCE_EXHAUSTED, status.getCode(), status.toString());
            assertTrue(status.getDescription().contains("session_backlog_total 1 MiB"), status.getDescription());

            // The first stream is whole: it gets its answer once it reads, and is read and answered again.
            first.read(10);
            assertEquals(1, first.answers.poll(30, TimeUnit.SECONDS).getId());
            first.send(lookupRequest(2, lookup));
            assertEquals(2, first.answers.poll(30, TimeUnit.SECONDS).getId());
            assertFalse(first.ended.isDone(), "the first stream goes on");
            assertEquals(0, metric(cluster, "mcctl_master_session_streams_cancelled_total{reason=\"stream_limit\"}"));
        }
    }
}
