package io.mcctl.master.durability;

import com.google.protobuf.InvalidProtocolBufferException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Decodes a serialised {@code MappingRecord} (tenant_id = 1, key = 2, placement = 3 {bucket = 1, offset = 2, size = 3,
 * crc32c = 4 fixed32}, pinned = 4, block_hashes = 5 repeated fixed64) straight into a scoped key and four numbers, without building message objects: a restart
 * decodes a million of these, and every object it need not make is one the collector need not copy. Unknown
 * fields are skipped, as protobuf would.
 *
 * <p>Not thread-safe: one per decoding thread (it keeps scratch buffers).
 */
final class MappingRecordDecoder {

    /** Receives one decoded mapping. */
    interface Sink {
        void mapping(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pinned, long[] blockHashes);
    }

    private byte[] tenant = new byte[64];
    private int tenantLength;
    private byte[] key = new byte[256];
    private int keyLength;
    private byte[] scoped = new byte[320];
    private ByteBuffer bytes;
    private int at;

    void decode(ByteBuffer source, int offset, int length, Sink sink) throws InvalidProtocolBufferException {
        bytes = source;
        at = offset;
        int end = offset + length;
        tenantLength = 0;
        keyLength = 0;
        int bucket = 0;
        long pageOffset = 0;
        long size = 0;
        int crc = 0;
        boolean pinned = false;
        long[] hashes = null;
        int hashCount = 0;
        while (at < end) {
            int tag = (int) varint(end);
            int field = tag >>> 3;
            int wire = tag & 7;
            if (wire == 2 && (field == 1 || field == 2 || field == 3)) {
                int len = length(end);
                if (field == 1) {
                    tenant = copy(tenant, len);
                    tenantLength = len;
                } else if (field == 2) {
                    key = copy(key, len);
                    keyLength = len;
                } else {
                    int placementEnd = at + len;
                    bucket = 0;
                    pageOffset = 0;
                    size = 0;
                    crc = 0;
                    while (at < placementEnd) {
                        int ptag = (int) varint(placementEnd);
                        int pfield = ptag >>> 3;
                        int pwire = ptag & 7;
                        if (pwire == 0 && pfield == 1) {
                            bucket = (int) varint(placementEnd);
                        } else if (pwire == 0 && pfield == 2) {
                            pageOffset = varint(placementEnd);
                        } else if (pwire == 0 && pfield == 3) {
                            size = varint(placementEnd);
                        } else if (pwire == 5 && pfield == 4) {
                            need(4, placementEnd);
                            crc = (bytes.get(at) & 0xff) | (bytes.get(at + 1) & 0xff) << 8 | (bytes.get(at + 2) & 0xff) << 16
                                    | (bytes.get(at + 3) & 0xff) << 24; // fixed32: little-endian
                            at += 4;
                        } else {
                            skip(pwire, placementEnd);
                        }
                    }
                    if (at != placementEnd) {
                        throw new InvalidProtocolBufferException("placement runs past its length");
                    }
                }
            } else if (wire == 0 && field == 4) {
                pinned = varint(end) != 0;
            } else if (field == 5 && (wire == 2 || wire == 1)) {
                // Packed (as protobuf writes a repeated fixed64) or one value at a time (as it also reads).
                int len = wire == 2 ? length(end) : 8; // read before "at" is: length() moves it past the length's bytes
                if (wire == 1) {
                    need(8, end);
                }
                int valuesEnd = at + len;
                if ((valuesEnd - at) % 8 != 0) {
                    throw new InvalidProtocolBufferException("block_hashes of " + (valuesEnd - at) + " bytes: not whole fixed64 values");
                }
                int adding = (valuesEnd - at) / 8;
                hashes = hashes == null ? new long[adding] : java.util.Arrays.copyOf(hashes, hashCount + adding);
                for (; at < valuesEnd; at += 8) {
                    hashes[hashCount++] = bytes.order() == java.nio.ByteOrder.LITTLE_ENDIAN ? bytes.getLong(at)
                            : Long.reverseBytes(bytes.getLong(at)); // fixed64: little-endian
                }
            } else {
                skip(wire, end);
            }
        }
        int n = tenantLength + 1 + keyLength;
        if (scoped.length < n) {
            scoped = new byte[Math.max(n, 2 * scoped.length)];
        }
        System.arraycopy(tenant, 0, scoped, 0, tenantLength);
        scoped[tenantLength] = 0;
        System.arraycopy(key, 0, scoped, tenantLength + 1, keyLength);
        sink.mapping(new String(scoped, 0, n, StandardCharsets.UTF_8), bucket, pageOffset, size, crc, pinned,
                hashes == null || hashCount == 0 ? null : hashes);
    }

    private byte[] copy(byte[] into, int len) {
        byte[] target = into.length >= len ? into : new byte[Math.max(len, 2 * into.length)];
        bytes.get(at, target, 0, len);
        at += len;
        return target;
    }

    private long varint(int end) throws InvalidProtocolBufferException {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            need(1, end);
            byte b = bytes.get(at++);
            value |= (long) (b & 0x7f) << shift;
            if (b >= 0) {
                return value;
            }
        }
        throw new InvalidProtocolBufferException("malformed varint");
    }

    private int length(int end) throws InvalidProtocolBufferException {
        long len = varint(end);
        if (len < 0 || len > end - at) {
            throw new InvalidProtocolBufferException("field of " + len + " bytes runs past the end of the record");
        }
        return (int) len;
    }

    private void need(int count, int end) throws InvalidProtocolBufferException {
        if (end - at < count) {
            throw new InvalidProtocolBufferException("record ends inside a field");
        }
    }

    private void skip(int wire, int end) throws InvalidProtocolBufferException {
        switch (wire) {
            case 0 -> varint(end);
            case 1 -> {
                need(8, end);
                at += 8;
            }
            case 2 -> {
                int len = length(end); // not "at += length(end)": that would add to the position before the length was read
                at += len;
            }
            case 5 -> {
                need(4, end);
                at += 4;
            }
            default -> throw new InvalidProtocolBufferException("unsupported wire type " + wire);
        }
    }
}
