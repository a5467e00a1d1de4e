package io.mcctl.master.service;

import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One shard's committed mappings, held in arrays of numbers and bytes rather than an object per mapping.
 *
 * <p>Why: a table of millions of objects makes every commit a new object that survives, which the collector must
 * copy and whose references, stored into table arrays it already holds, it must track; measured, that was half
 * and more of the page service's CPU per offloaded key. Here a commit writes numbers into arrays that hold no
 * references, so the collector neither copies nor scans anything a mapping adds.
 *
 * <p>Layout: mappings are numbered densely {@code 0..size()-1}, each a record of {@value #RECORD} longs in one
 * array, so that a lookup finds all of a mapping's fields in one or two adjacent cache lines (one array per field
 * would cost a miss per field); removing one moves the last into its place, so numbers are only good until the
 * next removal. The index is open addressing with linear probing over longs holding the key's hash (high half)
 * and the mapping's number plus one (low half, 0 for an empty slot), at most 70% full: a probe compares hashes
 * without touching the mapping, and a removal shifts the rest of its run back (no tombstones). Keys (tenant, NUL, key) live in one byte
 * arena, each UTF-16 unit encoded alone with UTF-8's byte patterns (1 to 3 bytes): ASCII keys take a byte a
 * character, and any string, an unpaired surrogate included, comes back exactly as it went in. A mapping committed
 * with engine block hashes (KV events) keeps them in the arena right after its key, 8 bytes each, their count in the
 * record's flags: a mapping without them costs nothing more. The arena is compacted when removed keys make up more
 * than half of it.
 *
 * <p>Growth copies at once (the index doubles and every mapping is filed anew; records and arena grow by half), so the
 * add that grows a table holds its shard for milliseconds at hundreds of thousands of mappings
 * ({@code MappingTableGrowthBenchmark}). Growing in chunks and draining the old index step by step took those pauses
 * under a millisecond but cost every lookup 8-12% through the chunks' indirection, and a full tier's tables stop
 * growing, so growth stays a copy.
 *
 * <p>Not thread-safe: guarded by its shard's lock. {@link #isEmptyHint} and the read-ahead hints ({@link #slotHint} and
 * the three after it, whose answers decide nothing) alone may be read without it.
 */
final class MappingTable {

    private static final int MIN_CAPACITY = 8;
    private static final int MIN_INDEX = 16;
    /** Arena bytes below which removed keys are not worth a compaction. */
    private static final int MIN_GARBAGE_TO_COMPACT = 4096;

