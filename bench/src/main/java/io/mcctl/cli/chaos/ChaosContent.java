package io.mcctl.cli.chaos;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * The bytes a chaos write writes: its tag, then a pattern drawn from the tag, cut to the object's size, so that a read
 * names the write it came from (by CRC32C and size; the tag itself where the object is long enough to hold it).
 */
public final class ChaosContent {

    private ChaosContent() {
    }

    public static byte[] of(String tag, int size) {
        byte[] data = new byte[size];
        byte[] head = (tag + "|").getBytes(StandardCharsets.UTF_8);
        System.arraycopy(head, 0, data, 0, Math.min(head.length, size));
        SplittableRandom random = new SplittableRandom(tag.hashCode() * 0x9E3779B97F4A7C15L);
        for (int i = head.length; i < size; i++) {
            data[i] = (byte) random.nextInt(256);
        }
        return data;
    }

    public static String crc(byte[] data, int offset, int length) {
        CRC32C crc = new CRC32C();
        crc.update(data, offset, length);
        return String.format("%08x", crc.getValue());
    }

    public static String crc(java.nio.ByteBuffer data) {
        CRC32C crc = new CRC32C();
        crc.update(data.duplicate());
        return String.format("%08x", crc.getValue());
    }
}
