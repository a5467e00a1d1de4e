package io.mcctl.master.durability;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * A record on disk: a 4-byte little-endian payload length, the payload's 4-byte CRC32C, then the
 * payload (a serialized protobuf message). A torn write shows as a frame that runs past the end of
 * the file or whose checksum does not match.
 */
public final class FrameCodec {

    public static final int HEADER_BYTES = 8;
    /** Larger frames are corruption, not records: no state change is near this size. */
    public static final int MAX_PAYLOAD = 16 << 20;

    private FrameCodec() {
    }

    public static int crc(byte[] payload, int offset, int length) {
        CRC32C crc = new CRC32C();
        crc.update(payload, offset, length);
        return (int) crc.getValue();
    }

    /**
     * Fills in the header of a frame whose payload, {@code payloadLength} bytes, follows the header's room at
     * {@code frame} in {@code out} (a heap buffer).
     */
    public static void putHeader(ByteBuffer out, int frame, int payloadLength) {
        out.order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(frame, payloadLength);
        out.putInt(frame + 4, crc(out.array(), out.arrayOffset() + frame + HEADER_BYTES, payloadLength));
    }

    /** Writes the frame header for {@code payload} into {@code out} at its position. */
    public static void putHeader(ByteBuffer out, byte[] payload) {
        out.order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(payload.length);
        out.putInt(crc(payload, 0, payload.length));
    }
}
