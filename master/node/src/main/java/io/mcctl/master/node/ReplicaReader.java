package io.mcctl.master.node;

import io.grpc.Status;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.GetReplicaListResponse;
import io.mcctl.master.proto.v1.LocalDiskDescriptor;
import io.mcctl.master.proto.v1.MemoryDescriptor;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaStatus;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.storage.io.BucketFileIo;
import io.mcctl.storage.perkey.PerKeyStore;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A node's read of any object: GetReplicaList (best first: MEMORY > NOF > DISTRIBUTED_DISK > LOCAL_DISK > DISK), then
 * the first replica this node can read: MEMORY from its own DRAM segment, or through the holder's endpoint (the
 * holder copies the range out of its segment and streams it); DISTRIBUTED_DISK by a direct pread of the shared bucket file; a LOCAL_DISK
 * replica it owns from its own file; another node's LOCAL_DISK replica through that owner's endpoint (the RPC hop:
 * this node asks the owner, the owner reads its file and streams the bytes). A replica that cannot be read (a node gone,
 * a root not mounted here, a checksum that does not match) is skipped with its reason, and the next one is tried.
 *
 * <p>Thread-safe: the owners' clients are kept in a concurrent map, one per endpoint.
 */
public final class ReplicaReader implements AutoCloseable {

    private final MasterClient master;
    private final TierNode tier;
    private final String selfClientId;
    private final PerKeyStore ownDisk;
    private final DramSegment ownSegment;
    private final Duration timeout;
    private final ConcurrentHashMap<String, NodeClient> owners = new ConcurrentHashMap<>();

    /** A reader with no DRAM segment of its own. */
    public ReplicaReader(MasterClient master, TierNode tier, String selfClientId, PerKeyStore ownDisk, Duration timeout) {
        this(master, tier, selfClientId, ownDisk, null, timeout);
    }

    /**
     * @param tier         this node's view of the shared root, or null when it has none (DISTRIBUTED_DISK replicas are skipped)
     * @param selfClientId this node's client id, or null for a reader that owns nothing
     * @param ownDisk      this node's per-key store, or null
     * @param ownSegment   this node's DRAM segment, or null
     */
    public ReplicaReader(MasterClient master, TierNode tier, String selfClientId, PerKeyStore ownDisk, DramSegment ownSegment,
                         Duration timeout) {
        this.master = master;
        this.tier = tier;
        this.selfClientId = selfClientId;
        this.ownDisk = ownDisk;
        this.ownSegment = ownSegment;
        this.timeout = timeout;
    }

    /**
     * The object's bytes from the best replica this node can read.
     *
     * @throws io.mcctl.master.client.MasterException when the master knows no replica (OBJECT_NOT_FOUND) or fails
     * @throws NodeException                          (UNAVAILABLE) when every replica was tried and none could be read
     */
    public NodeClient.Read read(String tenant, String key) {
        GetReplicaListResponse list = master.replicaList(tenant, key);
        List<String> skipped = new ArrayList<>();
        for (Replica replica : list.getReplicasList()) {
            if (replica.getStatus() != ReplicaStatus.COMPLETE) {
                continue;
            }
            try {
                switch (replica.getType()) {
                    case MEMORY -> {
                        MemoryDescriptor held = replica.getMemory();
                        NodeClient.Read read = held.getClientId().equals(selfClientId) && ownSegment != null
                                ? readOwnMemory(tenant, key) : owner(held.getTransportEndpoint()).readLocal(tenant, key, ReplicaType.MEMORY);
                        int crc = BucketFileIo.crc32c(read.data().duplicate());
                        if (read.data().remaining() != held.getSize() || crc != held.getCrc32C()) {
                            skipped.add("MEMORY on client " + held.getClientId() + ": its bytes do not match the master's size and CRC32C");
                            continue;
                        }
                        return new NodeClient.Read(read.data(), crc, ReplicaType.MEMORY, held.getClientId(), skipped);
                    }
                    case DISTRIBUTED_DISK -> {
                        if (tier == null) {
                            skipped.add("DISTRIBUTED_DISK: the shared root is not mounted on this node");
                            continue;
                        }
                        DistributedDiskDescriptor place = replica.getDistributedDisk();
                        ByteBuffer data = tier.ioFor(place.getOffset(), place.getObjectSize()).read(Path.of(place.getFilePath()), place.getOffset(), (int) place.getObjectSize(),
                                place.getCrc32C());
                        return new NodeClient.Read(data, place.getCrc32C(), ReplicaType.DISTRIBUTED_DISK, place.getFilePath(), skipped);
                    }
                    case LOCAL_DISK -> {
                        LocalDiskDescriptor owned = replica.getLocalDisk();
                        NodeClient.Read read = owned.getClientId().equals(selfClientId) && ownDisk != null
                                ? readOwn(tenant, key) : owner(owned.getTransportEndpoint()).readLocal(tenant, key);
                        int crc = BucketFileIo.crc32c(read.data().duplicate());
                        if (read.data().remaining() != owned.getObjectSize() || crc != owned.getCrc32C()) {
                            skipped.add("LOCAL_DISK on client " + owned.getClientId() + ": its bytes do not match the master's size and CRC32C");
                            continue;
                        }
                        return new NodeClient.Read(read.data(), crc, ReplicaType.LOCAL_DISK, owned.getClientId(), skipped);
                    }
                    default -> skipped.add(replica.getType() + ": this node cannot read that kind of replica yet");
                }
            } catch (NodeException e) {
                skipped.add(replica.getType() + " on client " + holder(replica) + ": " + e.getMessage());
            } catch (IOException | RuntimeException e) {
                if (e instanceof io.mcctl.master.client.MasterException) {
                    throw (io.mcctl.master.client.MasterException) e;
                }
                skipped.add(replica.getType() + ": " + e.getMessage());
            }
        }
        throw new NodeException(Status.Code.UNAVAILABLE, "no replica of key " + Quoted.of(key) + " (tenant " + tenant + ") could be read here"
                + NodeClient.describe(skipped));
    }

    private static String holder(Replica replica) {
        return replica.getType() == ReplicaType.MEMORY ? replica.getMemory().getClientId() : replica.getLocalDisk().getClientId();
    }

    private NodeClient.Read readOwnMemory(String tenant, String key) {
        DramSegment.Read read = ownSegment.read(tenant, key);
        if (read.miss() != null) {
            throw new NodeException(Status.Code.NOT_FOUND, "this node's segment no longer holds it: " + read.miss());
        }
        return new NodeClient.Read(read.data(), read.entry().crc32c(), ReplicaType.MEMORY, selfClientId, List.of());
    }

    private NodeClient owner(String endpoint) {
        return owners.computeIfAbsent(endpoint, e -> new NodeClient(e, timeout));
    }

    private NodeClient.Read readOwn(String tenant, String key) throws IOException {
        PerKeyStore.Entry entry = ownDisk.find(tenant, key);
        if (entry == null) {
            throw new NodeException(Status.Code.NOT_FOUND, "this node's local disk no longer holds it");
        }
        ByteBuffer data = ByteBuffer.allocate((int) entry.size());
        try (FileChannel in = FileChannel.open(entry.file(), StandardOpenOption.READ)) {
            PerKeyStore.readChunk(in, entry, 0, data);
        }
        return new NodeClient.Read(data.flip(), entry.crc32c(), ReplicaType.LOCAL_DISK, selfClientId, List.of());
    }

    @Override
    public void close() {
        owners.values().forEach(NodeClient::close);
        owners.clear();
    }
}
