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
import io.mcctl.master.security.AccessControl;
import io.mcctl.master.security.MethodPermissions;
import io.mcctl.master.service.AnswerBarrier;
import io.mcctl.master.service.ChangeLog;
import io.mcctl.master.service.Placement;
import io.mcctl.master.service.Result;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Session stream: each request it carries is checked by its unary twin's access rule, handed to the very method
 * of {@link MasterGrpcService} that serves the twin, and answered by its id: lookups at once (or, one that met a
 * commit the log does not hold yet, once it does), allocations once the reservations they were made in are durable (see
 * {@link AnswerBarrier}), notifies once their commits are, other mutations once their changes are durable (so answers may
 * overtake each other). A request that fails whole is answered with the status
 * its twin's call would have closed with; the stream goes on. A bundle's requests are served the same way, one after
 * the other, and answered in bundles: one message for what is answered at once, one for what waits for the log.
 *
 * <p>Thread-safe. Requests arrive one at a time on the call's executor; answers are sent from that thread or the
 * reply threads, under the lock of {@code responses} (a gRPC observer is not thread-safe), which guards sending,
 * {@link #outstanding} and {@link #halfClosed}, and nests inside nothing.
 */
final class SessionStream implements StreamObserver<SessionRequest> {

    private static final Logger LOG = LoggerFactory.getLogger(SessionStream.class);

    private final MasterGrpcService service;
    private final AccessControl.SessionGuard guard;
    private final ServerCallStreamObserver<SessionResponse> responses;
    /** Requests taken and not answered yet; guarded by {@code responses}. */
    private int outstanding;
    /** The client sent its last request; guarded by {@code responses}. */
    private boolean halfClosed;
    /** The call ended (the client cancelled it or went away): answers are dropped. Guarded by {@code responses}. */
    private boolean ended;

    SessionStream(MasterGrpcService service, AccessControl.SessionGuard guard, ServerCallStreamObserver<SessionResponse> responses) {
        this.service = service;
        this.guard = guard;
        this.responses = responses;
        responses.setOnCancelHandler(() -> {
            synchronized (responses) {
                ended = true;
            }
        });
    }

    @Override
    public void onNext(SessionRequest request) {
        long arrived = System.nanoTime();
        if (request.getRequestCase() == SessionRequest.RequestCase.BUNDLE) {
            onBundle(request, arrived);
            return;
        }
        synchronized (responses) {
            outstanding++;
        }
        Served served = serve(request, arrived);
        service.whenDurable(served.awaitSequence, () -> answer(List.of(served.settled())), e -> answer(List.of(served.failedWith(e))));
    }

    /**
     * The requests of a bundle, served one after the other as if each had come alone; what is answered at once goes
     * out in one message, and the others' answers in another once the last change they wait for is durable (one
     * wait covers them all: it waits for the highest sequence any of them needs).
     */
    private void onBundle(SessionRequest bundle, long arrived) {
        List<SessionRequest> members = bundle.getBundle().getRequestsList();
        MasterMetrics metrics = service.metrics();
        if (metrics != null) {
            metrics.sessionBundle(members.size());
        }
        if (members.isEmpty()) {
            synchronized (responses) {
                outstanding++;
            }
            answer(List.of(new Served(null, arrived, failure(bundle.getId(), WireErrors.exception(ErrorCode.INVALID_PARAMS,
                    "session bundle " + bundle.getId() + " carries no request")), 0)));
            return;
        }
        synchronized (responses) {
            outstanding += members.size();
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
            service.whenDurable(awaitSequence, () -> {
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
     * What one request came to: its answer, and the log sequence that must be durable before it goes out: 0 for none (a
     * lookup of durable mappings, a request refused whole, an allocation inside durable reservations), {@link
     * AnswerBarrier#EVERYTHING} for every change made so far (a mutation that was done). {@code kind} is null for a
     * bundle's own answer. A lookup that met commits the log did not hold yet has no answer yet but {@code lookAgain},
     * which makes it once they are durable, or the log failed.
     */
    private record Served(SessionRequest.RequestCase kind, long arrived, SessionResponse response, long awaitSequence,
                          java.util.function.Supplier<SessionResponse> lookAgain) {

        Served(SessionRequest.RequestCase kind, long arrived, SessionResponse response, long awaitSequence) {
            this(kind, arrived, response, awaitSequence, null);
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
            return new Served(kind, arrived, looked, 0);
        }

        /** The answer instead, when the log could not make the changes durable: a lookup's keys that waited are misses. */
        Served failedWith(StatusRuntimeException e) {
            return lookAgain != null ? settled() : new Served(kind, arrived, failure(response.getId(), e), 0);
        }
    }

    /** Checks and does one request; nothing of it is sent here. */
    private Served serve(SessionRequest request, long arrived) {
        long id = request.getId();
        SessionRequest.RequestCase kind = request.getRequestCase();
        try {
            if (kind == SessionRequest.RequestCase.BUNDLE) {
                return new Served(kind, arrived, failure(id, WireErrors.exception(ErrorCode.INVALID_PARAMS, "session request " + id
                        + " is a bundle inside a bundle: bundles do not nest")), 0);
            }
            String twin = MethodPermissions.sessionTwin(kind);
            if (twin == null) {
                return new Served(kind, arrived, failure(id, WireErrors.exception(ErrorCode.INVALID_PARAMS, "session request " + id
                        + " carries no request: allowed are allocate, notify, lookup, free, remove and a bundle of these")), 0);
            }
            Status refused = guard == null
                    ? Status.PERMISSION_DENIED.withDescription("this master checks no access on its streams: use the unary calls")
                    : guard.refusal(twin, MethodPermissions.sessionInner(request));
            if (refused != null) {
                return new Served(kind, arrived, failure(id, refused.asRuntimeException()), 0);
            }
            SessionResponse.Builder response = SessionResponse.newBuilder().setId(id);
            switch (kind) {
                case LOOKUP -> {
                    AnswerBarrier wait = new AnswerBarrier();
                    BatchGetDistributedPageMappingRequest lookup = request.getLookup();
                    List<Result<Placement>> found = service.batchLookupResults(lookup, wait);
                    if (wait.sequence() == 0) {
                        return new Served(kind, arrived, response.setLookup(service.batchLookup(lookup, found)).build(), 0);
                    }
                    // Met commits the log does not hold yet: answered once it does, with those keys looked up again.
                    return new Served(kind, arrived, response.build(), wait.sequence(),
                            () -> SessionResponse.newBuilder().setId(id).setLookup(service.batchLookup(lookup, service.lookAgain(lookup, found))).build());
                }
                case ALLOCATE -> {
                    AnswerBarrier answer = new AnswerBarrier();
                    response.setAllocate(service.batchAllocate(request.getAllocate(), answer));
                    return new Served(kind, arrived, response.build(), answer.sequence());
                }
                case NOTIFY -> {
                    AnswerBarrier answer = new AnswerBarrier();
                    response.setNotify(service.notifySuccess(request.getNotify(), answer));
                    return new Served(kind, arrived, response.build(), answer.sequence());
                }
                case FREE -> response.setFree(service.batchFree(request.getFree()));
                case REMOVE -> response.setRemove(service.batchRemove(request.getRemove()));
                default -> throw new IllegalStateException("no handler for " + kind);
            }
            return new Served(kind, arrived, response.build(), AnswerBarrier.EVERYTHING);
        } catch (StatusRuntimeException e) {
            return new Served(kind, arrived, failure(id, e), 0); // the check of the request as a whole: nothing of it was done
        } catch (ChangeLog.Refused e) {
            return new Served(kind, arrived, failure(id, WireErrors.changesRefused(e.getMessage())), 0);
        } catch (RuntimeException e) {
            LOG.error("session request {} failed", id, e);
            return new Served(kind, arrived, failure(id, WireErrors.exception(ErrorCode.INTERNAL_ERROR, "request " + id + " failed: " + e)), 0);
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
        MasterMetrics metrics = service.metrics();
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
        synchronized (responses) {
            outstanding -= served.size();
            if (ended) {
                return;
            }
            try {
                responses.onNext(message);
            } catch (RuntimeException e) {
                ended = true; // the call is gone; the client sees the stream fail and knows these answers are lost
                return;
            }
            completeIfDone();
        }
    }

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
