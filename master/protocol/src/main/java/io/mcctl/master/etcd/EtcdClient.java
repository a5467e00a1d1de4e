package io.mcctl.master.etcd;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.mcctl.master.etcd.proto.Compare;
import io.mcctl.master.etcd.proto.DeleteRangeRequest;
import io.mcctl.master.etcd.proto.KVGrpc;
import io.mcctl.master.etcd.proto.KeyValue;
import io.mcctl.master.etcd.proto.LeaseGrantRequest;
import io.mcctl.master.etcd.proto.LeaseGrantResponse;
import io.mcctl.master.etcd.proto.LeaseGrpc;
import io.mcctl.master.etcd.proto.LeaseKeepAliveRequest;
import io.mcctl.master.etcd.proto.LeaseKeepAliveResponse;
import io.mcctl.master.etcd.proto.LeaseRevokeRequest;
import io.mcctl.master.etcd.proto.LeaseTimeToLiveRequest;
import io.mcctl.master.etcd.proto.PutRequest;
import io.mcctl.master.etcd.proto.RangeRequest;
import io.mcctl.master.etcd.proto.RangeResponse;
import io.mcctl.master.etcd.proto.RequestOp;
import io.mcctl.master.etcd.proto.TxnRequest;
import io.mcctl.master.etcd.proto.TxnResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * The few etcd v3 calls mcctl needs (a lease, a key created only if absent, reads by key and prefix), over stubs
 * generated from {@code etcd_subset.proto} with the project's grpc-java. One channel per endpoint: a call goes to
 * the endpoint that answered last and moves on to the next when that one is down or does not answer within the
 * call timeout, so one etcd member lost costs at most one timeout.
 *
 * <p>Thread-safe: the current endpoint is a volatile index; channels are immutable after construction.
 */
public final class EtcdClient implements AutoCloseable {

    /** etcd did not answer on any endpoint: the message names them and the last error. */
    public static final class EtcdUnavailableException extends IOException {
        private final String condition;

        EtcdUnavailableException(String message, String condition, Throwable cause) {
            super(message, cause);
            this.condition = condition;
        }

        /**
         * The message without what differs from one failure to the next of the same kind (the time a deadline took, the
         * transport's detail): which endpoints did not answer which call with which status. Repeats log as one condition.
         */
        public String condition() {
            return condition;
        }
    }

    /** The outcome of a campaign: won (this lease holds the key) or not, with the holder's value and create revision. */
    public record Campaign(boolean won, String holder, long createRevision) {
    }

    /** A key's value with its create revision. */
    public record Entry(String key, String value, long createRevision, long lease) {
    }

    private final EtcdTarget target;
    private final ManagedChannel[] channels;
    private final Duration callTimeout;
    private volatile int current;

    public EtcdClient(EtcdTarget target, Duration callTimeout) {
        this.target = target;
        this.callTimeout = callTimeout;
        this.channels = new ManagedChannel[target.endpoints().size()];
        for (int i = 0; i < channels.length; i++) {
            channels[i] = NettyChannelBuilder.forTarget(target.endpoints().get(i)).usePlaintext().build();
        }
    }

    public EtcdTarget target() {
        return target;
    }

    private <T> T call(String what, Function<ManagedChannel, T> call) throws EtcdUnavailableException {
        StatusRuntimeException last = null;
        int start = current;
        for (int tried = 0; tried < channels.length; tried++) {
            int index = (start + tried) % channels.length;
            try {
                T result = call.apply(channels[index]);
                current = index;
                return result;
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // gRPC's threads are shut down (the process is exiting): no endpoint can be asked any more
                String condition = "etcd at " + String.join(",", target.endpoints()) + " was not asked " + what + ": the client's transport has stopped";
                throw new EtcdUnavailableException(condition + " (" + e.getMessage() + ")", condition, e);
            } catch (StatusRuntimeException e) {
                last = e;
                Status.Code code = e.getStatus().getCode();
                if (code != Status.Code.UNAVAILABLE && code != Status.Code.DEADLINE_EXCEEDED && code != Status.Code.UNKNOWN) {
                    break; // etcd answered: another member would answer the same
                }
            }
        }
        String condition = "etcd at " + String.join(",", target.endpoints()) + " did not answer " + what + ": "
                + (last == null ? "no endpoint" : last.getStatus().getCode());
        throw new EtcdUnavailableException(last == null ? condition : condition + " " + last.getStatus().getDescription(), condition, last);
    }

