package io.mcctl.master.durability;

import java.nio.file.Path;

/**
 * State this mcctl must not read, though it may be whole: another cluster's, or written by a newer mcctl (a format
 * version it cannot read, a change it does not know). Never a reason to cut or discard the file: another mcctl,
 * or the right cluster, reads it.
 */
public final class UnreadableStateException extends StateFileException {
    private static final long serialVersionUID = 1L;

    public UnreadableStateException(Path file, long offset, String what) {
        super(file, offset, what);
    }
}
