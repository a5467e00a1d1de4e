package io.mcctl.master.durability;

import java.nio.file.Path;

/** Master state on disk that cannot be trusted: names the file and the byte offset where it went wrong. */
public final class CorruptStateException extends java.io.IOException {
    private static final long serialVersionUID = 1L;

    private final Path file;
    private final long offset;

    public CorruptStateException(Path file, long offset, String what) {
        super(file + " at byte " + offset + ": " + what);
        this.file = file;
        this.offset = offset;
    }

    public Path file() {
        return file;
    }

    public long offset() {
        return offset;
    }
}
