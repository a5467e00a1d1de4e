package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.file.Path;

/** A bucket file that a descriptor names is not there on this node: the shared root is not mounted here, or elsewhere. */
public final class BucketFileMissingException extends IOException {
    private static final long serialVersionUID = 1L;

    private final Path file;

    public BucketFileMissingException(Path file) {
        super("bucket file " + file + " does not exist on this node: check that the shared filesystem is mounted at "
                + file.toAbsolutePath().getParent() + " (mcctl mount validate)");
        this.file = file;
    }

    public Path file() {
        return file;
    }
}