    /** Longs per mapping record, and where each field sits in it. */
    static final int RECORD = 7;
    private static final int KEY = 0;         // key's start in the arena (high half), its length in bytes (low half)
    private static final int HASH_FLAGS = 1;  // the key's String hash (high half), FLAG_PINNED and FLAG_ASCII (low half)
    private static final int OFFSET = 2;
    private static final int SIZE = 3;
    private static final int BUCKET_CRC = 4;  // bucket (high half), CRC32C (low half)
    /**
     * The end of the mapping's read lease on the service's clock (0 or more); or, below zero, minus the log sequence of
     * the change that made the mapping, until a lookup has found that change durable. One field serves both because
     * the two never meet: no lookup hands a mapping out before its change is durable, so a mapping not yet found durable
     * has no lease, and the first lease granted on it (or a lookup that finds it durable) clears the sequence.
     */
    private static final int LEASE_UNTIL = 5;
    private static final int LAST_USED = 6;
    private static final long FLAG_PINNED = 1;
    /** The key's bytes are its units, one each: an ASCII key (set when the key is filed, never changed). */
    private static final long FLAG_ASCII = 2;
    /** Bits of the flags holding how many engine block hashes follow the key in the arena (0 to {@link KvBlocks#MAX_BLOCKS}). */
    private static final int BLOCKS_SHIFT = 16;
    private static final long BLOCKS_MASK = 0xFFFFL << BLOCKS_SHIFT;
    private static final java.lang.invoke.VarHandle LONG_LE =
            java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);

    private long[] index;
    private int used;
    /** {@link #RECORD} longs per mapping. */
    private long[] records;

    private byte[] keyBytes;
    private int keyBytesUsed;
    private int keyBytesRemoved;

    /** True while the table holds no mapping; written only when that changes, so a commit pays no fence. */
    private volatile boolean emptyHint = true;

    /** Sized for {@code expected} mappings of about {@code keyBytesEach} bytes of key without growing. */
    MappingTable(int expected, int keyBytesEach) {
        int capacity = Math.max(MIN_CAPACITY, expected);
        records = new long[capacity * RECORD];
        keyBytes = new byte[(int) Math.min(Integer.MAX_VALUE - 16, Math.max(64L, (long) capacity * Math.max(1, keyBytesEach)))];
        index = new long[indexCapacityFor(capacity)];
    }

    MappingTable() {
        this(0, 0);
    }

    private static int indexCapacityFor(int mappings) {
        int capacity = MIN_INDEX;
        while (capacity * 7L / 10 < mappings) {
            capacity <<= 1;
        }
        return capacity;
    }

    /** The slot a hash starts probing at: mixed (murmur3's finaliser), since the shard was chosen by the hash's top bits. */
    private static int home(int hash, int mask) {
        int h = hash;
        h ^= h >>> 16;
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        h *= 0xc2b2ae35;
        h ^= h >>> 16;
        return h & mask;
    }

    int size() {
        return used;
    }

    /** Whether the table is empty, read without the lock: a hint that may be stale by the time it is used. */
    boolean isEmptyHint() {
        return emptyHint;
    }

    // ---- finding ----

    /** The number of the mapping of {@code scopedKey}, or -1. */
    int find(String scopedKey) {
        return probe(scopedKey.hashCode(), scopedKey, null, 0, 0);
    }

    /**
     * The number of the mapping whose key is {@code scopedKey}, or, when that is null, the encoded bytes
     * {@code encoded[start, start + length)} (a restore filing another table's mappings, with no string made); -1 if none.
     */
    private int probe(int hash, String scopedKey, byte[] encoded, int start, int length) {
        long[] idx = index;
        int mask = idx.length - 1;
        for (int slot = home(hash, mask); ; slot = (slot + 1) & mask) {
            long v = idx[slot];
            if (v == 0) {
                return -1;
            }
            if ((int) (v >>> 32) == hash) {
                int m = (int) v - 1;
                if (scopedKey != null ? keyEquals(m, scopedKey)
                        : keyLength(m) == length && Arrays.equals(keyBytes, keyStart(m), keyStart(m) + length, encoded, start, start + length)) {
                    return m;
                }
            }
        }
    }

    /**
     * The mapping whose key hashes to {@code hash} and whose pages (of {@code pageSize} bytes) in {@code bucket} include
     * {@code page}, or -1: how a {@link PageOwners} hint is confirmed.
     */
    int findHolding(int hash, int bucket, long page, long pageSize) {
        long[] idx = index;
        int mask = idx.length - 1;
        for (int slot = home(hash, mask); ; slot = (slot + 1) & mask) {
            long v = idx[slot];
            if (v == 0) {
                return -1;
            }
            if ((int) (v >>> 32) == hash) {
                int m = (int) v - 1;
                long first = offset(m) / pageSize;
                if (bucket(m) == bucket && page >= first && page < first + (size(m) + pageSize - 1) / pageSize) {
                    return m;
                }
            }
        }
    }

    // ---- reading ahead for a batch of lookups, without the lock ----
    //
    // KeyTable.touch reads, for every key of a batch, what its lookup will read, so that the keys' cache misses overlap
    // instead of queueing one behind another. These are read without the shard lock: a racing change may make what
    // they return stale or meaningless, so it is used for nothing but further loads, each within its array's bounds.

    /** The index slot holding {@code hash}, or the first empty slot at or after its home (within a few slots). */
    long slotHint(int hash) {
        long[] idx = index;
        int mask = idx.length - 1;
        int slot = home(hash, mask);
        long v = idx[slot];
        for (int step = 0; step < 3 && v != 0 && (int) (v >>> 32) != hash; step++) {
            slot = (slot + 1) & mask;
            v = idx[slot];
        }
        return v;
    }

    /** The key field of the record that slot value {@code slot} names; 0 when none. */
    long recordHint(long slot) {
        long[] r = records;
        long at = ((int) slot - 1L) * RECORD;
        return at < 0 || at + RECORD > r.length ? 0 : r[(int) at + KEY];
    }

    /** The last field of the record that slot value {@code slot} names (a record of 56 bytes mostly spans two lines); 0 when none. */
    long recordTailHint(long slot) {
        long[] r = records;
        long at = ((int) slot - 1L) * RECORD;
        return at < 0 || at + RECORD > r.length ? 0 : r[(int) at + RECORD - 1];
    }

    /**
     * The first and the last byte of the key that a key field from {@link #recordHint} places: a key of tens of bytes
     * mostly spans two cache lines of the arena, and the comparison reads both.
     */
    int keyBytesHint(long key) {
        byte[] b = keyBytes;
        int p = (int) (key >>> 32);
        int last = p + (int) key - 1;
        return p >= 0 && last >= p && last < b.length ? b[p] + b[last] : 0;
    }

    // ---- reading a mapping ----

    private long field(int m, int f) {
        return records[m * RECORD + f];
    }

    private void setField(int m, int f, long value) {
        records[m * RECORD + f] = value;
    }

    private int keyStart(int m) {
        return (int) (records[m * RECORD + KEY] >>> 32);
    }

    private int keyLength(int m) {
        return (int) records[m * RECORD + KEY];
    }

    private int hash(int m) {
        return (int) (records[m * RECORD + HASH_FLAGS] >>> 32);
    }

    /** The hash of mapping {@code m}'s scoped key ({@link String#hashCode}), as {@link PageOwners} notes it. */
    int hashOf(int m) {
        return hash(m);
    }

    int bucket(int m) {
        return (int) (field(m, BUCKET_CRC) >> 32);
    }

    long offset(int m) {
        return field(m, OFFSET);
    }

    long size(int m) {
        return field(m, SIZE);
    }

    int crc32c(int m) {
        return (int) field(m, BUCKET_CRC);
    }

    /** When mapping {@code m}'s read lease ends; 0 when it has none. */
    long leaseUntilNanos(int m) {
        return Math.max(0, field(m, LEASE_UNTIL));
    }

    /**
     * The log sequence of the change that made mapping {@code m}, while no lookup has found that change durable yet; 0
     * once one has, and for a mapping that recovery restored (the log held it).
     */
    long unconfirmedSequence(int m) {
        long v = field(m, LEASE_UNTIL);
        return v < 0 ? -v : 0;
    }

    /** Mapping {@code m} was just made by the change of log sequence {@code sequence} (0: one the log holds already); it has no lease. */
    void setUnconfirmedSequence(int m, long sequence) {
        setField(m, LEASE_UNTIL, -sequence);
    }

    long lastUsedNanos(int m) {
        return field(m, LAST_USED);
    }

    boolean pinned(int m) {
        return (field(m, HASH_FLAGS) & FLAG_PINNED) != 0;
    }

    /** How many engine block hashes mapping {@code m} keeps. */
    private int blockCount(int m) {
        return (int) ((field(m, HASH_FLAGS) & BLOCKS_MASK) >>> BLOCKS_SHIFT);
    }

    /** Arena bytes of mapping {@code m}: its key, then its block hashes. */
    private int footprint(int m) {
        return keyLength(m) + 8 * blockCount(m);
    }

    /** The engine block hashes mapping {@code m} was committed with, or null. */
    long[] blockHashes(int m) {
        int n = blockCount(m);
        if (n == 0) {
            return null;
        }
        long[] hashes = new long[n];
        int at = keyStart(m) + keyLength(m);
        for (int i = 0; i < n; i++) {
            hashes[i] = (long) LONG_LE.get(keyBytes, at + 8 * i);
        }
        return hashes;
    }

    /** Replaces mapping {@code m}'s engine block hashes ({@code null}: none): its key and the hashes are filed anew. */
    void setBlockHashes(int m, long[] hashes) {
        int n = hashes == null ? 0 : hashes.length;
        if (n == 0 && blockCount(m) == 0) {
            return;
        }
        int length = keyLength(m);
        int old = footprint(m);
        int start = reserveKeyBytes(length + 8 * n); // may compact the arena, moving m's key: read it after
        System.arraycopy(keyBytes, keyStart(m), keyBytes, start, length);
        putHashes(start + length, hashes);
        keyBytesRemoved += old;
        int r = m * RECORD;
        records[r + KEY] = (long) start << 32 | length;
        records[r + HASH_FLAGS] = records[r + HASH_FLAGS] & ~BLOCKS_MASK | (long) n << BLOCKS_SHIFT;
    }

    private void putHashes(int at, long[] hashes) {
        if (hashes != null) {
            for (int i = 0; i < hashes.length; i++) {
                LONG_LE.set(keyBytes, at + 8 * i, hashes[i]);
            }
        }
    }

    private boolean ascii(int m) {
        return (field(m, HASH_FLAGS) & FLAG_ASCII) != 0;
    }

    Placement placement(int m) {
        int r = m * RECORD;
        long bucketCrc = records[r + BUCKET_CRC];
        return new Placement((int) (bucketCrc >> 32), records[r + OFFSET], records[r + SIZE], (int) bucketCrc);
    }

    /** Whether mapping {@code m} is of the same pages as {@code p} (its checksum aside). */
    boolean sameRange(int m, Placement p) {
        return p != null && p.bucket() == bucket(m) && p.offset() == offset(m) && p.size() == size(m);
    }

    /** Whether mapping {@code m} is exactly {@code p}, checksum included. */
    boolean sameAs(int m, Placement p) {
        return sameRange(m, p) && p.crc32c() == crc32c(m);
    }

    /** The scoped key of mapping {@code m}, as a new string. */
    String key(int m) {
        return decode(keyBytes, keyStart(m), keyLength(m));
    }

    /** The encoded keys of every mapping, in mapping order: for a copy taken under the lock and decoded after it. */
    record EncodedKeys(byte[] bytes, int[] ends) {
        String key(int i) {
            int start = i == 0 ? 0 : ends[i - 1];
            return decode(bytes, start, ends[i] - start);
        }
    }

    EncodedKeys copyKeys() {
        int total = 0;
        for (int m = 0; m < used; m++) {
            total += keyLength(m);
        }
        byte[] bytes = new byte[total];
        int[] ends = new int[used];
        int at = 0;
        for (int m = 0; m < used; m++) {
            int length = keyLength(m);
            System.arraycopy(keyBytes, keyStart(m), bytes, at, length);
            at += length;
            ends[m] = at;
        }
        return new EncodedKeys(bytes, ends);
    }

    private static String decode(byte[] bytes, int start, int length) {
        int end = start + length;
        int i = start;
        while (i < end && bytes[i] >= 0) {
            i++;
        }
        if (i == end) {
            return new String(bytes, start, length, StandardCharsets.ISO_8859_1); // ASCII: one byte a character
        }
        char[] chars = new char[length];
        int n = 0;
        for (i = start; i < end; ) {
            int b = bytes[i] & 0xFF;
            if (b < 0x80) {
                chars[n++] = (char) b;
                i++;
            } else if (b < 0xE0) {
                chars[n++] = (char) ((b & 0x1F) << 6 | (bytes[i + 1] & 0x3F));
                i += 2;
            } else {
                chars[n++] = (char) ((b & 0x0F) << 12 | (bytes[i + 1] & 0x3F) << 6 | (bytes[i + 2] & 0x3F));
                i += 3;
            }
        }
        return new String(chars, 0, n);
    }

    /** Whether the scoped key of mapping {@code m} starts with {@code prefix}: each unit is encoded alone, so bytes compare as units do. */
    boolean keyStartsWith(int m, String prefix) {
        return matchesFrom(m, prefix) >= 0;
    }

    private boolean keyEquals(int m, String scopedKey) {
        long key = records[m * RECORD + KEY];
        return matchesFrom(m, scopedKey) == (int) (key >>> 32) + (int) key;
    }

    /** Where mapping {@code m}'s key continues after matching all of {@code s}, or -1 when {@code s} is not its start. */
    private int matchesFrom(int m, String s) {
        byte[] bytes = keyBytes;
        long key = records[m * RECORD + KEY];
        int p = (int) (key >>> 32);
        int end = p + (int) key;
        int n = s.length();
        if (n > end - p) {
            return -1; // every unit takes at least a byte
        }
        if (n == end - p) {
            // As many bytes as units. A key that is not ASCII has fewer units than bytes, so it is not s, nor does s
            // start it. An ASCII key is s if the string of its bytes equals s: a copy and an equals, both done by the
            // JVM many bytes at a time, where a loop over s's characters takes a cycle or more for each.
            if (!ascii(m)) {
                return -1;
            }
            return s.equals(new String(bytes, p, n, StandardCharsets.ISO_8859_1)) ? end : -1;
        }
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                if (p >= end || bytes[p] != (byte) c) {
                    return -1;
                }
                p++;
            } else if (c < 0x800) {
                if (p + 2 > end || bytes[p] != (byte) (0xC0 | c >> 6) || bytes[p + 1] != (byte) (0x80 | c & 0x3F)) {
                    return -1;
                }
                p += 2;
            } else {
                if (p + 3 > end || bytes[p] != (byte) (0xE0 | c >> 12) || bytes[p + 1] != (byte) (0x80 | c >> 6 & 0x3F)
                        || bytes[p + 2] != (byte) (0x80 | c & 0x3F)) {
                    return -1;
                }
                p += 3;
            }
        }
        return p;
    }

    // ---- changing a mapping ----

    /** Replaces mapping {@code m}'s pages and checksum. */
    void setPlacement(int m, Placement p) {
        setPlacement(m, p.bucket(), p.offset(), p.size(), p.crc32c());
    }

    private void setPlacement(int m, int bucket, long offset, long size, int crc32c) {
        int r = m * RECORD;
        records[r + OFFSET] = offset;
        records[r + SIZE] = size;
        records[r + BUCKET_CRC] = (long) bucket << 32 | (crc32c & 0xFFFFFFFFL);
    }

    /** Leases mapping {@code m} until {@code nanos} (0 or more): only once its change is durable (see {@link #unconfirmedSequence}). */
    void setLeaseUntilNanos(int m, long nanos) {
        setField(m, LEASE_UNTIL, nanos);
    }

    void setLastUsedNanos(int m, long nanos) {
        setField(m, LAST_USED, nanos);
    }

    void setPinned(int m, boolean pin) {
        long v = field(m, HASH_FLAGS);
        setField(m, HASH_FLAGS, pin ? v | FLAG_PINNED : v & ~FLAG_PINNED);
    }

    /**
     * Adds the mapping of {@code scopedKey}, which must have none, with no lease; returns its number.
     */
    int add(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pin, long lastUsedNanos) {
        return add(scopedKey, bucket, offset, size, crc32c, pin, lastUsedNanos, null);
    }

    /** {@link #add(String, int, long, long, int, boolean, long)} keeping the engine block hashes {@code hashes} (null: none). */
    int add(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pin, long lastUsedNanos, long[] hashes) {
        int length = encodedLength(scopedKey);
        int n = hashes == null ? 0 : hashes.length;
        int start = reserveKeyBytes(length + 8 * n);
        encode(scopedKey, length, keyBytes, start);
        putHashes(start + length, hashes);
        int m = addEncoded(scopedKey.hashCode(), start, length, length == scopedKey.length(), bucket, offset, size, crc32c, pin, lastUsedNanos);
        records[m * RECORD + HASH_FLAGS] |= (long) n << BLOCKS_SHIFT;
        return m;
    }

    /** Files mapping {@code m} of {@code from} here, in place of any mapping its key has (restore: the later wins). */
    void putFrom(MappingTable from, int m) {
        int length = from.keyLength(m);
        int target = probe(from.hash(m), null, from.keyBytes, from.keyStart(m), length);
        if (target < 0) {
            int start = reserveKeyBytes(from.footprint(m));
            System.arraycopy(from.keyBytes, from.keyStart(m), keyBytes, start, from.footprint(m));
            target = addEncoded(from.hash(m), start, length, from.ascii(m), 0, 0, 0, 0, false, 0);
        } else if (from.blockCount(m) != 0 || blockCount(target) != 0) {
            setBlockHashes(target, from.blockHashes(m));
        }
        int r = target * RECORD;
        int f = m * RECORD;
        for (int i = 0; i < RECORD; i++) {
            if (i != KEY) {
                records[r + i] = from.records[f + i];
            }
        }
    }

    /** Adds or replaces the mapping of {@code scopedKey} (restore: a later record of a key wins). */
    void put(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pin) {
        put(scopedKey, bucket, offset, size, crc32c, pin, null);
    }

    /** {@link #put(String, int, long, long, int, boolean)} with the mapping's engine block hashes (null: none). */
    void put(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pin, long[] hashes) {
        int m = find(scopedKey);
        if (m < 0) {
            add(scopedKey, bucket, offset, size, crc32c, pin, 0, hashes);
            return;
        }
        setPlacement(m, bucket, offset, size, crc32c);
        setPinned(m, pin);
        setBlockHashes(m, hashes);
    }

    private int addEncoded(int hash, int start, int length, boolean ascii, int bucket, long offset, long size, int crc32c, boolean pin,
                           long lastUsedNanos) {
        if ((used + 1) * RECORD > records.length) {
            growRecords();
        }
        if (used >= index.length * 7L / 10) {
            rebuildIndex(index.length << 1);
        }
        int m = used++;
        int r = m * RECORD;
        records[r + KEY] = (long) start << 32 | length;
        records[r + HASH_FLAGS] = (long) hash << 32 | (pin ? FLAG_PINNED : 0) | (ascii ? FLAG_ASCII : 0);
        setPlacement(m, bucket, offset, size, crc32c);
        records[r + LEASE_UNTIL] = 0;
        records[r + LAST_USED] = lastUsedNanos;
        insertIndex(hash, m);
        if (m == 0) {
            emptyHint = false;
        }
        return m;
    }

    /** Removes mapping {@code m}; the last mapping takes its number. */
    void remove(int m) {
        deleteSlot(slotOf(hash(m), m));
        keyBytesRemoved += footprint(m);
        int last = --used;
        if (m != last) {
            int lastHash = hash(last);
            index[slotOf(lastHash, last)] = (long) lastHash << 32 | (m + 1L);
            System.arraycopy(records, last * RECORD, records, m * RECORD, RECORD);
        }
        if (used == 0) {
            keyBytesUsed = 0;
            keyBytesRemoved = 0;
            emptyHint = true;
        }
    }

    /** The index slot that points at mapping {@code m}. */
    private int slotOf(int hash, int m) {
        long want = (long) hash << 32 | (m + 1L);
        int mask = index.length - 1;
        for (int slot = home(hash, mask); ; slot = (slot + 1) & mask) {
            if (index[slot] == want) {
                return slot;
            }
            if (index[slot] == 0) {
                throw new IllegalStateException("mapping " + m + " is missing from its shard's index");
            }
        }
    }

    private void insertIndex(int hash, int m) {
        int mask = index.length - 1;
        int slot = home(hash, mask);
        while (index[slot] != 0) {
            slot = (slot + 1) & mask;
        }
        index[slot] = (long) hash << 32 | (m + 1L);
    }

    /** Empties {@code slot}, moving later slots of the run back so that no probe stops early (no tombstones). */
    private void deleteSlot(int slot) {
        long[] idx = index;
        int mask = idx.length - 1;
        int hole = slot;
        for (int j = (hole + 1) & mask; idx[j] != 0; j = (j + 1) & mask) {
            int home = home((int) (idx[j] >>> 32), mask);
            // The entry at j may fill the hole when its home is not in the cyclic range (hole, j].
            boolean homeAfterHole = hole <= j ? home > hole && home <= j : home > hole || home <= j;
            if (!homeAfterHole) {
                idx[hole] = idx[j];
                hole = j;
            }
        }
        idx[hole] = 0;
    }

    private void rebuildIndex(int capacity) {
        index = new long[capacity];
        for (int m = 0; m < used; m++) {
            insertIndex(hash(m), m);
        }
    }

    private void growRecords() {
        int mappings = records.length / RECORD;
        int grown = mappings + (mappings >> 1) + 1; // by half: a million mappings keep less slack than with doubling
        records = Arrays.copyOf(records, grown * RECORD);
    }

    /** Room for {@code length} more key bytes, compacting the arena first when removed keys fill most of it. */
    private int reserveKeyBytes(int length) {
        if (keyBytesUsed + length > keyBytes.length) {
            int live = keyBytesUsed - keyBytesRemoved;
            if (keyBytesRemoved >= MIN_GARBAGE_TO_COMPACT && keyBytesRemoved > live) {
                compactKeys(Math.max(keyBytes.length, live + length));
            }
            if (keyBytesUsed + length > keyBytes.length) {
                long wanted = Math.max(keyBytesUsed + (long) length, keyBytes.length + (keyBytes.length >> 1) + 64L);
                if (wanted > Integer.MAX_VALUE - 16) {
                    throw new IllegalStateException("a shard's keys take more than 2 GiB");
                }
                keyBytes = Arrays.copyOf(keyBytes, (int) wanted);
            }
        }
        int start = keyBytesUsed;
        keyBytesUsed += length;
        return start;
    }

    /** Copies the live keys, in mapping order, into a new arena of {@code capacity} bytes. */
    private void compactKeys(int capacity) {
        byte[] compacted = new byte[capacity];
        int at = 0;
        for (int m = 0; m < used; m++) {
            int length = keyLength(m);
            int footprint = footprint(m);
            System.arraycopy(keyBytes, keyStart(m), compacted, at, footprint);
            records[m * RECORD + KEY] = (long) at << 32 | length;
            at += footprint;
        }
        keyBytes = compacted;
        keyBytesUsed = at;
        keyBytesRemoved = 0;
    }

    /** Bytes the arena holds for keys, live and removed: restore sizes a shard's arena by it. */
    int keyBytesHeld() {
        return keyBytesUsed;
    }

    /** The arena's length (for tests of its compaction). */
    int keyArenaCapacity() {
        return keyBytes.length;
    }

    static int encodedLength(String s) {
        if (KeyRules.isAscii(s)) {
            return s.length();
        }
        int bytes = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
        }
        return bytes;
    }

    /** Encodes {@code s}, whose {@link #encodedLength} is {@code length}, into {@code into} from {@code at}. */
    private static void encode(String s, int length, byte[] into, int at) {
        if (length == s.length()) {
            KeyRules.copyAscii(s, into, at); // every unit took one byte: ASCII
            return;
        }
        int p = at;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                into[p++] = (byte) c;
            } else if (c < 0x800) {
                into[p++] = (byte) (0xC0 | c >> 6);
                into[p++] = (byte) (0x80 | c & 0x3F);
            } else {
                into[p++] = (byte) (0xE0 | c >> 12);
                into[p++] = (byte) (0x80 | c >> 6 & 0x3F);
                into[p++] = (byte) (0x80 | c & 0x3F);
            }
        }
    }
}
