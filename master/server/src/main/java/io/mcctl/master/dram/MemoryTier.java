package io.mcctl.master.dram;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.MemoryDescriptor;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaStatus;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.master.service.Result;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The DRAM tier as the master keeps it: each node's segment allocator and the MEMORY replicas in it, in memory only
 * (as Mooncake's master: a node registers again after a master restart with its whole segment free). A MEMORY replica
 * is either a promotion's copy of a DISTRIBUTED_DISK object ({@code source} names the mapping it copied) or an object a
 * node put into its own segment (PutStart MEMORY, no source).
 *
 * <p>The DISTRIBUTED_DISK mapping is the truth: a promoted copy is listed only while the key's mapping is still the one
 * it copied (same pages, same CRC32C), and a put one only while the key has no DISTRIBUTED_DISK object; any other is
 * stale and dropped when it is next looked at. So a remove or an overwrite never has to reach into this tier.
 *
 * <p>Each segment stays under a high watermark of its bytes: an allocation that would pass it first evicts the
 * segment's least recently read COMPLETE replicas down to the low watermark (their DISTRIBUTED_DISK objects stay), and
 * one that finds no run of free pages evicts until it does.
 *
 * <p>Locks: a segment's monitor guards its allocator, the set of replicas it holds and its used bytes; {@link #replicas}
 * is a concurrent map whose entries are added and removed only under the monitor of the segment the replica is in. No
 * code holds two segments' monitors. Callers may hold a {@link Node}'s monitor around a segment's (a put checks its node
 * is alive), never the other way round.
 *
 * <p>The master's node registry makes the segments ({@link #segment}), puts into them and drops a dead node's; the
 * promoter ({@link Promoter}) stages, completes and drops its copies; the RPCs that read or remove a key ask for a
 * readable copy and drop one.
 */
public final class MemoryTier {

    /** Segments are allocated in pages of this many bytes. */
    static final long PAGE_BYTES = 4096;
    /** The smallest segment a node may register. */
    static final long MIN_SEGMENT_BYTES = 1L << 20;
    /** The largest segment a node may register (the allocator's page limit). */
    static final long MAX_SEGMENT_BYTES = BitmapPageAllocator.MAX_PAGES * PAGE_BYTES;
    static final double HIGH_WATERMARK = 0.95;
    static final double LOW_WATERMARK = 0.85;

    /** One node's DRAM segment. */
    public static final class Segment {
        final Node owner;
        final long bytes;
        /** Guarded by this segment's monitor. */
        private final BitmapPageAllocator pages;
        private final Set<MemoryReplica> held = new HashSet<>();
        private long usedBytes;

        private Segment(Node owner, long bytes) {
            this.owner = owner;
            this.bytes = bytes;
            this.pages = new BitmapPageAllocator(bytes / PAGE_BYTES);
        }

        /** Its size: whole pages. */
        public long bytes() {
            return bytes;
        }

        public synchronized long usedBytes() {
            return usedBytes;
        }

        /** COMPLETE replicas in it. */
        public synchronized long completeObjects() {
            long n = 0;
            for (MemoryReplica r : held) {
                if (r.status == ReplicaStatus.COMPLETE) {
                    n++;
                }
            }
            return n;
        }
    }

    /** A MEMORY replica: a run of pages of one segment. */
    static final class MemoryReplica {
        final Segment segment;
        final String scopedKey;
        final long firstPage;
        final long pages;
        final long size;
        /** The DISTRIBUTED_DISK mapping it copies; null for an object put into the segment directly. */
        final Placement source;
        /** Written under the segment's monitor; read without it. */
        volatile ReplicaStatus status = ReplicaStatus.PROCESSING;
        volatile int crc32c;
        volatile long lastReadNanos;

        MemoryReplica(Segment segment, String scopedKey, long firstPage, long pages, long size, Placement source, long now) {
            this.segment = segment;
            this.scopedKey = scopedKey;
            this.firstPage = firstPage;
            this.pages = pages;
            this.size = size;
            this.source = source;
            this.lastReadNanos = now;
        }

        Replica toWire() {
            Node owner = segment.owner;
            return Replica.newBuilder().setType(ReplicaType.MEMORY).setStatus(status).setMemory(MemoryDescriptor.newBuilder()
                    .setSegmentName(owner.id()).setBufferAddress(firstPage * PAGE_BYTES).setSize(size).setClientId(owner.id())
                    .setTransportEndpoint(owner.endpoint()).setCrc32C(crc32c)).build();
        }

