package io.mcctl.master.client;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.mcctl.master.etcd.EtcdClient;
import io.mcctl.master.etcd.EtcdTarget;
import io.mcctl.master.etcd.LeaderRedirect;
import io.mcctl.master.protocol.WireErrors;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A channel to whichever master leads the cluster named by an {@code etcd://} address, for every caller at once: each
 * call goes to the leader as last known, and a failure that says the leader may have changed (a standby's refusal
 * naming the leader in the {@code mcctl-leader} trailer, a refused or lost connection, a leader that lost its lease,
 * a deadline passed) moves the channel to the leader the trailer names or, without one, to the one etcd names now.
 * Callers keep their stubs; a stream that broke on a fail-over is opened again through this channel and reaches the
 * new leader.
 *
 * <p>A unary call is also sent again, within its own deadline, when that is safe: always when the first attempt was
 * certainly not acted on (no connection could be made, or a standby refused it), and after an unknown outcome only
 * for the calls {@link RetrySafety} lists. Streaming calls are never resent here; their callers open them again. Once an
 * attempt's outcome was unknown, a call that ends without an answer reads as outcome unknown however the later attempts
 * failed (a standby's refusal or a refused connection says nothing of the attempt that may have landed): the listener is
 * closed with {@code UNAVAILABLE} caused by {@link EarlierAttemptMayHaveLanded}, which {@link MasterClient} reports as
 * such.
 *
 * <p>Thread-safe. {@code lock} guards the leader's address, the channel to it and the channels retired; it is held
 * only to read or swap them, never across a call or an etcd lookup. {@code lookupLock} makes etcd lookups one at a
 * time (the calls failing together during a fail-over share one); it is taken before {@code lock}, never after.
 */
final class LeaderFollowingChannel extends ManagedChannel {

    private static final Logger LOG = LoggerFactory.getLogger(LeaderFollowingChannel.class);
    private static final long FIRST_BACKOFF_MILLIS = 20;
    private static final long MAX_BACKOFF_MILLIS = 200;
    /** How long a call without a deadline of its own keeps trying to find a leader. */
    private static final long RETRY_LIMIT_WITHOUT_DEADLINE_MILLIS = 30_000;

    private final EtcdTarget target;
    private final LeaderDiscovery discovery;
    private final Function<String, ManagedChannel> connect;
    private final ScheduledExecutorService retries;
    private final Object lock = new Object();
    private final Object lookupLock = new Object();
    private String leader; // guarded by lock
    private ManagedChannel current; // guarded by lock
    private final List<ManagedChannel> retired = new ArrayList<>(); // guarded by lock
    private volatile String lastProblem = "no lookup yet";
    private volatile boolean shutdown;

    private LeaderFollowingChannel(EtcdTarget target, Duration lookupTimeout, Function<String, ManagedChannel> connect) {
        this.target = target;
        this.discovery = new LeaderDiscovery(target, lookupTimeout);
        this.connect = connect;
        this.retries = Executors.newScheduledThreadPool(1, runnable -> {
            Thread thread = new Thread(runnable, "mcctl-leader-following");
            thread.setDaemon(true);
            return thread;
        });
    }

    /**
     * The channel for {@code target}: for {@code host:port}, the channel {@code connect} makes to it; for
     * {@code etcd://...}, one that follows the leader, making a channel to each leader with {@code connect}.
     */
    static ManagedChannel open(String target, Duration callTimeout, Function<String, ManagedChannel> connect) {
        if (!EtcdTarget.names(target)) {
            return connect.apply(target);
        }
        Duration lookupTimeout = Duration.ofMillis(Math.max(200, Math.min(2_000, callTimeout.toMillis() / 2)));
        return new LeaderFollowingChannel(EtcdTarget.parse(target), lookupTimeout, connect);
    }

    // ---- where the leader is ----

    /** The channel to the leader as last known, or null when none is known yet. */
    private ManagedChannel current() {
        synchronized (lock) {
            return current;
        }
    }

    /**
     * A call over {@code failed} (null: no channel yet) says the leader may have moved. Moves to {@code hint} (the
     * leader a standby named) or to what etcd says; keeps the channel when etcd still names the same master (its key
     * outlives a killed leader by up to the lease TTL), and lets that channel try to connect again at once. Blocks for
     * at most one etcd lookup; call it off the transport's threads.
     */
    private void relocate(ManagedChannel failed, String hint) {
        synchronized (lookupLock) {
            synchronized (lock) {
                if (shutdown || (current != failed && current != null)) {
                    return; // another call has already moved on
                }
            }
            String next = hint;
            if (next == null || next.isEmpty()) {
                try {
                    Optional<String> named = discovery.leader();
                    if (named.isEmpty()) {
                        lastProblem = "no master holds the leader key under " + target + " (an election is under way, or no master runs)";
                        return;
                    }
                    next = named.get();
                } catch (EtcdClient.EtcdUnavailableException | IllegalStateException e) {
                    lastProblem = e.getMessage();
                    return;
                }
            }
            ManagedChannel stale = null;
            synchronized (lock) {
                if (shutdown) {
                    return;
                }
                if (next.equals(leader) && current != null) {
                    current.resetConnectBackoff();
                    return;
                }
                LOG.info("master leader at {} ({}), was {}", next, target, leader == null ? "unknown" : leader);
                stale = current;
                leader = next;
                current = connect.apply(next);
                retired.removeIf(ManagedChannel::isTerminated);
                if (stale != null) {
                    retired.add(stale);
                }
            }
            if (stale != null) {
                stale.shutdown(); // calls still out on it finish; new ones go to the new leader
            }
        }
    }

    /** {@link #relocate} on the retry thread (a failed call's transport thread must not wait for etcd). */
    private void relocateLater(ManagedChannel failed, String hint) {
        try {
            retries.execute(() -> relocate(failed, hint));
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closed: nothing follows the leader any more
        }
    }

    // ---- calls ----

    /** What a failed call says about its own outcome and the leader. */
    private enum Failure {
        /** Certainly not acted on: no connection was made, or a master that does not lead refused it. */
        NOT_ACTED_ON,
        /** Perhaps acted on: the connection closed under it, or the leader could not make its answer durable. */
        OUTCOME_UNKNOWN,
        /** An answer from the leader, or a deadline passed: not sent again, but the leader is looked up again. */
        FINAL_LOOK_AGAIN,
        /** An answer: nothing to do with the leader. */
        FINAL
    }

    /**
     * The cause of the status a resent call closes with when an earlier attempt may have reached a master: it is neither
     * a refusal nor a refused connection, so nothing reads the call as not sent. Never leaves this client.
     */
    static final class EarlierAttemptMayHaveLanded extends Exception {
        private static final long serialVersionUID = 1L;

        EarlierAttemptMayHaveLanded(String message) {
            super(message, null, false, false);
        }
    }

    /** Whether {@code e} is the failure of a call an earlier attempt of which may have reached a master. */
    static boolean earlierAttemptMayHaveLanded(Throwable e) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof EarlierAttemptMayHaveLanded) {
                return true;
            }
        }
        return false;
    }

    /** A failed attempt's status for people: its code and description, or what caused it. */
    private static String describe(Status status) {
        Throwable root = status.getCause();
        while (root != null && root.getCause() != null) {
            root = root.getCause();
        }
        String detail = status.getDescription() != null ? status.getDescription() : root != null ? root.toString() : null;
        if (status.getDescription() != null && root != null && root.getMessage() != null) {
            detail += " (" + root.getMessage() + ")";
        }
        return detail == null ? status.getCode().name() : status.getCode() + ": " + detail;
    }

    private static Failure classify(Status status, Metadata trailers) {
        if (trailers != null && trailers.containsKey(LeaderRedirect.LEADER)) {
            return Failure.NOT_ACTED_ON;
        }
        Status.Code code = status.getCode();
        if (code == Status.Code.UNAVAILABLE) {
            if (trailers != null && trailers.containsKey(WireErrors.CHANGES_REFUSED_KEY)) {
                return Failure.OUTCOME_UNKNOWN;
            }
            return MasterClient.notSent(status.asRuntimeException(trailers)) ? Failure.NOT_ACTED_ON : Failure.OUTCOME_UNKNOWN;
        }
        if (code == Status.Code.UNKNOWN && MasterClient.connectionLost(status.asRuntimeException())) {
            return Failure.OUTCOME_UNKNOWN;
        }
        return code == Status.Code.DEADLINE_EXCEEDED ? Failure.FINAL_LOOK_AGAIN : Failure.FINAL;
    }

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(MethodDescriptor<ReqT, RespT> method, CallOptions options) {
        if (method.getType() == MethodDescriptor.MethodType.UNARY) {
            return new ResendingCall<>(method, options);
        }
        ManagedChannel channel = current();
        if (channel == null) {
            relocate(null, null); // a stream cannot wait for a lookup off this thread: look up here, once
            channel = current();
        }
        if (channel == null) {
            return new RefusedCall<>(Status.UNAVAILABLE.withDescription("no leader found: " + lastProblem));
        }
        ManagedChannel used = channel;
        return new ForwardingClientCall.SimpleForwardingClientCall<>(channel.newCall(method, options)) {
            @Override
            public void start(Listener<RespT> listener, Metadata headers) {
                super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(listener) {
                    @Override
                    public void onClose(Status status, Metadata trailers) {
                        if (!status.isOk() && classify(status, trailers) != Failure.FINAL) {
                            relocateLater(used, LeaderRedirect.leaderOf(trailers));
                        }
                        super.onClose(status, trailers);
                    }
                }, headers);
            }
        };
    }

    /**
     * A unary call held whole (its headers and its one request) so that it can be sent again to another master; its
     * answer is passed on only once an attempt's outcome is final. The listener hears from one attempt at a time.
     */
    private final class ResendingCall<ReqT, RespT> extends ClientCall<ReqT, RespT> {
        private final MethodDescriptor<ReqT, RespT> method;
        private final CallOptions options;
        private final Context context = Context.current();
        private final long limitNanos;
        private Listener<RespT> listener;
        private Metadata headers;
        private ReqT request;
        private volatile ClientCall<ReqT, RespT> attempt;
        private volatile boolean cancelled;
        /** Between attempts: the last one failed and the next is not sent yet. */
        private volatile boolean waiting;
        /** The status of the first attempt that may have reached a master and was sent again, or null while none was. */
        private volatile Status mayHaveLanded;
        /** The listener has been closed: it hears nothing more. */
        private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
        /**
         * Where the listener hears from this call: the call's executor when it names one. A blocking stub's executor runs
         * callbacks on the caller's own thread, which sleeps until a callback is handed to it: a close from the retry
         * thread that called the listener directly would never wake it.
         */
        private final java.util.concurrent.Executor callbacks;

        ResendingCall(MethodDescriptor<ReqT, RespT> method, CallOptions options) {
            this.method = method;
            this.options = options;
            this.callbacks = options.getExecutor() != null ? options.getExecutor() : Runnable::run;
            this.limitNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RETRY_LIMIT_WITHOUT_DEADLINE_MILLIS);
        }

        @Override
        public void start(Listener<RespT> responseListener, Metadata requestHeaders) {
            this.listener = responseListener;
            this.headers = requestHeaders;
        }

        @Override
        public void request(int numMessages) {
            // every attempt asks for its own answer
        }

        @Override
        public void sendMessage(ReqT message) {
            this.request = message;
        }

        @Override
        public void halfClose() {
            send(1);
        }

        @Override
        public void cancel(String message, Throwable cause) {
            cancelled = true;
            ClientCall<ReqT, RespT> out = attempt;
            if (out != null) {
                out.cancel(message, cause); // its listener passes the cancellation on
            }
            if ((out == null || waiting) && listener != null && closed.compareAndSet(false, true)) {
                close(Status.CANCELLED.withDescription(message).withCause(cause), new Metadata());
            }
        }

        @Override
        public boolean isReady() {
            return true;
        }

        private long remainingMillis() {
            Deadline deadline = options.getDeadline();
            return deadline != null ? deadline.timeRemaining(TimeUnit.MILLISECONDS) : TimeUnit.NANOSECONDS.toMillis(limitNanos - System.nanoTime());
        }

        private void send(int number) {
            if (cancelled) {
                return;
            }
            ManagedChannel channel = current();
            if (channel == null) {
                if (number == 1) {
                    waiting = true;
                    later(() -> { // the first call of this channel: look the leader up now
                        relocate(null, null);
                        waiting = false;
                        send(2);
                    }, 0, Status.UNAVAILABLE.withDescription("the client is closed"));
                } else {
                    retryLater(number, null, null, Status.UNAVAILABLE.withDescription("no leader found: " + lastProblem), new Metadata(), false);
                }
                return;
            }
            ClientCall<ReqT, RespT> call;
            Context previous = context.attach();
            try {
                call = channel.newCall(method, options);
            } finally {
                context.detach(previous);
            }
            attempt = call;
            Metadata sent = new Metadata();
            sent.merge(headers);
            call.start(new Listener<>() {
                private Metadata answerHeaders;
                private RespT answer;

                @Override
                public void onHeaders(Metadata received) {
                    answerHeaders = received;
                }

                @Override
                public void onMessage(RespT message) {
                    answer = message;
                }

                @Override
                public void onClose(Status status, Metadata trailers) {
                    if (!status.isOk() && !cancelled) {
                        Failure failure = classify(status, trailers);
                        boolean resend = failure == Failure.NOT_ACTED_ON
                                || failure == Failure.OUTCOME_UNKNOWN && RetrySafety.resendableWithUnknownOutcome(method, request);
                        if (resend) {
                            retryLater(number, channel, LeaderRedirect.leaderOf(trailers), status, trailers, failure == Failure.OUTCOME_UNKNOWN);
                            return;
                        }
                        if (failure != Failure.FINAL) {
                            relocateLater(channel, LeaderRedirect.leaderOf(trailers));
                        }
                    }
                    if (!closed.compareAndSet(false, true)) {
                        return;
                    }
                    Metadata headersReceived = answerHeaders;
                    RespT answerReceived = answer;
                    Status told = told(status, trailers);
                    Metadata toldTrailers = told == status ? trailers : toldTrailers(trailers);
                    callbacks.execute(() -> {
                        if (headersReceived != null) {
                            listener.onHeaders(headersReceived);
                        }
                        if (answerReceived != null && status.isOk()) {
                            listener.onMessage(answerReceived);
                        }
                        listener.onClose(told, toldTrailers);
                    });
                }
            }, sent);
            call.request(2);
            call.sendMessage(request);
            call.halfClose();
        }

        /**
         * Sends attempt {@code number + 1} after a short pause (none when a standby named the leader), once the leader
         * has been looked up again, or passes {@code status} on when the call's deadline leaves no time for it.
         *
         * @param outcomeUnknown attempt {@code number} may have reached a master
         */
        private void retryLater(int number, ManagedChannel failed, String hint, Status status, Metadata trailers, boolean outcomeUnknown) {
            boolean named = hint != null && !hint.isEmpty();
            long pause = named ? 0 : Math.min(MAX_BACKOFF_MILLIS, FIRST_BACKOFF_MILLIS << Math.min(number - 1, 8));
            if (shutdown || remainingMillis() <= pause) {
                if (closed.compareAndSet(false, true)) {
                    close(status, trailers);
                }
                return;
            }
            if (outcomeUnknown && mayHaveLanded == null) {
                mayHaveLanded = status;
            }
            waiting = true;
            later(() -> {
                relocate(failed, hint);
                waiting = false;
                send(number + 1);
            }, pause, status);
        }

        /** Closes the listener on its executor (the caller checks {@link #closed} first). */
        private void close(Status status, Metadata trailers) {
            Status told = told(status, trailers);
            Metadata toldTrailers = told == status ? trailers : toldTrailers(trailers);
            callbacks.execute(() -> listener.onClose(told, toldTrailers));
        }

        /**
         * What the listener is told of a call that ended in {@code status}: that status, unless an earlier attempt may
         * have reached a master and the last one got no answer either (it was refused, or not sent, or lost too), which is
         * then told as an unknown outcome naming both attempts. A master's answer, a deadline and a cancellation pass as
         * they are.
         */
        private Status told(Status status, Metadata trailers) {
            Status earlier = mayHaveLanded;
            if (earlier == null || status.isOk()) {
                return status;
            }
            Failure failure = classify(status, trailers);
            if (failure != Failure.NOT_ACTED_ON && failure != Failure.OUTCOME_UNKNOWN) {
                return status;
            }
            String description = MasterException.earlierAttemptMessage(describe(earlier), describe(status));
            return Status.UNAVAILABLE.withDescription(description).withCause(new EarlierAttemptMayHaveLanded(description));
        }

        /** The trailers of an unknown outcome told instead of {@code trailers}: only the Mooncake code, none of a refusal's marks. */
        private Metadata toldTrailers(Metadata trailers) {
            Metadata told = new Metadata();
            String code = trailers == null ? null : trailers.get(WireErrors.ERROR_CODE_KEY);
            if (code != null) {
                told.put(WireErrors.ERROR_CODE_KEY, code);
            }
            return told;
        }

        /** Runs {@code next} on the retry thread after {@code pauseMillis}; when the channel is closed, closes with {@code status}. */
        private void later(Runnable next, long pauseMillis, Status status) {
            try {
                retries.schedule(next, pauseMillis, TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                waiting = false;
                if (closed.compareAndSet(false, true)) {
                    close(status, new Metadata());
                }
            }
        }
    }

    /** A call refused before it is sent (no leader could be found for a stream). */
    private static final class RefusedCall<ReqT, RespT> extends ClientCall<ReqT, RespT> {
        private final Status status;

        RefusedCall(Status status) {
            this.status = status;
        }

        @Override
        public void start(Listener<RespT> listener, Metadata headers) {
            listener.onClose(status, new Metadata());
        }

        @Override
        public void request(int numMessages) {
        }

        @Override
        public void cancel(String message, Throwable cause) {
        }

        @Override
        public void halfClose() {
        }

        @Override
        public void sendMessage(ReqT message) {
        }
    }

    // ---- life cycle ----

    /** The channel to the leader as last known tries to connect again at once (a client's call failed for want of one). */
    @Override
    public void resetConnectBackoff() {
        ManagedChannel channel = current();
        if (channel != null) {
            channel.resetConnectBackoff();
        }
    }

    @Override
    public String authority() {
        ManagedChannel channel = current();
        return channel != null ? channel.authority() : target.toString();
    }

    private List<ManagedChannel> all() {
        synchronized (lock) {
            List<ManagedChannel> channels = new ArrayList<>(retired);
            if (current != null) {
                channels.add(current);
            }
            return channels;
        }
    }

    @Override
    public ManagedChannel shutdown() {
        shutdown = true;
        retries.shutdown();
        all().forEach(ManagedChannel::shutdown);
        discovery.close();
        return this;
    }

    @Override
    public ManagedChannel shutdownNow() {
        shutdown = true;
        retries.shutdownNow();
        all().forEach(ManagedChannel::shutdownNow);
        discovery.close();
        return this;
    }

    @Override
    public boolean isShutdown() {
        return shutdown;
    }

    @Override
    public boolean isTerminated() {
        return shutdown && all().stream().allMatch(ManagedChannel::isTerminated);
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        long end = System.nanoTime() + unit.toNanos(timeout);
        for (ManagedChannel channel : all()) {
            if (!channel.awaitTermination(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                return false;
            }
        }
        return retries.awaitTermination(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
    }
}
