package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.file.Path;

/** The bytes read at an object's place do not have the CRC32C recorded for it; they are never returned as data. */
public final class ChecksumMismatchException extends IOException {
    private static final long serialVersionUID = 1L;

    private final int actual;

    public ChecksumMismatchException(Path file, long offset, long size, int expected, int actual) {
        super(String.format("object at %s offset %d size %d fails its checksum: CRC32C %08x recorded, %08x read",
                file, offset, size, expected, actual));
        this.actual = actual;
    }

    /** The CRC32C of the bytes read. */
    public int actual() {
        return actual;
    }
}
