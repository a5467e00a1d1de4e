package io.mcctl.master.durability;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Optional;

/**
 * The fixed header every write-ahead log segment starts with (format 2 on), little-endian, {@link #BYTES} long:
 *
 * <pre>
 *  offset size
 *   0     4   magic "MCWL"
 *   4     2   format version of the writer
 *   6     2   minimum format version a reader must read to read this segment
 *   8     4   header length ({@link #BYTES}), so a later format can grow it
 *  12     8   sequence of the segment's first record (also in its name)
 *  20     8   leader epoch: the etcd epoch of the writing leader under high availability, 0 without
 *  28     1   length of the cluster id in bytes (at most 63)
 *  29    63   cluster id, UTF-8, zero-padded
 *  92     4   CRC32C of bytes 0 to 91 (format 2)
 * </pre>
 *
 * <p>Format 3, written by a leader under high availability ({@link #FENCED_BYTES} long, minimum reader 3), puts its
 * {@link Fence} where format 2 has its CRC32C: 92 the epoch it took over from (8), 100 the last record of that epoch
 * it applied (8), 108 the first sequence of the segment that record is in (8), 116 the byte offset just past that
 * record (8), then 124 the CRC32C of bytes 0 to 123. A reader keeps records of an older epoch only up to the fence
 * of the first later segment of a newer epoch, and reads no segment whose epoch is older than one before it: what a
 * deposed leader appends after a newer leader took over is never replayed (docs/durability.md).
 *
 * <p>A segment written before the header existed (format 1, "legacy") starts straight with a frame, whose first
 * four bytes are a payload length of at most {@link FrameCodec#MAX_PAYLOAD}; the magic read as such a length is
 * over a billion, so the first four bytes tell the two apart without doubt. Legacy segments are read as they
 * were written, with no cluster to check.
 */
