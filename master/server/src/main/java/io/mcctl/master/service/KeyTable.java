package io.mcctl.master.service;

import io.mcctl.master.protocol.Placement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.ToIntFunction;

/**
 * The mapping table and the in-flight allocations: every key that has a committed mapping, an allocation in
 * flight, or both, split into {@value #SHARDS} shards by the scoped key's hash. A shard keeps its committed mappings
 * in a {@link MappingTable} (numbers and bytes, no object per mapping) and its in-flight allocations as objects in a
 * small table of their own: those live for the moments between an allocate and its notify.
 *
 * <p>Locks: each {@link Shard#lock} guards its shard's mapping table, its table of in-flight allocations and their
 * deadline list. A caller holds at most one shard lock, except a page check confirming an overlap, which takes
 * several in index order.
 */
final class KeyTable {

    /**
     * 256 shards: far more than the threads that serve at once, and few enough that every shard's lock, in-flight table
     * and table headers stay in the caches beside the tables' lines a batch misses anyway (with 2,048 each key of a batch
     * missed on them too: an offload cycle in the page service alone, {@code mcctl bench pages}, took 1.22x the time).
     */
    static final int SHARD_BITS = 8;
    static final int SHARDS = 1 << SHARD_BITS;

    /**
     * An allocation waiting for its notify. Filed in its shard's {@link InFlights} under its key, and linked into its
     * shard's list in deadline order (deadlines are taken under the shard lock from a monotonic clock plus a constant,
     * so appending keeps the order; a renewal moves it to the end); unlinked the moment it ends: nothing lingers until
     * its deadline.
     */
    static final class InFlight {
        final String scopedKey;
        /** {@link InFlights#spread} of the key's hash, compared before the key itself. */
        final int hash;
        /** The next allocation in its hash chain. */
        InFlight chainNext;
        final Placement placement;
        /** Written under the shard's lock; read without it by the reaper, as a hint only. */
        long deadlineNanos;
        final boolean overwrite;
        /** Whether the commit of this allocation is soft-pinned. */
        final boolean pin;
        InFlight prev;
        InFlight next;

        InFlight(String scopedKey, Placement placement, long deadlineNanos, boolean overwrite, boolean pin) {
            this.scopedKey = scopedKey;
            this.hash = InFlights.spread(scopedKey.hashCode());
            this.placement = placement;
            this.deadlineNanos = deadlineNanos;
            this.overwrite = overwrite;
            this.pin = pin;
        }
    }

    static final class Shard {
        final ReentrantLock lock = new ReentrantLock();
        final int index;

        Shard(int index) {
            this.index = index;
        }

        /** Committed mappings. Replaced only while restoring, before serving. */
        MappingTable mappings = new MappingTable();
        /** In-flight allocations by scoped key. */
        final InFlights inFlight = new InFlights(0);
        /**
         * Oldest deadline first. Volatile so that the reaper can pass over a shard with nothing due without its lock
         * ({@link PageService#reap}): a plain read could be stale; what it finds due it checks again under the lock.
         */
        volatile InFlight head;
        InFlight tail;

        void append(InFlight inFlight) {
            inFlight.prev = tail;
            if (tail == null) {
                head = inFlight;
            } else {
                tail.next = inFlight;
            }
            tail = inFlight;
        }

        void unlink(InFlight inFlight) {
            if (inFlight.prev == null) {
                head = inFlight.next;
            } else {
                inFlight.prev.next = inFlight.next;
            }
            if (inFlight.next == null) {
                tail = inFlight.prev;
            } else {
                inFlight.next.prev = inFlight.prev;
            }
            inFlight.prev = null;
            inFlight.next = null;
        }
    }

    /** What a claim on pages is, for a check. */
    enum ClaimKind { MAPPING, IN_FLIGHT }

    /** Receives one claim on pages. */
    @FunctionalInterface
    interface ClaimVisitor {
        void claim(ClaimKind kind, ClaimKey key, int bucket, long offset, long size);
    }

    /**
     * The scoped key of the claim being visited, made into a string only when asked: a check or a restore visits
     * every claim but names only the few it reports. Good only during that visit (one is reused for a whole shard).
     */
    static final class ClaimKey {
        private MappingTable table;
        private int mapping;
        private String inFlightKey;

