package io.mcctl.cli.chaos;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.proto.v1.SessionRequest;
import io.mcctl.master.proto.v1.SessionResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Session streams to one master held by clients that misbehave: some open the stream and send nothing, some send
 * lookups and never take an answer. What the master promises them: a Session stream is a call in progress, so
 * {@code connection_idle_timeout} does not close it; a stream whose client takes no answers is no longer read (flow
 * control) and is cancelled with RESOURCE_EXHAUSTED only when the answers it holds pass {@code session_backlog}. A
 * stream the master ends otherwise while it serves is a finding; one that ends UNAVAILABLE lost its master to another
 * fault (killed, cut off) and is not.
 *
 * <p>Thread-safe: the streams' ends are recorded by gRPC's threads, everything else runs on the nemesis thread.
 */
final class IdleSessions {

    /** Lookups a stalled stream sends at most: well past what the transport's windows take before the master stops reading. */
    static final int MAX_LOOKUPS = 4000;
    /** Keys per lookup: a few kilobytes per answer, so the answers fill the client's window after a few hundred. */
    private static final int KEYS_PER_LOOKUP = 100;

    private final String address;
    private final ManagedChannel channel;
    private final List<Held> streams = new ArrayList<>();
    private final AtomicLong lookupsSent = new AtomicLong();

    /** One stream and how it ended (null while open). */
    private static final class Held {
        final boolean stalled;
        volatile ClientCallStreamObserver<SessionRequest> requests;
        volatile Status ended;

        Held(boolean stalled) {
            this.stalled = stalled;
        }
    }

    private IdleSessions(String address) {
        this.address = address;
        this.channel = NettyChannelBuilder.forTarget(address).usePlaintext().build();
    }

    /** Opens {@code idle} streams that send nothing and {@code stalled} streams that send lookups and take no answer. */
    static IdleSessions open(String address, int idle, int stalled, Random random) {
        IdleSessions sessions = new IdleSessions(address);
        for (int i = 0; i < idle + stalled; i++) {
            sessions.start(new Held(i >= idle), random.nextLong());
        }
        return sessions;
    }

    private void start(Held held, long seed) {
        streams.add(held);
        Random keys = new Random(seed);
        long[] sent = {0};
        MasterServiceGrpc.newStub(channel).session(new ClientResponseObserver<SessionRequest, SessionResponse>() {
            @Override
            public void beforeStart(ClientCallStreamObserver<SessionRequest> requests) {
                held.requests = requests;
                requests.disableAutoRequestWithInitial(0); // no answer is ever taken
                if (!held.stalled) {
                    return;
                }
                requests.setOnReadyHandler(() -> {
                    while (requests.isReady() && sent[0] < MAX_LOOKUPS && held.ended == null) {
                        BatchGetDistributedPageMappingRequest.Builder lookup = BatchGetDistributedPageMappingRequest.newBuilder();
                        for (int k = 0; k < KEYS_PER_LOOKUP; k++) {
                            lookup.addKeys("j" + keys.nextInt(2) + "/k" + keys.nextInt(JavaWorker.KEYS))
                                    .addTenantIds(JavaWorker.TENANTS.get(keys.nextInt(JavaWorker.TENANTS.size())));
                        }
                        requests.onNext(SessionRequest.newBuilder().setId(++sent[0]).setLookup(lookup).build());
                        lookupsSent.incrementAndGet();
                    }
                });
            }

            @Override
            public void onNext(SessionResponse answer) {
                // never asked for
            }

            @Override
            public void onError(Throwable t) {
                held.ended = Status.fromThrowable(t);
            }

            @Override
            public void onCompleted() {
                held.ended = Status.OK.withDescription("the master completed the stream");
            }
        });
    }

    /** Lookups the stalled streams have sent so far. */
    long lookupsSent() {
        return lookupsSent.get();
    }

    /**
     * What the master at {@code host} says of the Session streams it stopped reading because their clients take no
     * answers ({@code mcctl_master_session_streams_paused}), or why that could not be read.
     */
    static String pausedStreams(String host) {
        try {
            HttpResponse<String> metrics = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build().send(HttpRequest.newBuilder(
                    URI.create("http://" + host + ":" + ChaosCluster.METRICS_PORT + "/metrics")).timeout(Duration.ofSeconds(3)).build(),
                    HttpResponse.BodyHandlers.ofString());
            return metrics.body().lines().filter(line -> line.startsWith("mcctl_master_session_streams_paused "))
                    .map(line -> line.substring(line.indexOf(' ') + 1).strip()).findFirst().orElse("not reported");
        } catch (IOException e) {
            return "unread: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unread: interrupted";
        }
    }

    /** Streams still open. */
    long open() {
        return streams.stream().filter(held -> held.ended == null).count();
    }

    /**
     * What the master did to these streams against its promises (empty: nothing), then every stream cancelled and the
     * connection closed, as a client that goes away.
     */
    List<String> release() throws InterruptedException {
        List<String> broken = new ArrayList<>();
        for (Held held : streams) {
            Status ended = held.ended;
            if (ended == null || ended.getCode() == Status.Code.UNAVAILABLE) {
                continue;
            }
            boolean backlog = held.stalled && ended.getCode() == Status.Code.RESOURCE_EXHAUSTED
                    && String.valueOf(ended.getDescription()).contains("session_backlog");
            if (!backlog) {
                broken.add("the master at " + address + " ended " + (held.stalled ? "a Session stream whose client took no answers"
                        : "an idle Session stream") + " with " + ended.getCode() + " (" + ended.getDescription() + "): a Session stream "
                        + "is a call in progress, ended only past session_backlog");
            }
        }
        for (Held held : streams) {
            if (held.ended == null && held.requests != null) {
                held.requests.cancel("the chaos client goes away", null);
            }
        }
        channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        return broken;
    }
}