        /** Whether this is a current copy of the key's object: the mapping it copied, or none when it was put directly. */
        boolean currentFor(Placement mapping) {
            if (mapping == null) {
                return source == null;
            }
            return source != null && source.sameRange(mapping) && source.crc32c() == mapping.crc32c();
        }
    }

    private final LongSupplier nanoClock;
    /** One MEMORY replica per scoped key at most. */
    private final ConcurrentHashMap<String, MemoryReplica> replicas = new ConcurrentHashMap<>();
    private final LongAdder evicted = new LongAdder();

    public MemoryTier(LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
    }

    /** Why a segment of {@code bytes} is refused, or null. */
    public static String checkSegment(long bytes) {
        if (bytes != 0 && (bytes < MIN_SEGMENT_BYTES || bytes > MAX_SEGMENT_BYTES)) {
            return "memory_bytes " + bytes + " is outside " + MIN_SEGMENT_BYTES + ".." + MAX_SEGMENT_BYTES
                    + " (0: no DRAM segment): a segment holds at least 1 MiB";
        }
        return null;
    }

    /** {@code owner}'s segment of {@code bytes} (as {@link #checkSegment} allows) rounded down to whole pages, all of it free. */
    public static Segment segment(Node owner, long bytes) {
        return new Segment(owner, bytes / PAGE_BYTES * PAGE_BYTES);
    }

    /** Whether any replica at all is held: the lookup path asks nothing more when none is. */
    public boolean isEmpty() {
        return replicas.isEmpty();
    }

    MemoryReplica get(String scopedKey) {
        return replicas.get(scopedKey);
    }

    /**
     * The COMPLETE MEMORY replica of {@code scopedKey} worth reading while the key's DISTRIBUTED_DISK mapping is
     * {@code mapping} (null: it has none), or null; a stale one is dropped. Counts as a read for the segment's LRU.
     */
    public Replica readable(String scopedKey, Placement mapping) {
        MemoryReplica replica = replicas.get(scopedKey);
        if (replica == null || replica.status != ReplicaStatus.COMPLETE || !replica.segment.owner.alive()) {
            return null;
        }
        if (!replica.currentFor(mapping)) {
            drop(replica);
            return null;
        }
        replica.lastReadNanos = nanoClock.getAsLong();
        return replica.toWire();
    }

    /** Drops the replica of {@code scopedKey} unless it is a current copy of {@code mapping} (or is still being written). */
    void dropStale(String scopedKey, Placement mapping) {
        MemoryReplica replica = replicas.get(scopedKey);
        if (replica != null && replica.status == ReplicaStatus.COMPLETE && !replica.currentFor(mapping)) {
            drop(replica);
        }
    }

    /**
     * A PROCESSING replica of {@code size} bytes for {@code scopedKey} in {@code segment}, making room by evicting the
     * segment's least recently read COMPLETE replicas. OBJECT_ALREADY_EXISTS when the key has a MEMORY replica already;
     * NO_AVAILABLE_HANDLE when the segment cannot hold it.
     */
    Result<MemoryReplica> stage(Segment segment, String scopedKey, long size, Placement source) {
        long pages = (size + PAGE_BYTES - 1) / PAGE_BYTES;
        if (size < 1 || pages > segment.pages.pageCount()) {
            return Result.error(ErrorCode.NO_AVAILABLE_HANDLE, "an object of " + size + " bytes does not fit the DRAM segment of "
                    + segment.bytes + " bytes of client " + segment.owner.id());
        }
        synchronized (segment) {
            MemoryReplica existing = replicas.get(scopedKey);
            if (existing != null) {
                return Result.error(ErrorCode.OBJECT_ALREADY_EXISTS, "key " + describe(scopedKey) + " already has a " + existing.status
                        + " MEMORY replica on client " + existing.segment.owner.id());
            }
            long need = pages * PAGE_BYTES;
            if (segment.usedBytes + need > HIGH_WATERMARK * segment.bytes) {
                while (segment.usedBytes + need > LOW_WATERMARK * segment.bytes && evictOldest(segment)) {
                    // down to the low watermark, so the next allocations do not each evict
                }
            }
            long first = segment.pages.allocate(pages);
            while (first < 0 && evictOldest(segment)) {
                first = segment.pages.allocate(pages);
            }
            if (first < 0) {
                return Result.error(ErrorCode.NO_AVAILABLE_HANDLE, "the DRAM segment of client " + segment.owner.id() + " has no run of "
                        + pages + " free pages for key " + describe(scopedKey) + ", even with every complete replica evicted");
            }
            MemoryReplica replica = new MemoryReplica(segment, scopedKey, first, pages, size, source, nanoClock.getAsLong());
            replicas.put(scopedKey, replica);
            segment.held.add(replica);
            segment.usedBytes += need;
            return Result.ok(replica);
        }
    }