        String get() {
            return inFlightKey != null ? inFlightKey : table.key(mapping);
        }
    }

    private final Shard[] shards = new Shard[SHARDS];

    KeyTable() {
        for (int s = 0; s < SHARDS; s++) {
            shards[s] = new Shard(s);
        }
    }

    Shard shard(int index) {
        return shards[index];
    }

    /** What {@link #touch} read, stored so that the compiler keeps the loads. */
    @SuppressWarnings("unused")
    private long touched;

    /**
     * Reads ahead what lookups of {@code scopedKeys} (nulls skipped) will read: their index slots, mapping records and
     * key bytes, in three passes whose loads do not depend on each other, so that the cache misses of different keys
     * overlap. A lookup of a random key in a table of millions is mostly waiting on memory, one miss after another;
     * after this pass a batch's lookups find their lines in the cache. Without the shard locks (see MappingTable's
     * read-ahead methods): nothing read here decides anything.
     *
     * <p>The keys' hashes come first, in a pass of their own: hashing a key is a loop over its characters, and with it in
     * the pass that loads the index slots, the processor's window of instructions held only a miss or two at a time.
     */
    void touch(String[] scopedKeys) {
        int n = scopedKeys.length;
        MappingTable[] tables = new MappingTable[n];
        int[] hashes = new int[n];
        for (int i = 0; i < n; i++) {
            String key = scopedKeys[i];
            if (key != null) {
                hashes[i] = key.hashCode(); // kept by the string too, for the lookup itself
                tables[i] = shards[shardIndex(hashes[i])].mappings;
            }
        }
        long[] slots = new long[n];
        for (int i = 0; i < n; i++) {
            if (tables[i] != null) {
                slots[i] = tables[i].slotHint(hashes[i]);
            }
        }
        long[] keyFields = new long[n];
        long sum = 0;
        for (int i = 0; i < n; i++) {
            if (slots[i] != 0) {
                keyFields[i] = tables[i].recordHint(slots[i]);
                sum += tables[i].recordTailHint(slots[i]);
            }
        }
        for (int i = 0; i < n; i++) {
            if (keyFields[i] != 0) {
                sum += tables[i].keyBytesHint(keyFields[i]);
            }
        }
        touched = sum;
    }

    /** Work on the items of one shard, under its lock. */
    @FunctionalInterface
    interface ShardWork<T> {
        /** @return false to stop: the shards after this one are not visited */
        boolean apply(Shard shard, List<T> items);
    }

    /**
     * Runs {@code work} on the items of each shard ({@code hash}: the hash of an item's scoped key), shard after shard in
     * index order, each shard's lock taken once for all its items; false when a work stopped it.
     */
    <T> boolean eachShardOf(List<T> items, ToIntFunction<T> hash, ShardWork<T> work) {
        List<T> sorted = new ArrayList<>(items);
        sorted.sort(Comparator.comparingInt(item -> shardIndex(hash.applyAsInt(item))));
        for (int i = 0; i < sorted.size(); ) {
            int index = shardIndex(hash.applyAsInt(sorted.get(i)));
            int end = i + 1;
            while (end < sorted.size() && shardIndex(hash.applyAsInt(sorted.get(end))) == index) {
                end++;
            }
            Shard shard = shards[index];
            shard.lock.lock();
            try {
                if (!work.apply(shard, sorted.subList(i, end))) {
                    return false;
                }
            } finally {
                shard.lock.unlock();
            }
            i = end;
        }
        return true;
    }

    Shard shardOf(String scopedKey) {
        return shards[shardIndex(scopedKey)];
    }

    static int shardIndex(String scopedKey) {
        return shardIndex(scopedKey.hashCode());
    }

    static int shardIndex(int hash) {
        // The top bits of a multiplicative hash: the in-flight table indexes by the hash's low bits (the mapping table
        // by a mix of all of them), so taking those here would crowd every shard's keys into a 64th of its table.
        return (hash * 0x9E3779B9) >>> (32 - SHARD_BITS);
    }

