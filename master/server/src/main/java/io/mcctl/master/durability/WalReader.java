package io.mcctl.master.durability;

import com.google.protobuf.InvalidProtocolBufferException;
import io.mcctl.master.proto.v1.WalRecord;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads the write-ahead log in order. A segment starts with a {@link WalSegmentHeader} (or, written before
 * there was one, straight with its first frame); a header from another cluster, or of a format this mcctl
 * cannot read, stops the read, and so does a record whose change this mcctl does not know: never skipped.
 * The last segment may end in zeros written ahead of the records
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

    /**
     * How a read ended. {@code skipped} describes damaged frames passed over because a snapshot covers them (at or
     * below the sequence the read started after), one line each.
     */
    public record Outcome(long lastSequence, long records, Path tornFile, long tornOffset, List<String> skipped, List<String> fenced) {
        public Outcome(long lastSequence, long records, Path tornFile, long tornOffset, List<String> skipped) {
            this(lastSequence, records, tornFile, tornOffset, skipped, List.of());
        }

        public boolean torn() {
            return tornFile != null;
        }
    }

    /**
     * The segments a read goes through, with the high-availability fencing applied (see {@link WalSegmentHeader}):
     * a segment whose leader epoch is below that of a segment before it is a deposed leader's and is left out, and a
     * kept segment's records count only up to {@code limit}, the fence of the first later segment of a newer epoch
     * ({@code Long.MAX_VALUE} when there is none). {@code fenced} says in a line each what was left out.
     */
    record Plan(List<WalSegments.Segment> segments, long[] epochs, long[] limits, List<String> fenced) {
    }

    /** The read plan of {@code dir}'s segments: their headers only are read (a header that does not decode is left to the read). */
    static Plan plan(Path dir) throws IOException {
        List<WalSegments.Segment> all = WalSegments.list(dir);
        List<WalSegments.Segment> kept = new ArrayList<>();
        List<WalSegmentHeader> headers = new ArrayList<>();
        List<String> fenced = new ArrayList<>();
        long newest = 0;
        for (WalSegments.Segment segment : all) {
            WalSegmentHeader header = headerOrNull(segment.path());
            long epoch = header == null ? 0 : header.leaderEpoch();
            if (epoch < newest) {
                fenced.add(segment.path().getFileName() + " of leader epoch " + epoch + " follows a segment of epoch " + newest
                        + ": written by a deposed leader, not read");
                continue;
            }
            newest = epoch;
            kept.add(segment);
            headers.add(header);
        }
        long[] epochs = new long[kept.size()];
        long[] limits = new long[kept.size()];
        for (int i = kept.size() - 1; i >= 0; i--) {
            epochs[i] = headers.get(i) == null ? 0 : headers.get(i).leaderEpoch();
            limits[i] = Long.MAX_VALUE;
            for (int j = i + 1; j < kept.size(); j++) {
                if (epochs[j] > epochs[i] && headers.get(j) != null) {
                    limits[i] = headers.get(j).fence().sequence();
                    break;
                }
            }
        }
        return new Plan(kept, epochs, limits, fenced);
    }

    private static WalSegmentHeader headerOrNull(Path file) {
        try {
            return WalSegmentHeader.read(file).orElse(null);
        } catch (IOException e) {
            return null; // the read names what is wrong with it, where it matters
        }
    }

    /**
     * The fences the log's segments name: for each newer epoch, the last record of the epoch before it that the
     * new leader applied. A snapshot of an older epoch past one of them is a deposed leader's.
     */
    public static List<WalSegmentHeader.Fence> fences(Path dir) throws IOException {
        List<WalSegmentHeader.Fence> fences = new ArrayList<>();
        for (WalSegments.Segment segment : WalSegments.list(dir)) {
            WalSegmentHeader header = headerOrNull(segment.path());
            if (header != null && header.leaderEpoch() > 0 && header.fence().epoch() != header.leaderEpoch()
                    && (fences.isEmpty() || fences.get(fences.size() - 1).epoch() < header.leaderEpoch())) {
                // Fence.epoch is the epoch taken over from; kept here as the newer epoch for the comparison.
                fences.add(new WalSegmentHeader.Fence(header.leaderEpoch(), header.fence().sequence(), header.fence().segmentFirstSequence(),
                        header.fence().endOffset()));
            }
        }
        return fences;
    }

    private static final String LAST_RECORD_CRC = "last record fails its CRC32C";

    private WalReader() {
    }

    /** {@link #read(Path, long, boolean, String, RecordConsumer)} that takes the cluster from the first segment header. */
    public static Outcome read(Path dir, long afterSequence, boolean repair, RecordConsumer consumer) throws IOException {
        return read(dir, afterSequence, repair, null, consumer);
    }

    /**
     * Reads every record with a sequence above {@code afterSequence}. Records at or below it are framed but not
     * decoded, and a damaged frame among them is passed over (reported in {@link Outcome#skipped}) when the next
     * whole record, or the next segment, is still within what the snapshot covers.
     *
     * @param repair cut a torn tail off the last segment, so the file ends at its last whole record
     * @param clusterId the cluster every segment header must name; null: whichever the first header names
     * @throws CorruptStateException damage, with the file and offset
     * @throws UnreadableStateException a segment of another cluster or of a newer format, or a record whose change
     *         this mcctl does not know, with the file and offset
     */
    public static Outcome read(Path dir, long afterSequence, boolean repair, String clusterId, RecordConsumer consumer) throws IOException {
        Plan plan = plan(dir);
        List<WalSegments.Segment> segments = plan.segments();
        long expected = -1;
        long last = afterSequence;
        long count = 0;
        String cluster = clusterId;
        List<String> skipped = new ArrayList<>();
        for (int s = 0; s < segments.size(); s++) {
            WalSegments.Segment segment = segments.get(s);
            boolean lastSegment = s == segments.size() - 1;
            // The first sequence the next segment holds, minus one: the last this one can hold (unknown for the last).
            long coveredUpTo = lastSegment ? -1 : segments.get(s + 1).firstSequence() - 1;
            if (!lastSegment && coveredUpTo <= afterSequence) {
                continue; // wholly covered: not even opened
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
                if (WalSegmentHeader.startsWithMagic(data)) {
                    WalSegmentHeader header;
                    try {
                        header = WalSegmentHeader.decode(segment.path(), data);
                    } catch (CorruptStateException e) {
                        // The header is written and synced before any record: a torn one ends a log that has nothing after it.
                        if (lastSegment && zerosFrom(data, Math.min(size, WalSegmentHeader.BYTES))) {
                            if (repair) {
                                channel.truncate(0);
                                channel.force(true);
                            }
                            return new Outcome(last, count, segment.path(), 0, skipped);
                        }
                        throw e;
                    }
                    header.check(segment.path(), segment.firstSequence(), cluster);
                    cluster = header.clusterId();
                    offset = header.length();
                }
                data.order(ByteOrder.LITTLE_ENDIAN);
                long limit = plan.limits()[s];
                long epoch = plan.epochs()[s];
                while (offset < size && last < limit && (expected < 0 || expected <= limit)) {
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
                            torn = "frame length " + length;
                        } else if (offset + FrameCodec.HEADER_BYTES + length > size) {
                            torn = "frame of " + length + " bytes runs past the end of the file";
                        } else {
                            byte[] bytes = new byte[length];
                            data.get((int) offset + FrameCodec.HEADER_BYTES, bytes);
                            long end = offset + FrameCodec.HEADER_BYTES + length;
                            next = end;
                            if (FrameCodec.crc(bytes, 0, length) != crc) {
                                // The last record written before a crash; if a whole record follows, it is damage instead.
                                torn = LAST_RECORD_CRC;
                            } else {
                                long peeked = peekSequence(bytes);
                                if (peeked > 0 && peeked <= afterSequence) {
                                    // Covered by the snapshot: only its place in the sequence matters, so skip decoding it.
                                    record = null;
                                    skippedSequence = peeked;
                                } else {
                                    record = decode(bytes, epoch, segment.path(), offset);
                                }
                            }
                        }
                    }
                    if (torn != null) {
                        long due = expected >= 0 ? expected : segment.firstSequence();
                        if (due <= afterSequence) {
                            // Damage among records the snapshot covers: find where the uncovered records go on.
                            // (A segment read at all holds uncovered records, so they must be found again in it.)
                            Found resume = recordAfter(channel, offset + 1, size, due + 1, afterSequence + 1);
                            if (resume != null) {
                                skipped.add(segment.path().getFileName() + " at byte " + offset + ": " + torn + "; records " + due + " to "
                                        + (resume.sequence() - 1) + " passed over (the snapshot covers them)");
                                offset = resume.offset();
                                expected = resume.sequence();
                                continue;
                            }
                        }
                        if (!lastSegment) {
                            throw new CorruptStateException(segment.path(), offset, torn.equals(LAST_RECORD_CRC) ? "record fails its CRC32C"
                                    : torn.startsWith("frame length") ? torn + " is not a record" : torn);
                        }
                        // A crash tears only the end: if a whole record of a later sequence follows, the bad
                        // frame is damage in the middle of acknowledged records, and cutting there would lose them.
                        Found found = recordAfter(channel, offset + 1, size, Math.max(expected, last + 1), Long.MAX_VALUE);
                        long later = found == null ? -1 : found.offset();
                        if (later >= 0) {
                            throw new CorruptStateException(segment.path(), offset, torn.equals(LAST_RECORD_CRC)
                                    ? "record fails its CRC32C (a whole record follows at byte " + later + ")"
                                    : torn + ", yet a whole record follows at byte " + later);
                        }
                        if (repair) {
                            channel.truncate(offset);
                            channel.force(true);
                        }
                        return new Outcome(last, count, segment.path(), offset, skipped);
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
        return new Outcome(last, count, null, -1, skipped, plan.fenced());
    }

    /**
     * Where a follower is in the log: just past record {@code lastSequence}, at byte {@code offset} of the segment
     * starting at {@code segmentFirstSequence} (0: not placed yet, start from the segment holding the next record).
     */
    public record Position(long segmentFirstSequence, long offset, long lastSequence) {
        public static Position after(long sequence) {
            return new Position(0, 0, sequence);
        }
    }

    /** The segment a follower needed was deleted (a snapshot covered it): it must start again from the newest snapshot. */
    public static final class FellBehindException extends IOException {
        public FellBehindException(String message) {
            super(message);
        }
    }

    /**
     * Reads the records appended since {@code from}, for a standby that follows a log another master writes: nothing
     * is changed on disk, and an incomplete or not yet checksummed frame at the end of the newest segment is where
     * the writer is, not damage (it is read again next time). The fencing of {@link #read} applies. Returns where
     * the next call goes on from.
     *
     * @throws FellBehindException when the segment holding the next record is gone
     * @throws CorruptStateException damage before the newest segment's end, with the file and offset
     */
    public static Position follow(Path dir, Position from, String clusterId, RecordConsumer consumer) throws IOException {
        Plan plan = plan(dir);
        List<WalSegments.Segment> segments = plan.segments();
        long last = from.lastSequence();
        int s = 0;
        long offset = from.offset();
        if (from.segmentFirstSequence() == 0) {
            // Not placed: the last segment starting at or before the next record.
            s = -1;
            for (int i = 0; i < segments.size(); i++) {
                if (segments.get(i).firstSequence() <= last + 1) {
                    s = i;
                }
            }
            offset = -1;
        } else {
            while (s < segments.size() && segments.get(s).firstSequence() != from.segmentFirstSequence()) {
                s++;
            }
            if (s == segments.size()) {
                s = -1;
            }
        }
        if (s < 0) {
            if (segments.isEmpty() || (last > 0 && segments.get(0).firstSequence() > last + 1)) {
                if (segments.isEmpty() && from.segmentFirstSequence() == 0) {
                    return from; // no log yet
                }
                throw new FellBehindException("log segment holding record " + (last + 1) + " is gone from " + dir);
            }
            s = 0;
            offset = -1;
        }
        if (plan.limits()[s] < last) {
            // A newer leader took over before records this follower applied: they are a deposed leader's.
            throw new FellBehindException("a newer leader took over the log at record " + plan.limits()[s] + ", before record " + last
                    + " that this follower applied from " + segments.get(s).path().getFileName());
        }
        for (; s < segments.size(); s++) {
            WalSegments.Segment segment = segments.get(s);
            boolean newest = s == segments.size() - 1;
            long limit = plan.limits()[s];
            ByteBuffer data;
            try (FileChannel channel = FileChannel.open(segment.path(), StandardOpenOption.READ)) {
                data = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size()).order(ByteOrder.LITTLE_ENDIAN);
            } catch (java.nio.file.NoSuchFileException e) {
                throw new FellBehindException("log segment " + segment.path().getFileName() + " was deleted while it was followed");
            }
            if (offset < 0) {
                if (!WalSegmentHeader.startsWithMagic(data)) {
                    offset = 0;
                } else {
                    WalSegmentHeader header;
                    try {
                        header = WalSegmentHeader.decode(segment.path(), data);
                    } catch (CorruptStateException e) {
                        if (newest) {
                            return new Position(segment.firstSequence(), -1, last); // the header is being written
                        }
                        throw e;
                    }
                    header.check(segment.path(), segment.firstSequence(), clusterId);
                    offset = header.length();
                }
            }
            int size = data.limit();
            boolean ended = false;
            while (last < limit) {
                if (size - offset < FrameCodec.HEADER_BYTES) {
                    ended = true;
                    break;
                }
                int length = data.getInt((int) offset);
                int crc = data.getInt((int) offset + 4);
                if (length <= 0 || length > FrameCodec.MAX_PAYLOAD || offset + FrameCodec.HEADER_BYTES + length > size) {
                    ended = true; // zeros ahead of the writer, or a frame it is writing
                    break;
                }
                byte[] bytes = new byte[length];
                data.get((int) offset + FrameCodec.HEADER_BYTES, bytes);
                if (FrameCodec.crc(bytes, 0, length) != crc) {
                    ended = true;
                    break;
                }
                long sequence = peekSequence(bytes);
                if (sequence <= last) {
                    offset += FrameCodec.HEADER_BYTES + length; // before where the follower starts (placed by sequence)
                    continue;
                }
                WalRecord record = decode(bytes, plan.epochs()[s], segment.path(), offset);
                if (record.getSequence() != last + 1) {
                    throw new CorruptStateException(segment.path(), offset, "sequence " + record.getSequence() + " where " + (last + 1) + " was due");
                }
                consumer.accept(record, segment.path(), offset);
                last = record.getSequence();
                offset += FrameCodec.HEADER_BYTES + length;
            }
            if (newest) {
                return new Position(segment.firstSequence(), offset, last);
            }
            if (ended && last < limit && segments.get(s + 1).firstSequence() != last + 1) {
                throw new CorruptStateException(segment.path(), offset, "the log goes on at record " + segments.get(s + 1).firstSequence()
                        + " in the next segment but this one ends at record " + last);
            }
            offset = -1;
        }
        return new Position(from.segmentFirstSequence(), from.offset(), last);
    }

    /** A record must carry its segment's leader epoch: one of another epoch is refused, never applied. */
    /** One framed record decoded and checked: a known change kind, of the epoch its segment was written in. */
    private static WalRecord decode(byte[] bytes, long epoch, Path file, long offset) throws IOException {
        WalRecord record;
        try {
            record = WalRecord.parseFrom(bytes);
        } catch (InvalidProtocolBufferException e) {
            throw new CorruptStateException(file, offset, "record does not decode: " + e.getMessage());
        }
        if (record.getChangeCase() == WalRecord.ChangeCase.CHANGE_NOT_SET) {
            throw new UnreadableStateException(file, offset, "record " + record.getSequence()
                    + " holds a change this mcctl does not know (written by a newer mcctl?); upgrade mcctl to read it");
        }
        checkEpoch(record, epoch, file, offset);
        return record;
    }

    private static void checkEpoch(WalRecord record, long segmentEpoch, Path file, long offset) throws IOException {
        if (record.getLeaderEpoch() != segmentEpoch) {
            throw new CorruptStateException(file, offset, "record " + record.getSequence() + " of leader epoch " + record.getLeaderEpoch()
                    + " in a segment of epoch " + segmentEpoch);
        }
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

    /** A whole record found by {@link #recordAfter}. */
    private record Found(long offset, long sequence) {
    }

    /**
     * The first whole frame at or after {@code from} that decodes to a record with a sequence from {@code minSequence}
     * to {@code maxSequence}, or null. A byte-by-byte search: only run on a frame already found bad.
     */
    private static Found recordAfter(FileChannel channel, long from, long size, long minSequence, long maxSequence) throws IOException {
        if (from >= size || size - from > Integer.MAX_VALUE - 16) {
            return null;
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
                if (record.getSequence() >= minSequence && record.getSequence() <= maxSequence) {
                    return new Found(from + at, record.getSequence());
                }
            } catch (InvalidProtocolBufferException e) {
                // not a frame after all
            }
        }
        return null;
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
