package io.mcctl.master.durability;

import com.google.protobuf.InvalidProtocolBufferException;
import io.mcctl.master.proto.v1.WalRecord;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * Reads the write-ahead log in order. The last segment may end in zeros written ahead of the records
 * ({@link WriteAheadLog}): a frame header of zeros with only zeros after it is its end (cut off when
 * repairing). A frame of the last segment that runs past the end of the file, or fails its checksum with
 * no whole record after it, is a torn write from a crash: it is reported (and cut off when repairing) and
 * reading stops there. Anything else that does not decode, and any gap in the sequence, is corruption:
 * reading stops with the exact file and offset.
 */
public final class WalReader {

    /** Receives records in sequence order. */
    @FunctionalInterface
    public interface RecordConsumer {
        void accept(WalRecord record, Path file, long offset) throws IOException;
    }

    /** How a read ended. */
    public record Outcome(long lastSequence, long records, Path tornFile, long tornOffset) {
        public boolean torn() {
            return tornFile != null;
        }
    }

    private static final String LAST_RECORD_CRC = "last record fails its CRC32C";

    private WalReader() {
    }

    /**
     * Reads every record with a sequence above {@code afterSequence}.
     *
     * @param repair cut a torn tail off the last segment, so the file ends at its last whole record
     */
    public static Outcome read(Path dir, long afterSequence, boolean repair, RecordConsumer consumer) throws IOException {
        List<WalSegments.Segment> segments = WalSegments.list(dir);
        long expected = -1;
        long last = afterSequence;
        long count = 0;
        for (int s = 0; s < segments.size(); s++) {
            WalSegments.Segment segment = segments.get(s);
            boolean lastSegment = s == segments.size() - 1;
            if (!lastSegment && segments.get(s + 1).firstSequence() - 1 <= afterSequence) {
                continue; // wholly covered
            }
            try (FileChannel channel = FileChannel.open(segment.path(), repair && lastSegment
                    ? new StandardOpenOption[] {StandardOpenOption.READ, StandardOpenOption.WRITE}
                    : new StandardOpenOption[] {StandardOpenOption.READ})) {
                long size = channel.size();
                if (size > Integer.MAX_VALUE - 16) {
                    throw new CorruptStateException(segment.path(), 0, "segment of " + size + " bytes is larger than any segment mcctl writes");
                }
                // One mapping per segment instead of two reads per record: replay reads every frame once.
                ByteBuffer data = channel.map(FileChannel.MapMode.READ_ONLY, 0, size).order(ByteOrder.LITTLE_ENDIAN);
                long offset = 0;
                while (offset < size) {
                    String torn = null;
                    WalRecord record = null;
                    long skippedSequence = -1;
                    long next = -1;
                    if (size - offset < FrameCodec.HEADER_BYTES) {
                        torn = "frame header cut short";
                    } else {
                        int length = data.getInt((int) offset);
                        int crc = data.getInt((int) offset + 4);
                        // No record is empty (each has a sequence): a zero length is a zero-filled tail, not a frame.
                        if (lastSegment && length == 0 && zerosFrom(data, offset)) {
                            if (repair) {
                                channel.truncate(offset);
                                channel.force(true);
                            }
                            break; // the zeros written ahead of the records: the end of the log
                        }
                        if (length <= 0 || length > FrameCodec.MAX_PAYLOAD) {
                            if (!lastSegment) {
                                throw new CorruptStateException(segment.path(), offset, "frame length " + length + " is not a record");
                            }
                            torn = "frame length " + length;
                        } else if (offset + FrameCodec.HEADER_BYTES + length > size) {
                            torn = "frame of " + length + " bytes runs past the end of the file";
                        } else {
                            byte[] bytes = new byte[length];
                            data.get((int) offset + FrameCodec.HEADER_BYTES, bytes);
                            long end = offset + FrameCodec.HEADER_BYTES + length;
                            next = end;
                            if (FrameCodec.crc(bytes, 0, length) != crc) {
                                if (!lastSegment) {
                                    throw new CorruptStateException(segment.path(), offset, "record fails its CRC32C");
                                }
                                // The last record written before a crash; if a whole record follows, it is damage instead.
                                torn = LAST_RECORD_CRC;
                            } else {
                                long peeked = peekSequence(bytes);
                                if (peeked > 0 && peeked <= afterSequence) {
                                    // Covered by the snapshot: only its place in the sequence matters, so skip decoding it.
                                    record = null;
                                    skippedSequence = peeked;
                                } else {
                                    try {
                                        record = WalRecord.parseFrom(bytes);
                                    } catch (InvalidProtocolBufferException e) {
                                        throw new CorruptStateException(segment.path(), offset, "record does not decode: " + e.getMessage());
                                    }
                                }
                            }
                        }
                    }
                    if (torn != null) {
                        if (!lastSegment) {
                            throw new CorruptStateException(segment.path(), offset, torn);
                        }
                        // A crash tears only the end: if a whole record of a later sequence follows, the bad
                        // frame is damage in the middle of acknowledged records, and cutting there would lose them.
                        long later = laterRecordAfter(channel, offset + 1, size, Math.max(expected, last + 1));
                        if (later >= 0) {
                            throw new CorruptStateException(segment.path(), offset, torn.equals(LAST_RECORD_CRC)
                                    ? "record fails its CRC32C (a whole record follows at byte " + later + ")"
                                    : torn + ", yet a whole record follows at byte " + later);
                        }
                        if (repair) {
                            channel.truncate(offset);
                            channel.force(true);
                        }
                        return new Outcome(last, count, segment.path(), offset);
                    }
                    long sequence = record != null ? record.getSequence() : skippedSequence;
                    if (expected >= 0 && sequence != expected) {
                        throw new CorruptStateException(segment.path(), offset, "sequence " + sequence + " where " + expected + " was due");
                    }
                    expected = sequence + 1;
                    if (sequence > afterSequence) {
                        if (sequence != last + 1) {
                            throw new CorruptStateException(segment.path(), offset, "sequence " + sequence + " follows " + last
                                    + ": records " + (last + 1) + " to " + (sequence - 1) + " are missing");
                        }
                        consumer.accept(record, segment.path(), offset);
                        last = sequence;
                        count++;
                    }
                    offset = next;
                }
            }
        }
        return new Outcome(last, count, null, -1);
    }

