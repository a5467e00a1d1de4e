package io.mcctl.testkit;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;

/** Damage done to a file on purpose, as a bad disk or a torn write would leave it, for tests of what reads it. */
public final class FileDamage {

    private FileDamage() {
    }

    /** Inverts every bit of the byte at {@code offset}. */
    public static void invertByte(Path file, long offset) throws IOException {
        xorByte(file, offset, 0xFF);
    }

    /** Flips the lowest bit of the byte at {@code offset}: the smallest change a checksum must still catch. */
    public static void flipLowestBit(Path file, long offset) throws IOException {
        xorByte(file, offset, 0x01);
    }

    private static void xorByte(Path file, long offset, int mask) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(offset);
            int b = raf.read();
            raf.seek(offset);
            raf.write(b ^ mask);
        }
    }

    /** Cuts the file to {@code size} bytes, as a write cut short by a crash leaves it. */
    public static void truncate(Path file, long size) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(size);
        }
    }
}