public record WalSegmentHeader(int formatVersion, int minReaderVersion, long firstSequence, long leaderEpoch, String clusterId,
                               Fence fence) {

    /**
     * Where a leader took over: the last record of epoch {@code epoch} that it applied ({@code sequence}), in the
     * segment starting at {@code segmentFirstSequence}, ending at byte {@code endOffset}. Records of older epochs
     * after it are a deposed leader's and are never replayed. {@link #NONE} for the first epoch of a log.
     */
    public record Fence(long epoch, long sequence, long segmentFirstSequence, long endOffset) {
        public static final Fence NONE = new Fence(0, 0, 0, 0);
    }

    /** A segment header without high availability (format 2). */
    public WalSegmentHeader(int formatVersion, int minReaderVersion, long firstSequence, long leaderEpoch, String clusterId) {
        this(formatVersion, minReaderVersion, firstSequence, leaderEpoch, clusterId, Fence.NONE);
    }

    public static final int BYTES = 96;
    /** Length of a format 3 header: a leader's, with its fence. */
    public static final int FENCED_BYTES = 128;
    /** The newest format this mcctl reads (and writes, under high availability). */
    public static final int FORMAT_VERSION = 3;
    /** The format written without high availability, readable by mcctl from before it. */
    public static final int PLAIN_FORMAT_VERSION = 2;
    /** What segments without a header are reported as. */
    public static final int LEGACY_FORMAT_VERSION = 1;
    static final int MAGIC = 0x4C57434D; // "MCWL" read little-endian
    private static final int CLUSTER_ID_BYTES = 63;
    private static final int CRC_AT = 92;
    private static final int FENCED_CRC_AT = 124;

    /** The header of a segment this mcctl writes without high availability. */
    public static WalSegmentHeader current(long firstSequence, String clusterId) {
        return new WalSegmentHeader(PLAIN_FORMAT_VERSION, PLAIN_FORMAT_VERSION, firstSequence, 0, clusterId);
    }

    /** The header of a segment a leader of {@code epoch} writes, taking over at {@code fence}. */
    public static WalSegmentHeader leader(long firstSequence, String clusterId, long epoch, Fence fence) {
        if (epoch <= 0) {
            return current(firstSequence, clusterId);
        }
        return new WalSegmentHeader(FORMAT_VERSION, FORMAT_VERSION, firstSequence, epoch, clusterId, fence);
    }

    /** Bytes of this header in front of the first record. */
    public int length() {
        return formatVersion >= FORMAT_VERSION ? FENCED_BYTES : BYTES;
    }

    public byte[] encode() {
        byte[] id = clusterId.getBytes(StandardCharsets.UTF_8);
        if (id.length > CLUSTER_ID_BYTES) {
            throw new IllegalArgumentException("cluster id of " + id.length + " bytes: at most " + CLUSTER_ID_BYTES + " fit a log segment header");
        }
        int length = length();
        ByteBuffer out = ByteBuffer.allocate(length).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(MAGIC).putShort((short) formatVersion).putShort((short) minReaderVersion).putInt(length)
                .putLong(firstSequence).putLong(leaderEpoch).put((byte) id.length).put(id);
        int crcAt = CRC_AT;
        if (length == FENCED_BYTES) {
            out.putLong(CRC_AT, fence.epoch()).putLong(CRC_AT + 8, fence.sequence()).putLong(CRC_AT + 16, fence.segmentFirstSequence())
                    .putLong(CRC_AT + 24, fence.endOffset());
            crcAt = FENCED_CRC_AT;
        }
        out.putInt(crcAt, FrameCodec.crc(out.array(), 0, crcAt));
        return out.array();
    }

    /** Whether {@code data} (a segment's bytes from its start) begins with the header's magic. */
    static boolean startsWithMagic(ByteBuffer data) {
        return data.limit() >= 4 && data.order(ByteOrder.LITTLE_ENDIAN).getInt(0) == MAGIC;
    }

    /**
     * Decodes the header at the start of {@code data}, which {@link #startsWithMagic} said has one.
     *
     * @throws CorruptStateException when it is cut short or fails its CRC32C
     * @throws UnreadableStateException when it is of a format this mcctl cannot read
     */
    static WalSegmentHeader decode(Path file, ByteBuffer data) throws IOException {
        ByteBuffer in = data.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (in.limit() < BYTES) {
            throw new CorruptStateException(file, 0, "segment header cut short: " + in.limit() + " of " + BYTES + " bytes");
        }
        int formatVersion = in.getShort(4) & 0xffff;
        int minReader = in.getShort(6) & 0xffff;
        int declared = minReader <= FORMAT_VERSION && formatVersion >= FORMAT_VERSION ? FENCED_BYTES : BYTES;
        if (in.limit() < declared) {
            throw new CorruptStateException(file, 0, "segment header cut short: " + in.limit() + " of " + declared + " bytes");
        }
        byte[] bytes = new byte[declared];
        in.get(0, bytes);
        ByteBuffer header = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int crcAt = declared == FENCED_BYTES ? FENCED_CRC_AT : CRC_AT;
        // The versions are checked before the checksum: a later format may lay out (and check) its header otherwise.
        if (minReader > FORMAT_VERSION) {
            throw new UnreadableStateException(file, 0, "log segment of format version " + formatVersion + " needs a reader of version "
                    + minReader + " or later; this mcctl reads log format version " + FORMAT_VERSION + " (upgrade mcctl to read it)");
        }
        if (header.getInt(crcAt) != FrameCodec.crc(bytes, 0, crcAt)) {
            throw new CorruptStateException(file, 0, "segment header fails its CRC32C");
        }
        int length = header.getInt(8);
        int idLength = bytes[28] & 0xff;
        if (length != declared || idLength > CLUSTER_ID_BYTES) {
            throw new CorruptStateException(file, 0, "segment header of " + length + " bytes with a cluster id of " + idLength + " bytes");
        }
        String clusterId = new String(Arrays.copyOfRange(bytes, 29, 29 + idLength), StandardCharsets.UTF_8);
        Fence fence = declared == FENCED_BYTES
                ? new Fence(header.getLong(CRC_AT), header.getLong(CRC_AT + 8), header.getLong(CRC_AT + 16), header.getLong(CRC_AT + 24))
                : Fence.NONE;
        return new WalSegmentHeader(formatVersion, minReader, header.getLong(12), header.getLong(20), clusterId, fence);
    }

    /** The segment's header, or empty for a legacy segment (or an empty file). Reads only; changes nothing. */
    public static Optional<WalSegmentHeader> read(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer start = ByteBuffer.allocate((int) Math.min(channel.size(), FENCED_BYTES));
            while (start.hasRemaining() && channel.read(start, start.position()) > 0) {
                // read on
            }
            start.flip();
            return startsWithMagic(start) ? Optional.of(decode(file, start)) : Optional.empty();
        }
    }

    /** Refuses a header from another cluster, or whose first sequence is not the one its file name gives. */
    void check(Path file, long firstSequenceByName, String expectedClusterId) throws IOException {
        if (firstSequence != firstSequenceByName) {
            throw new CorruptStateException(file, 0, "segment header says its first record is " + firstSequence + " but its name says "
                    + firstSequenceByName);
        }
        if (expectedClusterId != null && !expectedClusterId.equals(clusterId)) {
            throw new UnreadableStateException(file, 0, "log segment belongs to cluster " + clusterId + ", not to cluster "
                    + expectedClusterId + " of this state (another cluster's log was copied in?)");
        }
    }
}
