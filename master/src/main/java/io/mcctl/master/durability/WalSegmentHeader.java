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
 *  20     8   leader epoch: reserved for high availability (the etcd epoch of the writing leader); 0 now
 *  28     1   length of the cluster id in bytes (at most 63)
 *  29    63   cluster id, UTF-8, zero-padded
 *  92     4   CRC32C of bytes 0 to 91
 * </pre>
 *
 * <p>A segment written before the header existed (format 1, "legacy") starts straight with a frame, whose first
 * four bytes are a payload length of at most {@link FrameCodec#MAX_PAYLOAD}; the magic read as such a length is
 * over a billion, so the first four bytes tell the two apart without doubt. Legacy segments are read as they
 * were written, with no cluster to check.
 */
public record WalSegmentHeader(int formatVersion, int minReaderVersion, long firstSequence, long leaderEpoch, String clusterId) {

    public static final int BYTES = 96;
    /** The format this mcctl writes and the newest it reads. */
    public static final int FORMAT_VERSION = 2;
    /** What segments without a header are reported as. */
    public static final int LEGACY_FORMAT_VERSION = 1;
    static final int MAGIC = 0x4C57434D; // "MCWL" read little-endian
    private static final int CLUSTER_ID_BYTES = 63;
    private static final int CRC_AT = 92;

    /** The header of a segment this mcctl writes. */
    public static WalSegmentHeader current(long firstSequence, String clusterId) {
        return new WalSegmentHeader(FORMAT_VERSION, FORMAT_VERSION, firstSequence, 0, clusterId);
    }

    public byte[] encode() {
        byte[] id = clusterId.getBytes(StandardCharsets.UTF_8);
        if (id.length > CLUSTER_ID_BYTES) {
            throw new IllegalArgumentException("cluster id of " + id.length + " bytes: at most " + CLUSTER_ID_BYTES + " fit a log segment header");
        }
        ByteBuffer out = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(MAGIC).putShort((short) formatVersion).putShort((short) minReaderVersion).putInt(BYTES)
                .putLong(firstSequence).putLong(leaderEpoch).put((byte) id.length).put(id);
        out.putInt(CRC_AT, FrameCodec.crc(out.array(), 0, CRC_AT));
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
        byte[] bytes = new byte[BYTES];
        in.get(0, bytes);
        ByteBuffer header = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int formatVersion = header.getShort(4) & 0xffff;
        int minReader = header.getShort(6) & 0xffff;
        // The versions are checked before the checksum: a later format may lay out (and check) its header otherwise.
        if (minReader > FORMAT_VERSION) {
            throw new UnreadableStateException(file, 0, "log segment of format version " + formatVersion + " needs a reader of version "
                    + minReader + " or later; this mcctl reads log format version " + FORMAT_VERSION + " (upgrade mcctl to read it)");
        }
        if (header.getInt(CRC_AT) != FrameCodec.crc(bytes, 0, CRC_AT)) {
            throw new CorruptStateException(file, 0, "segment header fails its CRC32C");
        }
        int length = header.getInt(8);
        int idLength = bytes[28] & 0xff;
        if (length < BYTES || idLength > CLUSTER_ID_BYTES) {
            throw new CorruptStateException(file, 0, "segment header of " + length + " bytes with a cluster id of " + idLength + " bytes");
        }
        String clusterId = new String(Arrays.copyOfRange(bytes, 29, 29 + idLength), StandardCharsets.UTF_8);
        return new WalSegmentHeader(formatVersion, minReader, header.getLong(12), header.getLong(20), clusterId);
    }

    /** The segment's header, or empty for a legacy segment (or an empty file). Reads only; changes nothing. */
    public static Optional<WalSegmentHeader> read(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer start = ByteBuffer.allocate((int) Math.min(channel.size(), BYTES));
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
