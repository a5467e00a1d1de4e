package io.mcctl.tools.snapshot;

import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.WalSegments;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;

/** A master state directory as the offline tools take it: checked to exist and to hold snapshots or log segments. */
public record StateDirectory(Path dir, List<SnapshotFile.Listed> snapshots, List<WalSegments.Segment> segments) {

    /**
     * @throws NoSuchFileException when {@code dir} does not exist
     * @throws IllegalArgumentException when it is not a directory or holds neither snapshots nor log segments
     */
    public static StateDirectory open(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            throw new NoSuchFileException(dir.toString(), null, "no such state directory");
        }
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(dir + " is not a directory: --state-dir takes the master's state directory "
                    + "(default <root>/master); use --snapshot for a snapshot file");
        }
        List<SnapshotFile.Listed> snapshots = SnapshotFile.list(dir);
        List<WalSegments.Segment> segments = WalSegments.list(dir);
        if (snapshots.isEmpty() && segments.isEmpty()) {
            throw new IllegalArgumentException(dir + " holds no snapshot (snapshot-<sequence>.snap) and no log segment (wal-<sequence>.log): "
                    + "is it the master's state directory (default <root>/master)?");
        }
        return new StateDirectory(dir, snapshots, segments);
    }
}
