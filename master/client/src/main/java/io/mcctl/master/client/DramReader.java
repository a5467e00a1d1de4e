package io.mcctl.master.client;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.mcctl.master.proto.v1.MemoryDescriptor;
import io.mcctl.master.proto.v1.NodeServiceGrpc;
import io.mcctl.master.proto.v1.ObjectChunk;
import io.mcctl.master.proto.v1.ReadLocalObjectRequest;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.storage.io.BucketFileIo;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Reads MEMORY replicas (a promotion's copy of an object in a node's DRAM segment) from the node that holds them,
 * through its NodeService (ReadLocalObject, replica_type MEMORY), and checks the size and CRC32C the master named. A
 * reader that gets nothing here reads the DISTRIBUTED_DISK object by pread as before, so this is only ever a faster
 * way to the same bytes. A node that failed is passed over for {@link #PASS_OVER} so a dead one costs one deadline,
 * not one per key.
 *
 * <p>Thread-safe: channels and pass-over times are kept in concurrent maps, one per endpoint.
 */
public final class DramReader implements AutoCloseable {

    /** How long a node that failed a read is not asked again. */
    static final Duration PASS_OVER = Duration.ofSeconds(5);

    private final Duration timeout;
    private final ConcurrentHashMap<String, ManagedChannel> channels = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Long> passedOverUntil = new ConcurrentHashMap<>();
    private final ClientMetrics metrics;

    /** @param timeout the deadline of one read from a node: short, since the pread is always there to fall back on */
    public DramReader(Duration timeout, ClientMetrics metrics) {
        this.timeout = timeout;
        this.metrics = metrics;
    }

    /**
     * The object's bytes from the first of {@code memory} whose node answers with the right size and checksum, written
     * into {@code destination} from its position (advanced only on success) or into a new buffer when it is null; null
     * when none could be read (the caller reads the DISTRIBUTED_DISK object).
     */
    public ByteBuffer read(String tenant, String key, List<Replica> memory, ByteBuffer destination) {
        for (Replica replica : memory) {
            if (replica.getType() != ReplicaType.MEMORY) {
                continue;
            }
            MemoryDescriptor where = replica.getMemory();
            String endpoint = where.getTransportEndpoint();
            Long until = passedOverUntil.get(endpoint);
            if (until != null && System.nanoTime() - until < 0) {
                continue;
            }
            ByteBuffer data = readFrom(endpoint, tenant, key, where, destination);
            if (data != null) {
                metrics.memoryReads.inc();
                return data;
            }
            passedOverUntil.put(endpoint, System.nanoTime() + PASS_OVER.toNanos());
        }
        metrics.memoryFallbacks.inc();
        return null;
    }

    private ByteBuffer readFrom(String endpoint, String tenant, String key, MemoryDescriptor where, ByteBuffer destination) {
        long size = where.getSize();
        if (size > Integer.MAX_VALUE - 8 || destination != null && destination.remaining() < size) {
            return null;
        }
        ByteBuffer window = destination == null ? ByteBuffer.allocate((int) size) : destination.duplicate();
        int from = window.position();
        window.limit(from + (int) size);
        try {
            Iterator<ObjectChunk> chunks = NodeServiceGrpc.newBlockingStub(channel(endpoint))
                    .withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS)
                    .readLocalObject(ReadLocalObjectRequest.newBuilder().setTenantId(tenant).setKey(key)
                            .setReplicaType(ReplicaType.MEMORY).build());
            while (chunks.hasNext()) {
                ObjectChunk chunk = chunks.next();
                if (chunk.getData().size() > window.remaining()) {
                    return null; // more than the master's size: not the object it named
                }
                chunk.getData().copyTo(window);
            }
        } catch (StatusRuntimeException e) {
            return null;
        }
        if (window.hasRemaining()) {
            return null;
        }
        ByteBuffer data = window.duplicate().position(from).limit(from + (int) size).slice();
        if (BucketFileIo.crc32c(data.duplicate()) != where.getCrc32C()) {
            metrics.checksumFailures.inc();
            return null;
        }
        if (destination != null) {
            destination.position(from + (int) size);
        }
        return data;
    }

    private ManagedChannel channel(String endpoint) {
        return channels.computeIfAbsent(endpoint, e -> NettyChannelBuilder.forTarget(e).usePlaintext()
                .maxInboundMessageSize(8 << 20).build());
    }

    @Override
    public void close() {
        channels.values().forEach(ManagedChannel::shutdownNow);
        channels.clear();
    }
}