    /** Every claim of a shard: committed mappings and in-flight allocations. Caller holds the shard's lock. */
    static void forEachClaim(Shard shard, ClaimVisitor visitor) {
        MappingTable mappings = shard.mappings;
        ClaimKey key = new ClaimKey();
        key.table = mappings;
        for (int m = 0; m < mappings.size(); m++) {
            key.mapping = m;
            visitor.claim(ClaimKind.MAPPING, key, mappings.bucket(m), mappings.offset(m), mappings.size(m));
        }
        for (InFlight pending : shard.inFlight) {
            Placement p = pending.placement;
            key.inFlightKey = pending.scopedKey;
            visitor.claim(ClaimKind.IN_FLIGHT, key, p.bucket(), p.offset(), p.size());
        }
    }

    /** Whether the key still holds exactly this claim. Caller holds the shard's lock. */
    static boolean holds(Shard shard, String scopedKey, ClaimKind kind, int bucket, long offset, long size) {
        Placement claim = new Placement(bucket, offset, size, 0);
        if (kind == ClaimKind.MAPPING) {
            int m = shard.mappings.find(scopedKey);
            return m >= 0 && shard.mappings.sameRange(m, claim);
        }
        InFlight pending = shard.inFlight.get(scopedKey);
        return pending != null && pending.placement.sameRange(claim);
    }

    /**
     * A shard's in-flight allocations by scoped key: a chained hash table whose chains are linked through the
     * allocations themselves, so filing one makes no node object. Guarded by its shard's lock; not thread-safe.
     */
    static final class InFlights implements Iterable<InFlight> {
        private static final int MIN_CAPACITY = 16;

        private InFlight[] table;
        private int size;

        /** Sized for {@code expected} allocations without a resize. */
        InFlights(int expected) {
            int capacity = MIN_CAPACITY;
            while (capacity * 3L / 4 < expected) {
                capacity <<= 1;
            }
            table = new InFlight[capacity];
        }

        /** The low bits index the table: fold the high bits of a string's hash into them, as HashMap does. */
        static int spread(int hash) {
            return hash ^ (hash >>> 16);
        }

        InFlight get(String scopedKey) {
            int hash = spread(scopedKey.hashCode());
            for (InFlight e = table[hash & (table.length - 1)]; e != null; e = e.chainNext) {
                if (e.hash == hash && (e.scopedKey == scopedKey || e.scopedKey.equals(scopedKey))) {
                    return e;
                }
            }
            return null;
        }

        /** Files {@code pending} under its key, which must have no allocation filed. */
        void add(InFlight pending) {
            link(pending);
        }

        /** Takes {@code pending} itself out: found by identity in its chain, with no key compared. A no-op when not filed. */
        void remove(InFlight pending) {
            int slot = pending.hash & (table.length - 1);
            InFlight previous = null;
            for (InFlight e = table[slot]; e != null; previous = e, e = e.chainNext) {
                if (e == pending) {
                    if (previous == null) {
                        table[slot] = e.chainNext;
                    } else {
                        previous.chainNext = e.chainNext;
                    }
                    e.chainNext = null;
                    size--;
                    return;
                }
            }
        }

        int size() {
            return size;
        }

        private void link(InFlight pending) {
            if (size >= table.length * 3L / 4) {
                grow();
            }
            int slot = pending.hash & (table.length - 1);
            pending.chainNext = table[slot];
            table[slot] = pending;
            size++;
        }

        private void grow() {
            InFlight[] old = table;
            InFlight[] grown = new InFlight[old.length << 1];
            for (InFlight head : old) {
                for (InFlight e = head; e != null; ) {
                    InFlight next = e.chainNext;
                    int slot = e.hash & (grown.length - 1);
                    e.chainNext = grown[slot];
                    grown[slot] = e;
                    e = next;
                }
            }
            table = grown;
        }

        /** In no order. The table must not change while an iteration runs. */
        @Override
        public Iterator<InFlight> iterator() {
            return new Iterator<>() {
                private int slot = -1;
                private InFlight next = advance(null);

                private InFlight advance(InFlight from) {
                    InFlight e = from == null ? null : from.chainNext;
                    while (e == null && ++slot < table.length) {
                        e = table[slot];
                    }
                    return e;
                }

                @Override
                public boolean hasNext() {
                    return next != null;
                }

                @Override
                public InFlight next() {
                    if (next == null) {
                        throw new NoSuchElementException();
                    }
                    InFlight current = next;
                    next = advance(current);
                    return current;
                }
            };
        }
    }
}
