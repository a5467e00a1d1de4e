package io.mcctl.master.server;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.SessionError;
import io.mcctl.master.proto.v1.SessionRequest;
import io.mcctl.master.proto.v1.SessionResponse;
import io.mcctl.master.proto.v1.SessionResponses;
import io.mcctl.master.protocol.BatchLimits;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.master.security.AccessControl;
import io.mcctl.master.security.MethodPermissions;
import io.mcctl.master.service.AnswerBarrier;
import io.mcctl.master.service.ChangeLog;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.Result;
import io.mcctl.storage.layout.SpaceBacking;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Session stream: each request it carries is checked by its unary twin's access rule, handed to the very method
 * of {@link PageWriteRpcs} or {@link PageReadRpcs} that serves the twin, and answered by its id: lookups at once (or,
 * one that met a commit the log does not hold yet, once it does), allocations once the reservations they were made in
 * are durable (see {@link AnswerBarrier}), notifies once their commits are, other mutations once their changes are
 * durable (so answers may overtake each other). A request that fails whole is answered with the status
 * its twin's call would have closed with; the stream goes on. A bundle's requests are served the same way, one after
 * the other, and answered in bundles: one message for what is answered at once, one for what waits for the log.
 *
 * <p>The stream follows gRPC's flow control: it asks for the next request only while the call is ready, that is while
 * the transport holds less than gRPC's threshold of answers not yet sent, and while the requests it has taken and not
 * answered come to fewer than {@link #MAX_OUTSTANDING_KEYS} keys. A client that does not take its answers is therefore
 * no longer read, and HTTP/2 flow control stops its sending. What answers it still gets (mutations that were taken while
 * it read) are counted against the {@link SessionBacklog} bounds; one that would pass them cancels the stream with
 * RESOURCE_EXHAUSTED instead of being queued.
 *
 * <p>Thread-safe. Requests arrive one at a time on the call's executor; answers are sent from that thread or the
 * reply threads, under the lock of {@code responses} (a gRPC observer is not thread-safe), which guards sending,
 * asking for requests and every field below, and nests inside nothing ({@link SessionBacklog} is lock-free).
 */
final class SessionStream implements StreamObserver<SessionRequest> {

    private static final Logger LOG = LoggerFactory.getLogger(SessionStream.class);

    /**
     * Keys of requests taken and not answered (each request counting at least one) past which no more requests are read
     * until answers go out: four full batches waiting for their changes to be durable.
     */
    static final int MAX_OUTSTANDING_KEYS = 4 * BatchLimits.MAX_BATCH;

    private final SessionRpcs sessions;
    private final PageWriteRpcs writes;
    private final PageReadRpcs reads;
    private final DurableAnswers answers;
    private final AccessControl.SessionGuard guard;
    private final ServerCallStreamObserver<SessionResponse> responses;
    private final SessionBacklog backlog;
    /** Requests taken and not answered yet, and the keys they carry (each counting at least one). */
    private int outstanding;
    private long outstandingKeys;
    /** The client sent its last request. */
    private boolean halfClosed;
    /** The call ended or is ending (cancelled, failed, completed): answers are dropped, no request is asked for. */
    private boolean ended;
    /** Its counts were taken out of {@link #backlog}: the transport let go of the call. */
    private boolean released;
    /** One request has been asked for and has not arrived yet. */
    private boolean asked;
    /** No request is asked for because the call is not ready: its client is not taking answers. */
    private boolean paused;
    /** Bytes of answers handed to the transport since the call was last seen ready (counted in {@link #backlog} too). */
    private long held;

    SessionStream(SessionRpcs sessions, AccessControl.SessionGuard guard, ServerCallStreamObserver<SessionResponse> responses) {
        this.sessions = sessions;
        this.writes = sessions.writes;
        this.reads = sessions.reads;
        this.answers = sessions.answers;
        this.guard = guard;
        this.responses = responses;
        this.backlog = sessions.backlog;
        // Requests are asked for one at a time, while the client takes its answers (see askIfAllowed).
        responses.disableAutoRequest();
        responses.setOnCancelHandler(this::release);
        responses.setOnCloseHandler(this::release);
        responses.setOnReadyHandler(() -> {
            synchronized (responses) {
                releaseHeld(); // ready: what the transport holds is below its threshold
                askIfAllowed();
            }
        });
        synchronized (responses) {
            asked = true;
            responses.request(1);
        }
    }

    @Override
    public void onNext(SessionRequest request) {
        long arrived = System.nanoTime();
        synchronized (responses) {
            asked = false;
        }
        if (request.getRequestCase() == SessionRequest.RequestCase.BUNDLE) {
            onBundle(request, arrived);
        } else {
            synchronized (responses) {
                outstanding++;
                outstandingKeys += weight(request);
            }
            Served served = serve(request, arrived);
            answers.whenDurable(served.awaitSequence, () -> answer(List.of(served.settled())), e -> answer(List.of(served.failedWith(e))));
        }
        synchronized (responses) {
            askIfAllowed();
        }
    }

    /** The keys a request counts for while it is outstanding: its own, at least one. */
    private static long weight(SessionRequest request) {
        return Math.max(1, BatchLimits.keysOf(request));
    }

    /**
     * Asks for the next request when the client takes its answers (the call is ready) and what was taken and not
     * answered is under {@link #MAX_OUTSTANDING_KEYS}; otherwise the onReady handler or the next answer asks again.
     * Caller holds the lock of {@code responses}.
     */
    private void askIfAllowed() {
        if (asked || ended || halfClosed || outstandingKeys >= MAX_OUTSTANDING_KEYS) {
            return;
        }
        if (!responses.isReady()) {
            if (!paused) {
                paused = true;
                backlog.paused(1);
            }
            return;
        }
        releaseHeld();
        if (paused) {
            paused = false;
            backlog.paused(-1);
        }
        asked = true;
        responses.request(1);
    }

    /** The transport sent what this stream had counted. Caller holds the lock of {@code responses}. */
    private void releaseHeld() {
        if (held > 0) {
            backlog.release(held);
            held = 0;
        }
    }

    /** The call is over for the transport (cancelled, or closed and sent): its counts leave the backlog. */
    private void release() {
        synchronized (responses) {
            ended = true;
            if (released) {
                return;
            }
            released = true;
            releaseHeld();
            if (paused) {
                paused = false;
                backlog.paused(-1);
            }
        }
    }

    /**
     * The requests of a bundle, served one after the other as if each had come alone; what is answered at once goes
     * out in one message, and the others' answers in another once the last change they wait for is durable (one
     * wait covers them all: it waits for the highest sequence any of them needs).
     */
    private void onBundle(SessionRequest bundle, long arrived) {
        List<SessionRequest> members = bundle.getBundle().getRequestsList();
        MasterMetrics metrics = sessions.metrics();
        if (metrics != null) {
            metrics.sessionBundle(members.size());
        }
        String refused = members.isEmpty() ? "session bundle " + bundle.getId() + " carries no request" : oversized(bundle.getId(), members);
        if (refused != null) {
            synchronized (responses) {
                outstanding++;
                outstandingKeys++;
            }
            answer(List.of(new Served(null, 1, arrived, failure(bundle.getId(), WireErrors.exception(ErrorCode.INVALID_PARAMS, refused)),
                    0)));
            return;
        }
        long keys = 0;
        for (SessionRequest member : members) {
            keys += weight(member);
        }
        synchronized (responses) {
            outstanding += members.size();
            outstandingKeys += keys;
        }
        List<Served> atOnce = new ArrayList<>(members.size());
        List<Served> afterDurable = new ArrayList<>(members.size());
        long awaitSequence = 0;
        for (SessionRequest member : members) {
            Served served = serve(member, arrived);
            (served.awaitSequence == 0 ? atOnce : afterDurable).add(served);
            awaitSequence = Math.max(awaitSequence, served.awaitSequence);
        }
        if (!atOnce.isEmpty()) {
            answer(atOnce);
        }
        if (!afterDurable.isEmpty()) {
            answers.whenDurable(awaitSequence, () -> {
                List<Served> settled = new ArrayList<>(afterDurable.size());
                for (Served served : afterDurable) {
                    settled.add(served.settled());
                }
                answer(settled);
            }, e -> {
                List<Served> failed = new ArrayList<>(afterDurable.size());
                for (Served served : afterDurable) {
                    failed.add(served.failedWith(e));
                }
                answer(failed);
            });
        }
    }

    /**
     * Why a bundle is larger than one batch may be, or null: a bundle is answered like one batch, so it carries at most
     * {@link BatchLimits#MAX_BATCH} requests and as many keys in all.
     */
    private static String oversized(long id, List<SessionRequest> members) {
        long keys = 0;
        for (SessionRequest member : members) {
            keys += BatchLimits.keysOf(member);
        }
        if (members.size() <= BatchLimits.MAX_BATCH && keys <= BatchLimits.MAX_BATCH) {
            return null;
        }
        return "session bundle " + id + " carries " + members.size() + " requests with " + keys + " keys in all: a bundle may carry "
                + "at most " + BatchLimits.MAX_BATCH + " requests and " + BatchLimits.MAX_BATCH + " keys, as one batch; none of it "
                + "was done";
    }

    /**
     * What one request came to: its answer, and the log sequence that must be durable before it goes out: 0 for none (a
     * lookup of durable mappings, a request refused whole, an allocation inside durable reservations), {@link
     * AnswerBarrier#EVERYTHING} for every change made so far (a mutation that was done). {@code kind} is null for a
     * bundle's own answer; {@code weight} is what the request counts for while outstanding ({@link #weight}). A lookup
     * that met commits the log did not hold yet has no answer yet but {@code lookAgain}, which makes it once they are
     * durable, or the log failed.
     */
    private record Served(SessionRequest.RequestCase kind, long weight, long arrived, SessionResponse response, long awaitSequence,
                          java.util.function.Supplier<SessionResponse> lookAgain) {

        Served(SessionRequest.RequestCase kind, long weight, long arrived, SessionResponse response, long awaitSequence) {
            this(kind, weight, arrived, response, awaitSequence, null);
        }

        /** The answer once the log holds what it waited for (a lookup's, made now). */
        Served settled() {
            if (lookAgain == null) {
                return this;
            }
            SessionResponse looked;
            try {
                looked = lookAgain.get();
            } catch (StatusRuntimeException e) {
                looked = failure(response.getId(), e);
            } catch (RuntimeException e) {
                LOG.error("session lookup {} failed", response.getId(), e);
                looked = failure(response.getId(), WireErrors.exception(ErrorCode.INTERNAL_ERROR, "request " + response.getId() + " failed: " + e));
            }
            return new Served(kind, weight, arrived, looked, 0);
        }

        /** The answer instead, when the log could not make the changes durable: a lookup's keys that waited are misses. */
        Served failedWith(StatusRuntimeException e) {
            return lookAgain != null ? settled() : new Served(kind, weight, arrived, failure(response.getId(), e), 0);
        }
    }

    /** Checks and does one request; nothing of it is sent here. */
    private Served serve(SessionRequest request, long arrived) {
        long id = request.getId();
        SessionRequest.RequestCase kind = request.getRequestCase();
        long weight = weight(request);
        try {
            if (kind == SessionRequest.RequestCase.BUNDLE) {
                return new Served(kind, weight, arrived, failure(id, WireErrors.exception(ErrorCode.INVALID_PARAMS, "session request " + id
                        + " is a bundle inside a bundle: bundles do not nest")), 0);
            }
            String twin = MethodPermissions.sessionTwin(kind);
            if (twin == null) {
                return new Served(kind, weight, arrived, failure(id, WireErrors.exception(ErrorCode.INVALID_PARAMS, "session request " + id
                        + " carries no request: allowed are allocate, notify, lookup, free, remove and a bundle of these")), 0);
            }
            Status refused = guard == null
                    ? Status.PERMISSION_DENIED.withDescription("this master checks no access on its streams: use the unary calls")
                    : guard.refusal(twin, MethodPermissions.sessionInner(request));
            if (refused != null) {
                return new Served(kind, weight, arrived, failure(id, refused.asRuntimeException()), 0);
            }
            SessionResponse.Builder response = SessionResponse.newBuilder().setId(id);
            switch (kind) {
                case LOOKUP -> {
                    AnswerBarrier wait = new AnswerBarrier();
                    BatchGetDistributedPageMappingRequest lookup = request.getLookup();
                    List<Result<Placement>> found = reads.batchLookupResults(lookup, wait);
                    if (wait.sequence() == 0) {
                        return new Served(kind, weight, arrived, response.setLookup(reads.batchLookup(lookup, found)).build(), 0);
                    }
                    // Met commits the log does not hold yet: answered once it does, with those keys looked up again.
                    return new Served(kind, weight, arrived, response.build(), wait.sequence(),
                            () -> SessionResponse.newBuilder().setId(id).setLookup(reads.batchLookup(lookup, reads.lookAgain(lookup, found))).build());
                }
                case ALLOCATE -> {
                    AnswerBarrier answer = new AnswerBarrier();
                    response.setAllocate(writes.batchAllocate(request.getAllocate(), answer));
                    return new Served(kind, weight, arrived, response.build(), answer.sequence());
                }
                case NOTIFY -> {
                    AnswerBarrier answer = new AnswerBarrier();
                    response.setNotify(writes.notifySuccess(request.getNotify(), answer));
                    return new Served(kind, weight, arrived, response.build(), answer.sequence());
                }
                case FREE -> response.setFree(writes.batchFree(request.getFree()));
                case REMOVE -> response.setRemove(writes.batchRemove(request.getRemove()));
                default -> throw new IllegalStateException("no handler for " + kind);
            }
            return new Served(kind, weight, arrived, response.build(), AnswerBarrier.EVERYTHING);
        } catch (StatusRuntimeException e) {
            return new Served(kind, weight, arrived, failure(id, e), 0); // the check of the request as a whole: nothing of it was done
        } catch (ChangeLog.Refused e) {
            return new Served(kind, weight, arrived, failure(id, WireErrors.changesRefused(e.getMessage())), 0);
        } catch (RuntimeException e) {
            LOG.error("session request {} failed", id, e);
            return new Served(kind, weight, arrived, failure(id, WireErrors.exception(ErrorCode.INTERNAL_ERROR, "request " + id + " failed: " + e)), 0);
        }
    }

    /** The answer to a request that failed whole, as its twin's call would have closed. */
    static SessionResponse failure(long id, StatusRuntimeException e) {
        SessionError.Builder error = SessionError.newBuilder().setGrpcCode(e.getStatus().getCode().value());
        if (e.getStatus().getDescription() != null) {
            error.setMessage(e.getStatus().getDescription());
        }
        Metadata trailers = e.getTrailers();
        String code = trailers == null ? null : trailers.get(WireErrors.ERROR_CODE_KEY);
        if (code != null) {
            error.setError(ErrorCode.valueOf(code));
        }
        error.setChangesRefused(WireErrors.isChangesRefused(e));
        return SessionResponse.newBuilder().setId(id).setError(error).build();
    }

    /** Sends the answers of {@code served} in one message (a bundle when there are several) and counts them. */
    private void answer(List<Served> served) {
        MasterMetrics metrics = sessions.metrics();
        if (metrics != null) {
            long now = System.nanoTime();
            for (Served one : served) {
                MasterMetrics.SessionKind series = one.kind == null ? null : metrics.session(one.kind);
                if (series != null) {
                    SessionResponse response = one.response;
                    series.answered(now - one.arrived,
                            response.hasError() ? Status.fromCodeValue(response.getError().getGrpcCode()).getCode().name() : null);
                }
            }
        }
        SessionResponse message;
        if (served.size() == 1) {
            message = served.get(0).response;
        } else {
            SessionResponses.Builder bundle = SessionResponses.newBuilder();
            for (Served one : served) {
                bundle.addResponses(one.response);
            }
            message = SessionResponse.newBuilder().setBundle(bundle).build();
        }
        long keys = 0;
        for (Served one : served) {
            keys += one.weight;
        }
        int bytes = message.getSerializedSize(); // computed once: the marshaller reads it again
        synchronized (responses) {
            outstanding -= served.size();
            outstandingKeys -= keys;
            if (ended) {
                return;
            }
            if (responses.isReady()) {
                releaseHeld();
            } else {
                SessionBacklog.Exceeded exceeded = backlog.wouldExceed(held, bytes);
                if (exceeded != null) {
                    cancel(exceeded, bytes);
                    return;
                }
            }
            held += bytes;
            backlog.hold(bytes);
            try {
                responses.onNext(message);
            } catch (RuntimeException e) {
                ended = true; // the call is gone; the client sees the stream fail and knows these answers are lost
                return;
            }
            completeIfDone();
            askIfAllowed();
        }
    }

    /**
     * Ends the stream with RESOURCE_EXHAUSTED instead of sending an answer of {@code bytes} that would pass a bound:
     * its client is not taking its answers. Answers still waiting are dropped, as when a client cancels; the status
     * follows the answers the transport holds, and the transport lets them go when the client reads them, resets the
     * stream or its connection closes. Caller holds the lock of {@code responses}.
     */
    private void cancel(SessionBacklog.Exceeded exceeded, int bytes) {
        ended = true;
        backlog.cancelled(exceeded);
        String why = exceeded == SessionBacklog.Exceeded.STREAM
                ? "this stream's client has not taken " + SpaceBacking.bytes(held) + " of answers, and the next one ("
                        + SpaceBacking.bytes(bytes) + ") would pass session_backlog " + SpaceBacking.bytes(backlog.streamLimit())
                : "the master holds " + SpaceBacking.bytes(backlog.held()) + " of answers that Session clients have not taken, and "
                        + "this stream's next one (" + SpaceBacking.bytes(bytes) + ", its client not taking answers either) would pass "
                        + "session_backlog_total " + SpaceBacking.bytes(backlog.totalLimit());
        String description = "Session stream cancelled: " + why + "; a client must read its answers as they come "
                + "(the outcome of the requests not answered is unknown, as when a call is cut)";
        CANCELLED_LOG.occurred(() -> description);
        responses.onError(Status.RESOURCE_EXHAUSTED.withDescription(description).asRuntimeException());
    }

    /** Cancelled streams are logged in one line at most every 10 s: a client that does it once tends to do it on every stream. */
    private static final RateLimitedLog CANCELLED_LOG = new RateLimitedLog(LOG, java.time.Duration.ofSeconds(10), System::nanoTime);

    @Override
    public void onError(Throwable t) {
        synchronized (responses) {
            ended = true; // the client went away: what it sent was done or not, as on a unary call whose answer is lost
        }
    }

    @Override
    public void onCompleted() {
        synchronized (responses) {
            halfClosed = true;
            completeIfDone();
        }
    }

    /** Caller holds the lock of {@code responses}. */
    private void completeIfDone() {
        if (halfClosed && outstanding == 0 && !ended) {
            ended = true;
            responses.onCompleted();
        }
    }
}
