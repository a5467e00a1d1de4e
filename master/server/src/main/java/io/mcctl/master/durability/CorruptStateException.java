package io.mcctl.master.durability;

import java.nio.file.Path;

/** Master state on disk that cannot be trusted: names the file and the byte offset where it went wrong. */
public final class CorruptStateException extends StateFileException {
    private static final long serialVersionUID = 1L;

    public CorruptStateException(Path file, long offset, String what) {
        super(file, offset, what);
    }
}