    /** PutStart MEMORY: a PROCESSING replica the node writes into its own segment, answered as where to write (see {@link #stage}). */
    public Result<Replica> put(Segment segment, String scopedKey, long size) {
        Result<MemoryReplica> staged = stage(segment, scopedKey, size, null);
        return staged.isOk() ? Result.ok(staged.value().toWire()) : Result.error(staged.error(), staged.message());
    }

    /** PutEnd MEMORY: the put {@code clientId} has in progress for {@code scopedKey} becomes COMPLETE; false when it has none. */
    public boolean endPut(String clientId, String scopedKey, int crc32c) {
        MemoryReplica replica = putInProgress(clientId, scopedKey);
        return replica != null && complete(replica, crc32c);
    }

    /** PutRevoke MEMORY: the put {@code clientId} has in progress for {@code scopedKey} goes; false when it has none. */
    public boolean revokePut(String clientId, String scopedKey) {
        MemoryReplica replica = putInProgress(clientId, scopedKey);
        return replica != null && drop(replica);
    }

    /** The PROCESSING replica a live {@code clientId} put into its own segment (not a promotion's staged copy), or null. */
    private MemoryReplica putInProgress(String clientId, String scopedKey) {
        MemoryReplica replica = replicas.get(scopedKey);
        if (replica == null || !replica.segment.owner.id().equals(clientId) || !replica.segment.owner.alive()
                || replica.status != ReplicaStatus.PROCESSING || replica.source != null) {
            return null;
        }
        return replica;
    }

    /** The staged replica holds its bytes now: readers see it. False when it was dropped meanwhile. */
    boolean complete(MemoryReplica replica, int crc32c) {
        synchronized (replica.segment) {
            if (replicas.get(replica.scopedKey) != replica) {
                return false;
            }
            replica.crc32c = crc32c;
            replica.status = ReplicaStatus.COMPLETE;
            return true;
        }
    }

    /** Removes the replica and frees its pages; false when it was gone already. */
    boolean drop(MemoryReplica replica) {
        Segment segment = replica.segment;
        synchronized (segment) {
            if (!replicas.remove(replica.scopedKey, replica)) {
                return false;
            }
            segment.held.remove(replica);
            segment.pages.free(replica.firstPage, replica.pages);
            segment.usedBytes -= replica.pages * PAGE_BYTES;
            return true;
        }
    }

    /** Drops the key's COMPLETE replica (a remove of the key); false when it had none. */
    public boolean dropComplete(String scopedKey) {
        MemoryReplica replica = replicas.get(scopedKey);
        return replica != null && replica.status == ReplicaStatus.COMPLETE && drop(replica);
    }

    /** Drops every replica of the segment (its node died): CleanupStaleHandles' share of the DRAM tier. */
    public long dropSegment(Segment segment) {
        List<MemoryReplica> all;
        synchronized (segment) {
            all = new ArrayList<>(segment.held);
        }
        long dropped = 0;
        for (MemoryReplica replica : all) {
            if (drop(replica)) {
                dropped++;
            }
        }
        return dropped;
    }

    /** Caller holds the segment's monitor. */
    private boolean evictOldest(Segment segment) {
        MemoryReplica oldest = null;
        for (MemoryReplica r : segment.held) {
            if (r.status == ReplicaStatus.COMPLETE && (oldest == null || r.lastReadNanos - oldest.lastReadNanos < 0)) {
                oldest = r;
            }
        }
        if (oldest == null) {
            return false;
        }
        drop(oldest); // re-entrant: this thread holds the segment's monitor already
        evicted.increment();
        return true;
    }

    /** COMPLETE replicas on live nodes, and their bytes. */
    long[] completeTotals() {
        long objects = 0;
        long bytes = 0;
        for (MemoryReplica r : replicas.values()) {
            if (r.status == ReplicaStatus.COMPLETE && r.segment.owner.alive()) {
                objects++;
                bytes += r.size;
            }
        }
        return new long[] {objects, bytes};
    }

    long evictedTotal() {
        return evicted.sum();
    }

    private static String describe(String scopedKey) {
        return Quoted.of(KeyRules.keyOf(scopedKey)) + " (tenant " + KeyRules.tenantOf(scopedKey) + ")";
    }
}
