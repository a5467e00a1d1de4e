package io.mcctl.master.durability;

import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import com.google.protobuf.CodedOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The log's two hot records, {@code Allocated} and {@code Committed} inside a {@code WalRecord}, written from
 * their fields into the log's buffer: the very bytes protobuf gives for the built record (fields in number
 * order, default values left out, a set message field written even when empty), without the builders, the
 * record objects and the intermediate array that protobuf needs for each. Every offloaded object logs one of
 * each, from the transport thread, under its shard's lock.
 *
 * <p>Each record has a size function and a put function taking the same arguments; the log asks the size, makes
 * room, then puts. {@link WalRecordEncoderTest} checks the bytes against protobuf's.
 */
final class WalRecordEncoder {

    private static final int WIRE_VARINT = 0;
    private static final int WIRE_FIXED32 = 5;
    private static final int WIRE_LENGTH_DELIMITED = 2;

    private static final int WAL_ALLOCATED = 3;
    private static final int WAL_COMMITTED = 4;

    private WalRecordEncoder() {
    }

    // ---- Allocated {1 tenant_id, 2 key, 3 placement, 4 deadline_ms, 5 overwrite, 6 pin} ----

    static int allocatedSize(String tenant, String key, Placement placement, long deadlineMs, boolean overwrite, boolean pin) {
        return lengthDelimitedSize(allocatedBodySize(tenant, key, placement, deadlineMs, overwrite, pin));
    }

    static void putAllocated(ByteBuffer out, String tenant, String key, Placement placement, long deadlineMs, boolean overwrite, boolean pin) {
        putTag(out, WAL_ALLOCATED, WIRE_LENGTH_DELIMITED);
        putVarint(out, allocatedBodySize(tenant, key, placement, deadlineMs, overwrite, pin));
        putString(out, 1, tenant);
        putString(out, 2, key);
        putPlacement(out, 3, placement);
        putInt64(out, 4, deadlineMs);
        putTrue(out, 5, overwrite);
        putTrue(out, 6, pin);
    }

    private static int allocatedBodySize(String tenant, String key, Placement placement, long deadlineMs, boolean overwrite, boolean pin) {
        return stringSize(tenant) + stringSize(key) + placementFieldSize(placement) + int64Size(deadlineMs) + (overwrite ? 2 : 0) + (pin ? 2 : 0);
    }

    /** A bool field, written only when true (protobuf leaves defaults out). */
    private static void putTrue(ByteBuffer out, int field, boolean value) {
        if (value) {
            putTag(out, field, WIRE_VARINT);
            out.put((byte) 1);
        }
    }

    // ---- Committed {1 tenant_id, 2 key, 3 placement, 4 replaced, 5 replaced_release_ms, 6 pinned} ----

    /** {@code replaced} null: no mapping was replaced, and neither it nor its release time is written. */
    static int committedSize(String tenant, String key, Placement placement, Placement replaced, long replacedReleaseMs, boolean pinned) {
        return lengthDelimitedSize(committedBodySize(tenant, key, placement, replaced, replacedReleaseMs, pinned));
    }

    static void putCommitted(ByteBuffer out, String tenant, String key, Placement placement, Placement replaced, long replacedReleaseMs,
                             boolean pinned) {
        putTag(out, WAL_COMMITTED, WIRE_LENGTH_DELIMITED);
        putVarint(out, committedBodySize(tenant, key, placement, replaced, replacedReleaseMs, pinned));
        putString(out, 1, tenant);
        putString(out, 2, key);
        putPlacement(out, 3, placement);
        if (replaced != null) {
            putPlacement(out, 4, replaced);
            putInt64(out, 5, replacedReleaseMs);
        }
        putTrue(out, 6, pinned);
    }

    private static int committedBodySize(String tenant, String key, Placement placement, Placement replaced, long replacedReleaseMs,
                                         boolean pinned) {
        int size = stringSize(tenant) + stringSize(key) + placementFieldSize(placement) + (pinned ? 2 : 0);
        if (replaced != null) {
            size += placementFieldSize(replaced) + int64Size(replacedReleaseMs);
        }
        return size;
    }

    // ---- PlacementRecord {1 bucket int32, 2 offset int64, 3 size int64, 4 crc32c fixed32} ----

    private static int placementFieldSize(Placement p) {
        return lengthDelimitedSize(placementBodySize(p));
    }

    private static int placementBodySize(Placement p) {
        // int32 is written as the 64-bit varint of its sign extension, as protobuf does.
        return int64Size(p.bucket()) + int64Size(p.offset()) + int64Size(p.size()) + (p.crc32c() != 0 ? 5 : 0);
    }

    private static void putPlacement(ByteBuffer out, int field, Placement p) {
        putTag(out, field, WIRE_LENGTH_DELIMITED);
        putVarint(out, placementBodySize(p));
        putInt64(out, 1, p.bucket());
        putInt64(out, 2, p.offset());
        putInt64(out, 3, p.size());
        if (p.crc32c() != 0) {
            putTag(out, 4, WIRE_FIXED32);
            out.putInt(p.crc32c()); // the buffer is little-endian, as fixed32 is
        }
    }

    // ---- wire primitives (field numbers here are all below 16: one-byte tags) ----

    /** Tag, length and body of a length-delimited field whose body is {@code bodySize} bytes. */
    private static int lengthDelimitedSize(int bodySize) {
        return 1 + varintSize(bodySize) + bodySize;
    }

    private static int int64Size(long value) {
        return value == 0 ? 0 : 1 + varintSize(value);
    }

    private static void putInt64(ByteBuffer out, int field, long value) {
        if (value != 0) {
            putTag(out, field, WIRE_VARINT);
            putVarint(out, value);
        }
    }

    private static int stringSize(String s) {
        return s.isEmpty() ? 0 : lengthDelimitedSize(utf8Length(s));
    }

    private static void putString(ByteBuffer out, int field, String s) {
        if (s.isEmpty()) {
            return;
        }
        putTag(out, field, WIRE_LENGTH_DELIMITED);
        if (KeyRules.isAscii(s)) {
            int n = s.length();
            putVarint(out, n);
            if (out.remaining() < n) {
                throw new java.nio.BufferOverflowException();
            }
            int at = out.position();
            KeyRules.copyAscii(s, out.array(), out.arrayOffset() + at); // the log frames into a heap buffer
            out.position(at + n);
        } else {
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            putVarint(out, utf8.length);
            out.put(utf8);
        }
    }

    /** UTF-8 length as {@link String#getBytes} encodes it (an unpaired surrogate becomes '?'), counted without encoding. */
    private static int utf8Length(String s) {
        return KeyRules.utf8Length(s);
    }

    private static void putTag(ByteBuffer out, int field, int wireType) {
        out.put((byte) (field << 3 | wireType));
    }

    static int varintSize(long value) {
        return CodedOutputStream.computeUInt64SizeNoTag(value);
    }

    static void putVarint(ByteBuffer out, long value) {
        while ((value & ~0x7FL) != 0) {
            out.put((byte) ((value & 0x7F) | 0x80));
            value >>>= 7;
        }
        out.put((byte) value);
    }
}