    private KVGrpc.KVBlockingStub kv(ManagedChannel channel) {
        return KVGrpc.newBlockingStub(channel).withDeadlineAfter(callTimeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static ByteString bytes(String text) {
        return ByteString.copyFrom(text, StandardCharsets.UTF_8);
    }

    /** A lease of {@code ttlSeconds}; returns etcd's grant (its id and the TTL it chose). */
    public LeaseGrantResponse grantLease(long ttlSeconds) throws EtcdUnavailableException {
        LeaseGrantResponse grant = call("a lease grant", channel -> LeaseGrpc.newBlockingStub(channel)
                .withDeadlineAfter(callTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .leaseGrant(LeaseGrantRequest.newBuilder().setTTL(ttlSeconds).build()));
        if (!grant.getError().isEmpty()) {
            String refused = "etcd refused a lease of " + ttlSeconds + " s: " + grant.getError();
            throw new EtcdUnavailableException(refused, refused, null);
        }
        return grant;
    }

    /**
     * One keep-alive of lease {@code id}: the TTL etcd renewed it to, in seconds, or 0 or less when the lease is gone.
     */
    public long keepAlive(long id) throws EtcdUnavailableException {
        return call("a lease keep-alive", channel -> {
            CompletableFuture<LeaseKeepAliveResponse> answer = new CompletableFuture<>();
            StreamObserver<LeaseKeepAliveRequest> requests = LeaseGrpc.newStub(channel)
                    .withDeadlineAfter(callTimeout.toMillis(), TimeUnit.MILLISECONDS)
                    .leaseKeepAlive(new StreamObserver<>() {
                        @Override
                        public void onNext(LeaseKeepAliveResponse value) {
                            answer.complete(value);
                        }

                        @Override
                        public void onError(Throwable t) {
                            answer.completeExceptionally(t);
                        }

                        @Override
                        public void onCompleted() {
                            answer.completeExceptionally(Status.UNAVAILABLE.withDescription("keep-alive stream ended").asRuntimeException());
                        }
                    });
            requests.onNext(LeaseKeepAliveRequest.newBuilder().setID(id).build());
            try {
                return answer.get(callTimeout.toMillis(), TimeUnit.MILLISECONDS).getTTL();
            } catch (ExecutionException e) {
                throw e.getCause() instanceof StatusRuntimeException s ? s : Status.UNKNOWN.withCause(e.getCause()).asRuntimeException();
            } catch (TimeoutException e) {
                throw Status.DEADLINE_EXCEEDED.withDescription("no keep-alive answer").asRuntimeException();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw Status.CANCELLED.withDescription("interrupted").asRuntimeException();
            } finally {
                requests.onCompleted();
            }
        });
    }

    /** Seconds lease {@code id} has left in etcd: -1 once it has expired or was revoked. */
    public long timeToLive(long id) throws EtcdUnavailableException {
        return call("a lease time-to-live", channel -> LeaseGrpc.newBlockingStub(channel).withDeadlineAfter(callTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .leaseTimeToLive(LeaseTimeToLiveRequest.newBuilder().setID(id).build())).getTTL();
    }

    public void revokeLease(long id) throws EtcdUnavailableException {
        call("a lease revoke", channel -> LeaseGrpc.newBlockingStub(channel).withDeadlineAfter(callTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .leaseRevoke(LeaseRevokeRequest.newBuilder().setID(id).build()));
    }

    /**
     * Puts {@code value} at {@code key} under {@code lease} only if the key does not exist (its create revision is 0),
     * in one transaction; otherwise reads who holds it. The create revision of the key is the leader's epoch: etcd's
     * revisions only grow, so a later leader always has a higher one.
     */
    public Campaign campaign(String key, String value, long lease) throws EtcdUnavailableException {
        TxnResponse txn = call("a campaign for " + key, channel -> kv(channel).txn(TxnRequest.newBuilder()
                .addCompare(Compare.newBuilder().setKey(bytes(key)).setTarget(Compare.CompareTarget.CREATE)
                        .setResult(Compare.CompareResult.EQUAL).setCreateRevision(0))
                .addSuccess(RequestOp.newBuilder().setRequestPut(PutRequest.newBuilder().setKey(bytes(key)).setValue(bytes(value)).setLease(lease)))
                .addFailure(RequestOp.newBuilder().setRequestRange(RangeRequest.newBuilder().setKey(bytes(key))))
                .build()));
        if (txn.getSucceeded()) {
            return new Campaign(true, value, txn.getHeader().getRevision());
        }
        RangeResponse range = txn.getResponses(0).getResponseRange();
        if (range.getKvsCount() == 0) {
            return new Campaign(false, "", 0); // gone between the compare and the read: try again
        }
        KeyValue kv = range.getKvs(0);
        return new Campaign(kv.getLease() == lease, kv.getValue().toStringUtf8(), kv.getCreateRevision());
    }

    public Optional<Entry> get(String key) throws EtcdUnavailableException {
        RangeResponse range = call("a read of " + key, channel -> kv(channel).range(RangeRequest.newBuilder().setKey(bytes(key)).build()));
        return range.getKvsCount() == 0 ? Optional.empty() : Optional.of(entry(range.getKvs(0)));
    }

    /** Every key under {@code prefix}. */
    public List<Entry> list(String prefix) throws EtcdUnavailableException {
        byte[] end = prefix.getBytes(StandardCharsets.UTF_8);
        end[end.length - 1]++;
        RangeResponse range = call("a listing of " + prefix, channel -> kv(channel).range(RangeRequest.newBuilder().setKey(bytes(prefix))
                .setRangeEnd(ByteString.copyFrom(end)).build()));
        return range.getKvsList().stream().map(EtcdClient::entry).toList();
    }

    public void put(String key, String value, long lease) throws EtcdUnavailableException {
        call("a write of " + key, channel -> kv(channel).put(PutRequest.newBuilder().setKey(bytes(key)).setValue(bytes(value)).setLease(lease).build()));
    }

    /** Deletes {@code key} only while {@code lease} holds it (a leader stepping down never deletes its successor's key). */
    public void deleteIfHeldBy(String key, long lease) throws EtcdUnavailableException {
        call("a delete of " + key, channel -> kv(channel).txn(TxnRequest.newBuilder()
                .addCompare(Compare.newBuilder().setKey(bytes(key)).setTarget(Compare.CompareTarget.LEASE)
                        .setResult(Compare.CompareResult.EQUAL).setLease(lease))
                .addSuccess(RequestOp.newBuilder().setRequestDeleteRange(DeleteRangeRequest.newBuilder().setKey(bytes(key))))
                .build()));
    }

    private static Entry entry(KeyValue kv) {
        return new Entry(kv.getKey().toStringUtf8(), kv.getValue().toStringUtf8(), kv.getCreateRevision(), kv.getLease());
    }

    @Override
    public void close() {
        for (ManagedChannel channel : channels) {
            channel.shutdownNow();
        }
    }
}
