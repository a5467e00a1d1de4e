package io.mcctl.master.ha;

import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A leader answers a request only while its lease is valid, checked as each request message arrives: a new call, and
 * each request of a Session stream opened while it led. A leader paused past its lease (SIGSTOP, a long collection)
 * reads the requests queued in its socket when it wakes, before its role thread has noticed; without this it would
 * answer lookups from a state a new leader may have changed since, handing out descriptors of pages no longer held for
 * the reader. Mutations are held back by the log as well (no append and no answer past the lease); this covers lookups
 * and closes the streams of the lapsed term.
 */
final class LeaseGuard implements ServerInterceptor {

    private final LeaderLease lease;
    private final long epoch;

    LeaseGuard(LeaderLease lease, long epoch) {
        this.lease = lease;
        this.epoch = epoch;
    }

    @Override
    public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers, ServerCallHandler<Q, A> next) {
        AtomicBoolean refused = new AtomicBoolean();
        AtomicBoolean delivered = new AtomicBoolean();
        if (!lease.valid()) {
            refuse(call, refused, false);
            return new ServerCall.Listener<>() {
            };
        }
        // Once refused, whatever the service still answers on this call (a stream's earlier requests) is dropped: the
        // call is closed already.
        ServerCall<Q, A> guarded = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void sendMessage(A message) {
                if (!refused.get()) {
                    super.sendMessage(message);
                }
            }

            @Override
            public void close(Status status, Metadata trailers) {
                if (refused.compareAndSet(false, true)) {
                    super.close(status, trailers);
                }
            }
        };
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(next.startCall(guarded, headers)) {
            @Override
            public void onMessage(Q message) {
                if (refused.get()) {
                    return;
                }
                if (lease.valid()) {
                    delivered.set(true);
                    super.onMessage(message);
                } else {
                    refuse(call, refused, delivered.get());
                }
            }

            @Override
            public void onHalfClose() {
                if (!refused.get()) {
                    super.onHalfClose();
                }
            }
        };
    }

    /**
     * Closes the call. When nothing of it reached the service, the refusal carries the leader trailer (empty: ask etcd),
     * which tells a client the call was not acted on and may be sent to the leader whatever it is; a stream that had
     * requests served before goes without it, since their outcomes are unknown.
     */
    private void refuse(ServerCall<?, ?> call, AtomicBoolean refused, boolean anythingDelivered) {
        if (refused.compareAndSet(false, true)) {
            Metadata trailers = new Metadata();
            if (!anythingDelivered) {
                trailers.put(io.mcctl.master.etcd.LeaderRedirect.LEADER, "");
            }
            call.close(Status.UNAVAILABLE.withDescription("this master lost its leader lease (epoch " + epoch + "): "
                    + lease.lostReason() + "; ask the current leader"), trailers);
        }
    }
}
