package io.mcctl.master.durability;

import java.nio.file.Path;

/** A file of master state that recovery cannot use: names the file and the byte offset where it went wrong. */
public abstract class StateFileException extends java.io.IOException {
    private static final long serialVersionUID = 1L;

    private final Path file;
    private final long offset;
    private final String what;

    protected StateFileException(Path file, long offset, String what) {
        super(file + " at byte " + offset + ": " + what);
        this.file = file;
        this.offset = offset;
        this.what = what;
    }

    public Path file() {
        return file;
    }

    public long offset() {
        return offset;
    }

    /** What is wrong, without the file and offset. */
    public String what() {
        return what;
    }
}
