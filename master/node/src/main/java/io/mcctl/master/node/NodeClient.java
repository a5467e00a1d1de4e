package io.mcctl.master.node;

import com.google.protobuf.ByteString;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.GetObjectRequest;
import io.mcctl.master.proto.v1.NodeServiceGrpc;
import io.mcctl.master.proto.v1.ObjectChunk;
import io.mcctl.master.proto.v1.OffloadMode;
import io.mcctl.master.proto.v1.ReadLocalObjectRequest;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.master.proto.v1.WriteObjectChunk;
import io.mcctl.master.proto.v1.WriteObjectHeader;
import io.mcctl.master.proto.v1.WriteObjectResponse;
import io.mcctl.master.protocol.Quoted;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A client of one node's endpoint (its NodeService): offload and read through the node, and the owner's side of a
 * LOCAL_DISK read. Failures are {@link NodeException}s with one line naming the node. Thread-safe.
 */
public final class NodeClient implements AutoCloseable {

    /** Bytes per message of a streamed object: small enough to keep both sides' memory flat per call. */
    public static final int CHUNK_BYTES = 256 << 10;

    private final String endpoint;
    private final ManagedChannel channel;
    private final NodeServiceGrpc.NodeServiceStub asyncStub;
    private final NodeServiceGrpc.NodeServiceBlockingStub stub;
    private final Duration timeout;

    public NodeClient(String endpoint, Duration timeout) {
        this.endpoint = MasterClient.checkTarget(endpoint);
        this.timeout = timeout;
        this.channel = NettyChannelBuilder.forTarget(endpoint).usePlaintext().build();
        this.asyncStub = NodeServiceGrpc.newStub(channel);
        this.stub = NodeServiceGrpc.newBlockingStub(channel);
    }

    public String endpoint() {
        return endpoint;
    }

    /** An object read, and what it was read from. */
    public record Read(ByteBuffer data, int crc32c, ReplicaType type, String source, List<String> skipped) {
    }

    /** The owner's side of the LOCAL_DISK hop: the bytes of an object this node owns. */
    public Read readLocal(String tenant, String key) {
        return readLocal(tenant, key, ReplicaType.LOCAL_DISK);
    }

    /** The holder's side of a read of its LOCAL_DISK file or, with {@code type} MEMORY, of its DRAM segment. */
    public Read readLocal(String tenant, String key, ReplicaType type) {
        return collect(() -> stub.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS).readLocalObject(ReadLocalObjectRequest
                .newBuilder().setTenantId(tenant).setKey(key).setReplicaType(type).build()), "read of " + Quoted.of(key));
    }

    /** Reads through this node: it takes the best replica it can reach. */
    public Read get(String tenant, String key) {
        return collect(() -> stub.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                .getObject(GetObjectRequest.newBuilder().setTenantId(tenant).setKey(key).build()), "read of " + Quoted.of(key));
    }

    private Read collect(java.util.function.Supplier<Iterator<ObjectChunk>> call, String what) {
        try {
            Iterator<ObjectChunk> chunks = call.get();
            if (!chunks.hasNext()) {
                throw new NodeException(Status.Code.INTERNAL, "node " + endpoint + " answered the " + what + " with no bytes");
            }
            ObjectChunk first = chunks.next();
            long size = first.getObjectSize();
            if (size > Integer.MAX_VALUE - 8) {
                throw new NodeException(Status.Code.INVALID_ARGUMENT, "object of " + size + " bytes is too large to read into memory");
            }
            ByteBuffer data = ByteBuffer.allocate((int) size);
            ObjectChunk chunk = first;
            while (true) {
                if (chunk.getData().size() > data.remaining()) {
                    throw new NodeException(Status.Code.INTERNAL, "node " + endpoint + " sent more than the " + size + " bytes it announced");
                }
                chunk.getData().copyTo(data);
                if (!chunks.hasNext()) {
                    break;
                }
                chunk = chunks.next();
            }
            if (data.hasRemaining()) {
                throw new NodeException(Status.Code.INTERNAL, "node " + endpoint + " sent " + data.position() + " of " + size + " bytes");
            }
            return new Read(data.flip(), first.getCrc32C(), first.getReplicaType(), first.getSource(), first.getSkippedList());
        } catch (StatusRuntimeException e) {
            throw NodeException.of(endpoint, e);
        }
    }

    /** Offloads {@code data} under (tenant, key) through this node, in {@code mode}; returns what the master recorded. */
    public WriteObjectResponse write(String tenant, String key, ByteBuffer data, OffloadMode mode) {
        CompletableFuture<WriteObjectResponse> answer = new CompletableFuture<>();
        StreamObserver<WriteObjectChunk> out = asyncStub.withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                .writeObject(new StreamObserver<>() {
                    @Override
                    public void onNext(WriteObjectResponse value) {
                        answer.complete(value);
                    }

                    @Override
                    public void onError(Throwable t) {
                        answer.completeExceptionally(t);
                    }

                    @Override
                    public void onCompleted() {
                        answer.completeExceptionally(new NodeException(Status.Code.INTERNAL, "node " + endpoint + " answered nothing"));
                    }
                });
        out.onNext(WriteObjectChunk.newBuilder().setHeader(WriteObjectHeader.newBuilder().setTenantId(tenant).setKey(key)
                .setSize(data.remaining()).setMode(mode)).build());
        ByteBuffer view = data.duplicate();
        while (view.hasRemaining()) {
            int n = Math.min(CHUNK_BYTES, view.remaining());
            ByteBuffer slice = view.slice().limit(n);
            view.position(view.position() + n);
            out.onNext(WriteObjectChunk.newBuilder().setData(ByteString.copyFrom(slice)).build());
        }
        out.onCompleted();
        try {
            return answer.get(timeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof StatusRuntimeException status) {
                throw NodeException.of(endpoint, status);
            }
            throw e.getCause() instanceof NodeException node ? node : new NodeException(Status.Code.INTERNAL, String.valueOf(e.getCause()));
        } catch (TimeoutException e) {
            throw new NodeException(Status.Code.DEADLINE_EXCEEDED, "node " + endpoint + " did not answer within " + timeout.toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NodeException(Status.Code.CANCELLED, "interrupted while offloading through node " + endpoint);
        }
    }

    /** Keys of {@link Read#skipped} and similar lists, for messages. */
    static String describe(List<String> skipped) {
        return skipped.isEmpty() ? "" : " (" + String.join("; ", new ArrayList<>(skipped)) + ")";
    }

    @Override
    public void close() {
        channel.shutdownNow();
        try {
            channel.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
