package io.mcctl.master.service;

import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * One shard's committed mappings and in-flight allocations, copied under its lock into flat arrays (a short hold:
 * no record object per mapping) and immutable after, so it can be handed to another thread: what a snapshot writes,
 * copied while the master serves.
 */
public final class ShardCopy {

    /** Receives committed mappings. */
    @FunctionalInterface
    public interface MappingSink {
        /** One committed mapping; {@code scopedKey} is tenant, NUL, key. Primitive arguments: a million calls, no objects. */
        void mapping(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pinned, long[] blockHashes) throws IOException;
    }

    private final MappingTable.EncodedKeys keys;
    private final int[] buckets;
    private final long[] offsets;
    private final long[] sizes;
    private final int[] crcs;
    private final boolean[] pinned;
    /** Each mapping's engine block hashes (null entries: none); null when no mapping of the shard has any. */
    private final long[][] hashes;
    private final List<Change.Allocated> inFlight;

    private ShardCopy(MappingTable.EncodedKeys keys, int[] buckets, long[] offsets, long[] sizes, int[] crcs, boolean[] pinned,
                      long[][] hashes, List<Change.Allocated> inFlight) {
        this.keys = keys;
        this.buckets = buckets;
        this.offsets = offsets;
        this.sizes = sizes;
        this.crcs = crcs;
        this.pinned = pinned;
        this.hashes = hashes;
        this.inFlight = inFlight;
    }

    /** Mappings copied. */
    public int entries() {
        return buckets.length;
    }

    /** Hands the copy's mappings {@code [from, to)} to {@code sink}. */
    public void emitMappings(int from, int to, MappingSink sink) throws IOException {
        for (int i = from; i < to; i++) {
            if (buckets[i] >= 0) {
                sink.mapping(keys.key(i), buckets[i], offsets[i], sizes[i], crcs[i], pinned[i], hashes == null ? null : hashes[i]);
            }
        }
    }

    /** The shard's in-flight allocations, each with its current deadline. */
    public List<Change.Allocated> inFlight() {
        return inFlight;
    }

    /** Copies shard {@code index} of {@code state} under its lock. */
    static ShardCopy of(PageState state, int index) {
        KeyTable.Shard shard = state.keys.shard(index);
        List<Change.Allocated> inFlight = new ArrayList<>();
        shard.lock.lock();
        try {
            MappingTable table = shard.mappings;
            int n = table.size();
            MappingTable.EncodedKeys scopedKeys = table.copyKeys(); // decoded after the lock is let go
            int[] buckets = new int[n];
            long[] offsets = new long[n];
            long[] sizes = new long[n];
            int[] crcs = new int[n];
            boolean[] pinned = new boolean[n];
            long[][] hashes = null;
            for (int m = 0; m < n; m++) {
                buckets[m] = table.bucket(m);
                offsets[m] = table.offset(m);
                sizes[m] = table.size(m);
                crcs[m] = table.crc32c(m);
                pinned[m] = table.pinned(m);
                long[] blockHashes = table.blockHashes(m);
                if (blockHashes != null) {
                    if (hashes == null) {
                        hashes = new long[n][];
                    }
                    hashes[m] = blockHashes;
                }
            }
            for (KeyTable.InFlight pending : shard.inFlight) {
                inFlight.add(new Change.Allocated(KeyRules.tenantOf(pending.scopedKey), KeyRules.keyOf(pending.scopedKey), pending.placement,
                        state.wallMillis(pending.deadlineNanos), pending.overwrite, pending.pin));
            }
            return new ShardCopy(scopedKeys, buckets, offsets, sizes, crcs, pinned, hashes, inFlight);
        } finally {
            shard.lock.unlock();
        }
    }

    /** Hands every copied mapping to {@code visitor}, then the in-flight allocations. */
    void visit(StateVisitor visitor) {
        for (int i = 0; i < entries(); i++) {
            String scoped = keys.key(i);
            if (buckets[i] >= 0) {
                visitor.mapping(KeyRules.tenantOf(scoped), KeyRules.keyOf(scoped), new Placement(buckets[i], offsets[i], sizes[i], crcs[i]), pinned[i]);
            }
        }
        inFlight.forEach(visitor::inFlight);
    }
}
