package io.mcctl.master.node;

import io.mcctl.storage.config.SizeParser;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * A node's DRAM segment: {@code size} bytes off-heap, in direct buffers of at most {@link #CHUNK_BYTES} each (so a
 * segment may be larger than one ByteBuffer), and the index of which MEMORY objects it holds: (tenant, key) ->
 * (offset, size, CRC32C).
 *
 * <p>The master decides where each object goes (PutStart, a promotion task's staged range); this class only keeps the
 * node's own view honest. Writing a range first drops every index entry that overlaps it, so an object whose range was
 * given to another one (after a re-registration, or an eviction the node was not told of) is never answered. A
 * registration starts a new epoch with an empty index; a write begun under an earlier epoch is not indexed.
 *
 * <p>Thread-safe. {@link #lock} guards the index ({@link #byKey}, {@link #byOffset}) and {@link #epoch}; it is never
 * held while bytes are copied and nests inside no other lock. The bytes themselves are not guarded: a read copies
 * out without the lock, then checks under it that its entry is still indexed (a writer drops the entry before it
 * touches the range, so an entry still there means no overlapping write began during the copy) and that the CRC32C
 * of the copy is the entry's. Either check failing is a miss, never bytes.
 */
public final class DramSegment {

    /** Largest single direct buffer of the segment. */
    public static final long CHUNK_BYTES = 1L << 30;
    /** Smallest segment worth having. */
    public static final long MIN_BYTES = 1L << 20;

    /** An object the segment holds. */
    public record Entry(String tenant, String key, long offset, long size, int crc32c) {
        long end() {
            return offset + size;
        }
    }

    private final long size;
    private final long chunkBytes;
    private final ByteBuffer[] chunks;
    private final Object lock = new Object();
    private final Map<String, Entry> byKey = new HashMap<>();
    private final NavigableMap<Long, Entry> byOffset = new TreeMap<>();
    private long epoch;

    private DramSegment(long size, long chunkBytes, ByteBuffer[] chunks) {
        this.size = size;
        this.chunkBytes = chunkBytes;
        this.chunks = chunks;
    }

    /** A segment that cannot be had: one line for people. */
    public static final class AllocationException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        AllocationException(String message) {
            super(message);
        }
    }

    /** Why a segment of {@code size} bytes cannot be had in this JVM, or null when it can. */
    public static String problemWith(long size) {
        if (size < MIN_BYTES) {
            return SizeParser.format(size) + " is too small for a DRAM segment: allowed is at least " + SizeParser.format(MIN_BYTES);
        }
        long limit = maxDirectMemory();
        if (size > limit) {
            return SizeParser.format(size) + " is more than this JVM may allocate off-heap (" + SizeParser.format(limit)
                    + "): give a smaller size, or raise the limit with MCCTL_JAVA_OPTS=-XX:MaxDirectMemorySize="
                    + SizeParser.format(size).replace("iB", "").toLowerCase(java.util.Locale.ROOT) + " (plus room for the node's buffers)";
        }
        return null;
    }

    /**
     * Allocates a segment of {@code size} bytes off-heap.
     *
     * @throws AllocationException when {@link #problemWith} names a problem, or the JVM cannot give the memory
     */
    public static DramSegment allocate(long size) {
        String problem = problemWith(size);
        if (problem != null) {
            throw new AllocationException(problem);
        }
        return allocate(size, CHUNK_BYTES);
    }

    /** A segment in direct buffers of {@code chunkBytes} (tests use small ones to cross chunk boundaries). */
    static DramSegment allocate(long size, long chunkBytes) {
        int count = (int) ((size + chunkBytes - 1) / chunkBytes);
        ByteBuffer[] chunks = new ByteBuffer[count];
        try {
            for (int i = 0; i < count; i++) {
                chunks[i] = ByteBuffer.allocateDirect((int) Math.min(chunkBytes, size - i * chunkBytes));
            }
        } catch (OutOfMemoryError e) {
            throw new AllocationException("cannot allocate a DRAM segment of " + SizeParser.format(size) + " off-heap ("
                    + e.getMessage() + "): give a smaller size, or raise the limit with MCCTL_JAVA_OPTS=-XX:MaxDirectMemorySize=...");
        }
        return new DramSegment(size, chunkBytes, chunks);
    }

    /** What this JVM may allocate in direct buffers: -XX:MaxDirectMemorySize, or the heap's maximum when it is not set. */
    static long maxDirectMemory() {
        try {
            com.sun.management.HotSpotDiagnosticMXBean hotspot = ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
            long set = Long.parseLong(hotspot.getVMOption("MaxDirectMemorySize").getValue());
            if (set > 0) {
                return set;
            }
        } catch (RuntimeException e) {
            // not HotSpot: its own default below
        }
        return Runtime.getRuntime().maxMemory();
    }

    public long size() {
        return size;
    }

    /** The current registration's epoch: a write passes the epoch it began under to {@link #index}. */
    public long epoch() {
        synchronized (lock) {
            return epoch;
        }
    }

    /** A new registration: the index is emptied (the master forgot this segment's objects) and a new epoch begins. */
    public long reset() {
        synchronized (lock) {
            byKey.clear();
            byOffset.clear();
            return ++epoch;
        }
    }

    /** Objects indexed now, and their bytes. */
    public long[] usage() {
        synchronized (lock) {
            long bytes = 0;
            for (Entry e : byKey.values()) {
                bytes += e.size();
            }
            return new long[] {byKey.size(), bytes};
        }
    }

    /** Why (offset, length) is not a range of this segment, or null when it is. */
    public String checkRange(long offset, long length) {
        if (offset < 0 || length < 0 || offset > size - length) {
            return "range " + offset + "+" + length + " is outside this node's segment of " + size + " bytes";
        }
        return null;
    }

    /**
     * Drops every index entry overlapping [offset, offset + length) and the entry of (tenant, key): call it before
     * writing the range, so no reader is handed an object whose bytes are about to change.
     */
    public void claim(String tenant, String key, long offset, long length) {
        synchronized (lock) {
            Entry same = byKey.get(scoped(tenant, key));
            if (same != null) {
                drop(same);
            }
            Map.Entry<Long, Entry> before = byOffset.floorEntry(offset);
            if (before != null && before.getValue().end() > offset) {
                drop(before.getValue());
            }
            List<Entry> inside = new ArrayList<>(byOffset.subMap(offset, true, offset + length, false).values());
            inside.forEach(this::drop);
        }
    }

    /**
     * Records that the segment holds (tenant, key) at (offset, size) with {@code crc32c}, if no new registration began
     * since {@code epoch}; returns whether it did.
     */
    public boolean index(long epoch, String tenant, String key, long offset, long size, int crc32c) {
        synchronized (lock) {
            if (epoch != this.epoch) {
                return false;
            }
            claim(tenant, key, offset, size);
            Entry entry = new Entry(tenant, key, offset, size, crc32c);
            byKey.put(scoped(tenant, key), entry);
            byOffset.put(offset, entry);
            return true;
        }
    }

    /** Forgets (tenant, key) if it is indexed at {@code offset} (a notify the master refused). */
    public void forget(String tenant, String key, long offset) {
        synchronized (lock) {
            Entry e = byKey.get(scoped(tenant, key));
            if (e != null && e.offset() == offset) {
                drop(e);
            }
        }
    }

    public Entry find(String tenant, String key) {
        synchronized (lock) {
            return byKey.get(scoped(tenant, key));
        }
    }

    /** What a read of the segment found. */
    public record Read(Entry entry, ByteBuffer data, String miss) {
    }

    /**
     * A copy of the bytes of (tenant, key), checked as the class comment says. A miss carries why (not held, overwritten
     * during the copy, CRC32C not the indexed one); an entry whose bytes no longer match is dropped.
     */
    public Read read(String tenant, String key) {
        Entry entry = find(tenant, key);
        if (entry == null) {
            return new Read(null, null, "it is not in this node's segment (never written here, overwritten since, or forgotten "
                    + "when the node registered again)");
        }
        ByteBuffer copy = ByteBuffer.allocate((int) entry.size());
        copyOut(entry.offset(), copy);
        copy.flip();
        CRC32C crc = new CRC32C();
        crc.update(copy.duplicate());
        synchronized (lock) {
            if (byKey.get(scoped(tenant, key)) != entry) {
                return new Read(null, null, "its range of the segment was overwritten while it was read");
            }
            if ((int) crc.getValue() != entry.crc32c()) {
                drop(entry);
                return new Read(null, null, "its bytes in the segment no longer match their CRC32C");
            }
        }
        return new Read(entry, copy, null);
    }

    /** Copies the segment's bytes from {@code offset} into the remaining space of {@code dst}. */
    public void copyOut(long offset, ByteBuffer dst) {
        long at = offset;
        while (dst.hasRemaining()) {
            ByteBuffer chunk = chunks[(int) (at / chunkBytes)];
            int within = (int) (at % chunkBytes);
            int n = Math.min(dst.remaining(), chunk.capacity() - within);
            dst.put(chunk.duplicate().position(within).limit(within + n));
            at += n;
        }
    }

    /** Copies the remaining bytes of {@code src} into the segment at {@code offset}; call {@link #claim} first. */
    public void copyIn(long offset, ByteBuffer src) {
        long at = offset;
        ByteBuffer from = src.duplicate();
        while (from.hasRemaining()) {
            ByteBuffer chunk = chunks[(int) (at / chunkBytes)];
            int within = (int) (at % chunkBytes);
            int n = Math.min(from.remaining(), chunk.capacity() - within);
            ByteBuffer part = from.duplicate().limit(from.position() + n);
            chunk.duplicate().position(within).put(part);
            from.position(from.position() + n);
            at += n;
        }
    }

    /** A channel that writes into the segment from {@code offset} on, for copies that stream (a promotion's pread). */
    public WritableByteChannel writer(long offset) {
        return new WritableByteChannel() {
            private long at = offset;

            @Override
            public int write(ByteBuffer src) {
                int n = src.remaining();
                copyIn(at, src);
                src.position(src.limit());
                at += n;
                return n;
            }

            @Override
            public boolean isOpen() {
                return true;
            }

            @Override
            public void close() {
            }
        };
    }

    private void drop(Entry e) {
        byKey.remove(scoped(e.tenant(), e.key()));
        byOffset.remove(e.offset(), e);
    }

    private static String scoped(String tenant, String key) {
        return tenant + '\0' + key;
    }

    /** Entries indexed now, by offset. */
    List<Entry> entries() {
        synchronized (lock) {
            return new ArrayList<>(byOffset.values());
        }
    }
}
