package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A bucket file that a descriptor names is not there on this node: the shared root is not mounted here, or elsewhere,
 * or the file was deleted ({@link #deleted}).
 */
public final class BucketFileMissingException extends IOException {
    private static final long serialVersionUID = 1L;

    private final Path file;

    public BucketFileMissingException(Path file) {
        this(file, "bucket file " + file + " does not exist on this node: check that the shared filesystem is mounted at "
                + file.toAbsolutePath().getParent() + " (mcctl mount validate)");
    }

    private BucketFileMissingException(Path file, String message) {
        super(message);
        this.file = file;
    }

    /** The file was open here and is gone from its path: deleted under the tier, so what was written into it is lost. */
    public static BucketFileMissingException deleted(Path file) {
        return new BucketFileMissingException(file, "bucket file " + file + " was deleted while this node had it open: what was "
                + "written into it cannot be read by any node (restore the file or restart the master, which creates it empty; "
                + "see mcctl stats)");
    }

    public Path file() {
        return file;
    }
}
