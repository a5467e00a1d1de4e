package io.mcctl.master.server;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.SessionError;
import io.mcctl.master.proto.v1.SessionRequest;
import io.mcctl.master.proto.v1.SessionResponse;
import io.mcctl.master.security.AccessControl;
import io.mcctl.master.security.MethodPermissions;
import io.mcctl.master.service.ChangeLog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Session stream: each request it carries is checked by its unary twin's access rule, handed to the very method
 * of {@link MasterGrpcService} that serves the twin, and answered by its id: lookups at once, mutations once their
 * changes are durable (so answers may overtake each other). A request that fails whole is answered with the status
 * its twin's call would have closed with; the stream goes on.
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
        synchronized (responses) {
            outstanding++;
        }
        long id = request.getId();
        long arrived = System.nanoTime();
        SessionRequest.RequestCase kind = request.getRequestCase();
        MasterMetrics metrics = service.metrics();
        MasterMetrics.SessionKind series = metrics == null ? null : metrics.session(kind);
        java.util.function.Consumer<SessionResponse> reply = series == null ? this::answer : response -> {
            series.answered(System.nanoTime() - arrived,
                    response.hasError() ? Status.fromCodeValue(response.getError().getGrpcCode()).getCode().name() : null);
            answer(response);
        };
        try {
            String twin = MethodPermissions.sessionTwin(kind);
            if (twin == null) {
                reply.accept(failure(id, WireErrors.exception(ErrorCode.INVALID_PARAMS, "session request " + id
                        + " carries no request: allowed are allocate, notify, lookup, free and remove")));
                return;
            }
            Status refused = guard == null
                    ? Status.PERMISSION_DENIED.withDescription("this master checks no access on its streams: use the unary calls")
                    : guard.refusal(twin, MethodPermissions.sessionInner(request));
            if (refused != null) {
                reply.accept(failure(id, refused.asRuntimeException()));
                return;
            }
            SessionResponse.Builder response = SessionResponse.newBuilder().setId(id);
            switch (kind) {
                case LOOKUP -> {
                    reply.accept(response.setLookup(service.batchLookup(request.getLookup())).build());
                    return;
                }
                case ALLOCATE -> response.setAllocate(service.batchAllocate(request.getAllocate()));
                case NOTIFY -> response.setNotify(service.notifySuccess(request.getNotify()));
                case FREE -> response.setFree(service.batchFree(request.getFree()));
                case REMOVE -> response.setRemove(service.batchRemove(request.getRemove()));
                default -> throw new IllegalStateException("no handler for " + kind);
            }
            SessionResponse done = response.build();
            service.whenDurable(() -> reply.accept(done), e -> reply.accept(failure(id, e)));
        } catch (StatusRuntimeException e) {
            reply.accept(failure(id, e)); // the check of the request as a whole: nothing of it was done
        } catch (ChangeLog.Refused e) {
            reply.accept(failure(id, WireErrors.changesRefused(e.getMessage())));
        } catch (RuntimeException e) {
            LOG.error("session request {} failed", id, e);
            reply.accept(failure(id, WireErrors.exception(ErrorCode.INTERNAL_ERROR, "request " + id + " failed: " + e)));
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

    private void answer(SessionResponse response) {
        synchronized (responses) {
            outstanding--;
            if (ended) {
                return;
            }
            try {
                responses.onNext(response);
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