    /** Whether every byte of {@code data} from {@code offset} to its end is zero. */
    static boolean zerosFrom(ByteBuffer data, long offset) {
        int at = (int) offset;
        int end = data.limit();
        for (; at + Long.BYTES <= end; at += Long.BYTES) {
            if (data.getLong(at) != 0) {
                return false;
            }
        }
        for (; at < end; at++) {
            if (data.get(at) != 0) {
                return false;
            }
        }
        return true;
    }

    /** The sequence (field 1, a varint, written first) at the start of a record's bytes, or -1 if it is not there. */
    static long peekSequence(byte[] payload) {
        if (payload.length < 2 || payload[0] != 0x08) {
            return -1;
        }
        long value = 0;
        for (int i = 1, shift = 0; i < payload.length && shift < 64; i++, shift += 7) {
            value |= (long) (payload[i] & 0x7f) << shift;
            if ((payload[i] & 0x80) == 0) {
                return value;
            }
        }
        return -1;
    }

    /**
     * Offset of the first whole frame at or after {@code from} that decodes to a record with a sequence of
     * at least {@code minSequence}, or -1. A byte-by-byte search: only run on a frame already found bad.
     */
    private static long laterRecordAfter(FileChannel channel, long from, long size, long minSequence) throws IOException {
        if (from >= size || size - from > Integer.MAX_VALUE - 16) {
            return -1;
        }
        ByteBuffer rest = ByteBuffer.allocate((int) (size - from)).order(ByteOrder.LITTLE_ENDIAN);
        readFully(channel, rest, from);
        byte[] bytes = rest.array();
        for (int at = 0; at + FrameCodec.HEADER_BYTES < bytes.length; at++) {
            int length = rest.getInt(at);
            if (length <= 0 || length > bytes.length - at - FrameCodec.HEADER_BYTES) {
                continue;
            }
            if (FrameCodec.crc(bytes, at + FrameCodec.HEADER_BYTES, length) != rest.getInt(at + 4)) {
                continue;
            }
            try {
                WalRecord record = WalRecord.parseFrom(java.util.Arrays.copyOfRange(bytes, at + FrameCodec.HEADER_BYTES,
                        at + FrameCodec.HEADER_BYTES + length));
                if (record.getSequence() >= minSequence) {
                    return from + at;
                }
            } catch (InvalidProtocolBufferException e) {
                // not a frame after all
            }
        }
        return -1;
    }

    private static void readFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        while (buffer.hasRemaining()) {
            int n = channel.read(buffer, position + buffer.position());
            if (n < 0) {
                throw new java.io.EOFException("unexpected end of " + channel);
            }
        }
    }
}
