package io.mcctl.master.client;

import com.google.common.util.concurrent.SettableFuture;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.proto.v1.SessionError;
import io.mcctl.master.proto.v1.SessionRequest;
import io.mcctl.master.proto.v1.SessionRequests;
import io.mcctl.master.proto.v1.SessionResponse;
import io.mcctl.master.protocol.BatchLimits;
import io.mcctl.master.protocol.WireErrors;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The client's end of the Session stream: one stream per connection, shared by every thread of a
 * {@link MasterClient}, each request tagged with an id and matched with its answer. A stream that ends (the master
 * went away, the connection broke) fails every request still waiting on it with the stream's status, exactly as a
 * unary call cut at that moment fails; the next request opens a new stream.
 *
 * <p>Requests that callers hand over while another message is being sent go together in the next one, as a bundle
 * (the master serves and answers each as if it had come alone).
 *
 * <p>Thread-safe. {@code this} guards {@link #current} and the opening of a stream; each {@link Stream} guards its
 * queue of unsent requests with one lock and sending on its observer with another (gRPC observers are not
 * thread-safe). No lock nests inside another.
 */
final class MasterSession {

    private final MasterServiceGrpc.MasterServiceStub stub;
    /** The open stream, or null before the first request and after a stream ended. Guarded by {@code this}. */
    private Stream current;
    private long nextId;

    MasterSession(MasterServiceGrpc.MasterServiceStub stub) {
        this.stub = stub;
    }

    /** Sends {@code request} (its id is set here); the future completes with its answer or fails with a StatusRuntimeException. */
    SettableFuture<SessionResponse> send(SessionRequest.Builder request) {
        // A stream can end between being picked and taking the request (a master that died, or a new stream whose
        // connection was refused at once): the request was not sent on it, so it goes on a fresh one. After a few such
        // streams the request fails with the last one's status, which says why (a refused connection: never sent).
        StatusRuntimeException lastFailure = null;
        for (int attempt = 0; attempt < STREAMS_PER_REQUEST; attempt++) {
            Stream stream;
            long id;
            synchronized (this) {
                if (current == null || current.ended) {
                    current = new Stream();
                    current.open(stub);
                }
                stream = current;
                id = ++nextId;
            }
            SettableFuture<SessionResponse> answer = stream.send(request.setId(id).build());
            if (answer != null) {
                return answer;
            }
            lastFailure = stream.failure;
        }
        SettableFuture<SessionResponse> failed = SettableFuture.create();
        failed.setException(lastFailure != null ? lastFailure
                : Status.UNAVAILABLE.withDescription("the stream to the master ended").asRuntimeException());
        return failed;
    }

    /** Fresh streams one request is tried on when each ends before taking it. */
    private static final int STREAMS_PER_REQUEST = 3;

    /** Most requests in one bundle. */
    private static final int BUNDLE_MAX_REQUESTS = 64;
    /**
     * Most keys in one bundle: what one request may carry (the master refuses a bundle with more), so that a bundle's
     * answers are never larger than those of the largest request (and well within the client's receive limit).
     */
    private static final long BUNDLE_MAX_KEYS = BatchLimits.MAX_BATCH;
    /** Most request bytes in one bundle. */
    private static final long BUNDLE_MAX_BYTES = 4 << 20;

    /** Half-closes the open stream, if any, so the master ends it once its answers are out. */
    void close() {
        Stream stream;
        synchronized (this) {
            stream = current;
            current = null;
        }
        if (stream != null) {
            stream.halfClose();
        }
    }

    /** The exception a request that failed whole stands for: the status and trailers its unary twin's call would have ended with. */
    static StatusRuntimeException toException(SessionError error) {
        Metadata trailers = new Metadata();
        if (error.getError() != io.mcctl.master.proto.v1.ErrorCode.OK) {
            trailers.put(WireErrors.ERROR_CODE_KEY, error.getError().name());
        }
        if (error.getChangesRefused()) {
            trailers.put(WireErrors.CHANGES_REFUSED_KEY, "true");
        }
        return Status.fromCodeValue(error.getGrpcCode()).withDescription(error.getMessage()).asRuntimeException(trailers);
    }

    /** One stream and the requests waiting for an answer on it. */
    private static final class Stream implements ClientResponseObserver<SessionRequest, SessionResponse> {
        private final Map<Long, SettableFuture<SessionResponse>> waiting = new ConcurrentHashMap<>();
        /** Sending is serialized on this lock; it guards {@link #halfClosed}. */
        private final Object sendLock = new Object();
        /** Guards {@link #unsent} and {@link #sending}; taken alone, never with {@code sendLock}. */
        private final Object queueLock = new Object();
        /** Requests taken and not sent yet, in the order they were taken. */
        private final ArrayDeque<SessionRequest> unsent = new ArrayDeque<>();
        /** A thread is sending what is queued. */
        private boolean sending;
        private boolean halfClosed;
        private ClientCallStreamObserver<SessionRequest> requests;
        private volatile boolean ended;
        /** Why the stream ended; written before {@code ended}. */
        private volatile StatusRuntimeException failure;

        void open(MasterServiceGrpc.MasterServiceStub stub) {
            // The stream outlives the call that opens it: detached from the caller's gRPC context, or a server handler
            // that opens it (a node offloading for its caller) would cancel it, and every request on it, when it answers.
            io.grpc.Context.ROOT.run(() -> stub.session(this));
        }

        @Override
        public void beforeStart(ClientCallStreamObserver<SessionRequest> requestStream) {
            this.requests = requestStream;
        }

        /** The request's answer, or null when the stream had ended before it could be taken (so it was not sent). */
        SettableFuture<SessionResponse> send(SessionRequest request) {
            SettableFuture<SessionResponse> answer = SettableFuture.create();
            if (ended) {
                return null;
            }
            // If the caller gives up (its deadline), nothing more is kept for it; a late answer is dropped.
            answer.addListener(() -> waiting.remove(request.getId()), Runnable::run);
            waiting.put(request.getId(), answer);
            if (ended) {
                // ended while being registered: end() may have missed it, and it was not sent
                waiting.remove(request.getId());
                return null;
            }
            synchronized (queueLock) {
                unsent.add(request);
                if (sending) {
                    return answer; // the thread sending now takes it with whatever else is queued
                }
                sending = true;
            }
            sendQueued();
            return answer;
        }

        /**
         * Sends what is queued until nothing is: a request alone, or several in one bundle. Requests queue while a
         * message is being sent, so callers that come together share a message (and the master's work per message)
         * without anyone waiting for a timer; a caller alone sends its request at once.
         */
        private void sendQueued() {
            while (true) {
                List<SessionRequest> batch = new ArrayList<>();
                synchronized (queueLock) {
                    long keys = 0;
                    long bytes = 0;
                    while (!unsent.isEmpty()) {
                        SessionRequest next = unsent.peek();
                        long nextKeys = BatchLimits.keysOf(next);
                        long nextBytes = next.getSerializedSize();
                        if (!batch.isEmpty() && (batch.size() == BUNDLE_MAX_REQUESTS || keys + nextKeys > BUNDLE_MAX_KEYS
                                || bytes + nextBytes > BUNDLE_MAX_BYTES)) {
                            break;
                        }
                        batch.add(unsent.poll());
                        keys += nextKeys;
                        bytes += nextBytes;
                    }
                    if (batch.isEmpty()) {
                        sending = false;
                        return;
                    }
                }
                SessionRequest message = batch.size() == 1 ? batch.get(0)
                        : SessionRequest.newBuilder().setBundle(SessionRequests.newBuilder().addAllRequests(batch)).build();
                synchronized (sendLock) {
                    StatusRuntimeException refused = null;
                    if (halfClosed) {
                        refused = Status.UNAVAILABLE.withDescription("the client closed its stream to the master").asRuntimeException();
                    } else if (!ended) {
                        try {
                            requests.onNext(message);
                        } catch (RuntimeException e) {
                            refused = Status.fromThrowable(e).asRuntimeException();
                        }
                    } // else the stream ended: end() failed every request registered, these included
                    if (refused != null) {
                        for (SessionRequest request : batch) {
                            SettableFuture<SessionResponse> answer = waiting.remove(request.getId());
                            if (answer != null) {
                                answer.setException(refused);
                            }
                        }
                    }
                }
            }
        }

        void halfClose() {
            synchronized (sendLock) {
                if (!ended && !halfClosed) {
                    halfClosed = true;
                    requests.onCompleted();
                }
            }
        }

        @Override
        public void onNext(SessionResponse response) {
            if (response.hasBundle()) {
                for (SessionResponse one : response.getBundle().getResponsesList()) {
                    onNext(one);
                }
                return;
            }
            SettableFuture<SessionResponse> answer = waiting.remove(response.getId());
            if (answer != null) {
                answer.set(response);
            }
        }

        @Override
        public void onError(Throwable t) {
            end(t instanceof StatusRuntimeException e ? e : Status.fromThrowable(t).asRuntimeException(Status.trailersFromThrowable(t)));
        }

        @Override
        public void onCompleted() {
            end(Status.UNAVAILABLE.withDescription("the master ended the stream").asRuntimeException());
        }

        private void end(StatusRuntimeException failure) {
            this.failure = failure;
            ended = true;
            for (Long id : waiting.keySet()) {
                SettableFuture<SessionResponse> answer = waiting.remove(id);
                if (answer != null) {
                    answer.setException(failure);
                }
            }
        }
    }
}
