package io.mcctl.master.service;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The mapping table and the in-flight allocations: every key that has a committed mapping, an allocation in
 * flight, or both, split into {@value #SHARDS} shards by the scoped key's hash.
 *
 * <p>Locks: each {@link Shard#lock} guards its shard's table of entries, every {@link Entry} in it and its list of in-flight
 * allocations. A caller holds at most one shard lock, except a page check confirming an overlap, which takes
 * several in index order.
 */
final class KeyTable {

    static final int SHARD_BITS = 11;
    static final int SHARDS = 1 << SHARD_BITS;

    /**
     * One key's state, kept small because there is one per live mapping: the committed placement inline
     * ({@code bucket < 0} when there is none), its read lease, and the in-flight allocation, if any, as a separate
     * object. It is also the link of its shard's hash chain ({@link Entries}). Guarded by its shard's lock.
     */
    static final class Entry {
        /** Tenant, NUL, key: the string the entry was filed under. */
        final String key;
        /** {@link Entries#spread} of the key's hash, compared before the key itself. */
        final int hash;
        /** The next entry in its hash chain. */
        Entry next;
        int bucket = -1;
        long offset;
        long size;
        int crc32c;
        /** Until when the pages of the committed mapping are leased to readers (service clock); live only, never logged. */
        long leaseUntilNanos;
        /** When the committed mapping was last committed or handed out by a lookup (service clock): eviction's age. */
        long lastUsedNanos;
        /** Where the committed mapping sits in its shard's eviction samples, or -1. */
        int sampleIndex = -1;
        /** Soft pin: evicted only when nothing unpinned is left. Logged with the commit. */
        boolean pinned;
        InFlight inFlight;

        Entry(String scopedKey) {
            this.key = scopedKey;
            this.hash = Entries.spread(scopedKey.hashCode());
        }

        boolean hasCommitted() {
            return bucket >= 0;
        }

        Placement committed() {
            return bucket < 0 ? null : new Placement(bucket, offset, size, crc32c);
        }

        boolean committedSameRange(Placement p) {
            return bucket >= 0 && p != null && p.bucket() == bucket && p.offset() == offset && p.size() == size;
        }

        boolean committedEquals(Placement p) {
            return committedSameRange(p) && p.crc32c() == crc32c;
        }

        void commit(Placement placement) {
            bucket = placement.bucket();
            offset = placement.offset();
            size = placement.size();
            crc32c = placement.crc32c();
        }

        void clearCommitted() {
            bucket = -1;
            leaseUntilNanos = 0;
            pinned = false;
        }

        boolean isEmpty() {
            return bucket < 0 && inFlight == null;
        }
    }

    /**
     * An allocation waiting for its notify. Linked into its shard's list in deadline order (deadlines are taken
     * under the shard lock from a monotonic clock plus a constant, so appending keeps the order; a renewal moves it
     * to the end), and unlinked the moment it ends: nothing lingers until its deadline.
     */
    static final class InFlight {
        final String scopedKey;
        final Entry owner;
        final Placement placement;
        long deadlineNanos;
        final boolean overwrite;
        /** Whether the commit of this allocation is soft-pinned. */
        final boolean pin;
        InFlight prev;
        InFlight next;

        InFlight(String scopedKey, Entry owner, Placement placement, long deadlineNanos, boolean overwrite, boolean pin) {
            this.scopedKey = scopedKey;
            this.owner = owner;
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

        /** Replaced only while restoring, before serving. */
        Entries entries = new Entries(0);
        /** Oldest deadline first. */
        InFlight head;
        InFlight tail;
        /**
         * The shard's committed mappings in no order, so that eviction can sample them at random: keys and entries side
         * by side, {@link Entry#sampleIndex} pointing back. {@link #samples} is also read without the lock, as a hint
         * that a shard is empty.
         */
        String[] sampleKeys = new String[4];
        Entry[] sampleEntries = new Entry[4];
        volatile int samples;

        void addSample(String scopedKey, Entry entry) {
            if (entry.sampleIndex >= 0) {
                return;
            }
            int n = samples;
            if (n == sampleKeys.length) {
                int grown = n + (n >> 1) + 1; // by half: a million mappings keep less slack than with doubling
                sampleKeys = java.util.Arrays.copyOf(sampleKeys, grown);
                sampleEntries = java.util.Arrays.copyOf(sampleEntries, grown);
            }
            sampleKeys[n] = scopedKey;
            sampleEntries[n] = entry;
            entry.sampleIndex = n;
            samples = n + 1;
        }

        void removeSample(Entry entry) {
            int i = entry.sampleIndex;
            if (i < 0) {
                return;
            }
            int last = samples - 1;
            if (i != last) {
                sampleKeys[i] = sampleKeys[last];
                sampleEntries[i] = sampleEntries[last];
                sampleEntries[i].sampleIndex = i;
            }
            sampleKeys[last] = null;
            sampleEntries[last] = null;
            entry.sampleIndex = -1;
            samples = last;
        }

        /** Rebuilds the samples from the table (after a restore filled it in bulk). */
        void resetSamples() {
            for (int i = 0; i < samples; i++) {
                sampleEntries[i].sampleIndex = -1;
            }
            int n = Math.max(4, entries.size());
            sampleKeys = new String[n];
            sampleEntries = new Entry[n];
            samples = 0;
            for (Entry e : entries) {
                if (e.hasCommitted()) {
                    e.sampleIndex = -1;
                    addSample(e.key, e);
                }
            }
        }

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

        /** Drops a key whose entry holds nothing any more. */
        void removeIfEmpty(String scopedKey, Entry entry) {
            if (entry.isEmpty()) {
                entries.remove(scopedKey);
            }
        }
    }

    /** What a claim on pages is, for a check. */
    enum ClaimKind { MAPPING, IN_FLIGHT }

    /** Receives one claim on pages. */
    @FunctionalInterface
    interface ClaimVisitor {
        void claim(ClaimKind kind, String scopedKey, int bucket, long offset, long size);
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

    Shard shardOf(String scopedKey) {
        return shards[shardIndex(scopedKey)];
    }

    static int shardIndex(String scopedKey) {
        // The top bits of a multiplicative hash: the shard's HashMap indexes by the low bits, so taking those here
        // would crowd every shard's keys into a 64th of its table.
        return (scopedKey.hashCode() * 0x9E3779B9) >>> (32 - SHARD_BITS);
    }

    /** Every claim of a shard: committed mappings and in-flight allocations. Caller holds the shard's lock. */
    static void forEachClaim(Shard shard, ClaimVisitor visitor) {
        for (Entry entry : shard.entries) {
            if (entry.hasCommitted()) {
                visitor.claim(ClaimKind.MAPPING, entry.key, entry.bucket, entry.offset, entry.size);
            }
            if (entry.inFlight != null) {
                Placement p = entry.inFlight.placement;
                visitor.claim(ClaimKind.IN_FLIGHT, entry.key, p.bucket(), p.offset(), p.size());
            }
        }
    }

    /** Whether the key still holds exactly this claim. Caller holds the shard's lock. */
    static boolean holds(Shard shard, String scopedKey, ClaimKind kind, int bucket, long offset, long size) {
        Entry entry = shard.entries.get(scopedKey);
        if (entry == null) {
            return false;
        }
        Placement claim = new Placement(bucket, offset, size, 0);
        return kind == ClaimKind.MAPPING ? entry.committedSameRange(claim)
                : entry.inFlight != null && entry.inFlight.placement.sameRange(claim);
    }

    /**
     * A shard's entries by scoped key: a chained hash table whose chains are linked through the entries themselves.
     * A lookup goes from the table's slot straight to the entry, where a map of entries would go through a node object
     * first: one dependent cache miss fewer per lookup in a table of millions, and no node (32 bytes) per mapping.
     * Guarded by its shard's lock; not thread-safe.
     */
    static final class Entries implements Iterable<Entry> {
        private static final int MIN_CAPACITY = 16;

        private Entry[] table;
        private int size;

        /** Sized for {@code expected} entries without a resize. */
        Entries(int expected) {
            int capacity = MIN_CAPACITY;
            while (capacity * 3L / 4 < expected) {
                capacity <<= 1;
            }
            table = new Entry[capacity];
        }

        /** The low bits index the table: fold the high bits of a string's hash into them, as HashMap does. */
        static int spread(int hash) {
            return hash ^ (hash >>> 16);
        }

        Entry get(String scopedKey) {
            int hash = spread(scopedKey.hashCode());
            for (Entry e = table[hash & (table.length - 1)]; e != null; e = e.next) {
                if (e.hash == hash && (e.key == scopedKey || e.key.equals(scopedKey))) {
                    return e;
                }
            }
            return null;
        }

        /** The entry of {@code scopedKey}, added empty when there is none. */
        Entry getOrAdd(String scopedKey) {
            Entry found = get(scopedKey);
            if (found == null) {
                found = new Entry(scopedKey);
                link(found);
            }
            return found;
        }

        /** Files {@code entry} under its key, in place of any entry the key had (restore only). */
        void put(Entry entry) {
            remove(entry.key);
            link(entry);
        }

        void remove(String scopedKey) {
            int hash = spread(scopedKey.hashCode());
            int slot = hash & (table.length - 1);
            Entry previous = null;
            for (Entry e = table[slot]; e != null; previous = e, e = e.next) {
                if (e.hash == hash && (e.key == scopedKey || e.key.equals(scopedKey))) {
                    if (previous == null) {
                        table[slot] = e.next;
                    } else {
                        previous.next = e.next;
                    }
                    e.next = null;
                    size--;
                    return;
                }
            }
        }

        int size() {
            return size;
        }

        boolean isEmpty() {
            return size == 0;
        }

        private void link(Entry entry) {
            if (size >= table.length * 3L / 4) {
                grow();
            }
            int slot = entry.hash & (table.length - 1);
            entry.next = table[slot];
            table[slot] = entry;
            size++;
        }

        private void grow() {
            Entry[] old = table;
            Entry[] grown = new Entry[old.length << 1];
            for (Entry head : old) {
                for (Entry e = head; e != null; ) {
                    Entry next = e.next;
                    int slot = e.hash & (grown.length - 1);
                    e.next = grown[slot];
                    grown[slot] = e;
                    e = next;
                }
            }
            table = grown;
        }

        /** In no order. The table must not change while an iteration runs. */
        @Override
        public Iterator<Entry> iterator() {
            return new Iterator<>() {
                private int slot = -1;
                private Entry next = advance(null);

                private Entry advance(Entry from) {
                    Entry e = from == null ? null : from.next;
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
                public Entry next() {
                    if (next == null) {
                        throw new NoSuchElementException();
                    }
                    Entry current = next;
                    next = advance(current);
                    return current;
                }
            };
        }
    }
}
