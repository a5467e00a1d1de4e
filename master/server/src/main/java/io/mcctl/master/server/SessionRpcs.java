package io.mcctl.master.server;

import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.mcctl.master.proto.v1.SessionRequest;
import io.mcctl.master.proto.v1.SessionResponse;
import io.mcctl.master.security.AccessControl;

/**
 * The Session stream's side of the service: it opens each {@link SessionStream} over the same batch operations the
 * unary calls use, and holds what every stream shares (the bounds of what streams hold for clients that do not take
 * their answers, and where their requests are counted).
 *
 * <p>Thread-safe: {@code metrics} is volatile; {@link SessionBacklog} is lock-free; nothing here takes a lock.
 */
final class SessionRpcs {

    final PageWriteRpcs writes;
    final PageReadRpcs reads;
    final DurableAnswers answers;
    /** What Session streams hold for clients that have not taken their answers, and its bounds. */
    final SessionBacklog backlog = new SessionBacklog();
    /** Where Session requests are counted by kind; null until {@link MasterServer#intercepted} (tests may run without). */
    private volatile MasterMetrics metrics;

    SessionRpcs(PageWriteRpcs writes, PageReadRpcs reads, DurableAnswers answers) {
        this.writes = writes;
        this.reads = reads;
        this.answers = answers;
    }

    void useMetrics(MasterMetrics metrics) {
        this.metrics = metrics;
        metrics.watchSessions(backlog);
    }

    /** Where Session requests are counted, or null. */
    MasterMetrics metrics() {
        return metrics;
    }

    StreamObserver<SessionRequest> session(StreamObserver<SessionResponse> responses) {
        return new SessionStream(this, AccessControl.SESSION_GUARD.get(), (ServerCallStreamObserver<SessionResponse>) responses);
    }
}
