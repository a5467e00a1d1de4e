package io.mcctl.master.protocol;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.mcctl.master.proto.v1.ErrorCode;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The placements of a packed batch lookup ({@code BatchGetDistributedPageMappingRequest.packed}), of a packed batch
 * allocation ({@code BatchAllocateDistributedPageRequest.packed}, CRC32C 0) and of the notify that commits it
 * ({@code NotifyDistributedDiskSuccessRequest.placements}, with the CRC32C of what was written): one record of
 * {@value #RECORD_BYTES} bytes per key, in the keys' order, little-endian: int32 bucket, uint32 CRC32C, int64 offset,
 * int64 object size. A key without a readable mapping has bucket {@code -(its ErrorCode)} and zeros after it.
 * <p>
 * The layout is fixed by the wire protocol: the master writes it, the Java client reads it here, and the Python
 * client reads the same bytes straight into its read plan. A batch's answer is then one byte array rather than a
 * message, a descriptor and a path per key.
 */
public final class PackedPlacements {
    public static final int RECORD_BYTES = 24;

    private static final VarHandle INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private final byte[] records;

    private PackedPlacements(byte[] records) {
        this.records = records;
    }

    /** Room for the placements of {@code keys} keys; each must then be set once, by {@link #place} or {@link #miss}. */
    public static PackedPlacements forKeys(int keys) {
        return new PackedPlacements(new byte[Math.multiplyExact(keys, RECORD_BYTES)]);
    }

    /**
     * The placements packed in a message about {@code keys} keys.
     *
     * @throws IllegalArgumentException when the message does not hold one record per key (a master that ignored the
     *                                  request's packed flag answers none)
     */
    public static PackedPlacements of(ByteString placements, int keys) {
        if (placements.size() != (long) keys * RECORD_BYTES) {
            throw new IllegalArgumentException("packed answer of " + placements.size() + " bytes for " + keys
                    + " keys: expected " + RECORD_BYTES + " bytes a key (a master too old to answer packed?)");
        }
        return new PackedPlacements(placements.toByteArray());
    }

    public void place(int key, Placement placement) {
        int at = key * RECORD_BYTES;
        INT.set(records, at, placement.bucket());
        INT.set(records, at + 4, placement.crc32c());
        LONG.set(records, at + 8, placement.offset());
        LONG.set(records, at + 16, placement.size());
    }

    public void miss(int key, ErrorCode why) {
        INT.set(records, key * RECORD_BYTES, -why.getNumber()); // the rest of the record stays zero
    }

    /** The records as the answer's field. The array is handed over, not copied: nothing may change it after. */
    public ByteString toByteString() {
        return UnsafeByteOperations.unsafeWrap(records);
    }

    public int count() {
        return records.length / RECORD_BYTES;
    }

    /** OK when key {@code key} has a placement, else why not. */
    public ErrorCode error(int key) {
        int bucket = (int) INT.get(records, key * RECORD_BYTES);
        if (bucket >= 0) {
            return ErrorCode.OK;
        }
        ErrorCode code = ErrorCode.forNumber(-bucket);
        return code == null || code == ErrorCode.OK ? ErrorCode.INTERNAL_ERROR : code;
    }

    /** Key {@code key}'s placement as recorded; meaningful only when {@link #error} is OK. */
    public Placement placement(int key) {
        int at = key * RECORD_BYTES;
        return new Placement((int) INT.get(records, at), (long) LONG.get(records, at + 8), (long) LONG.get(records, at + 16),
                (int) INT.get(records, at + 4));
    }
}
