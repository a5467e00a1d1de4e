package io.mcctl.master.durability;

import io.mcctl.master.proto.v1.SnapshotMeta;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Which cluster a state directory's files belong to: each snapshot's meta and each log segment's header name it.
 * A master refuses a state directory of another cluster than its root's, before it lays out or changes anything.
 */
public final class StateCluster {

    private StateCluster() {
    }

    /**
     * The cluster the state directory's newest readable snapshot or first log segment with a header names, if any.
     * Files that cannot be read are left to recovery, which names what is wrong with them.
     */
    public static Optional<String> of(Path stateDir) throws IOException {
        for (SnapshotFile.Listed listed : SnapshotFile.list(stateDir)) {
            Optional<String> id = snapshotCluster(listed.path());
            if (id.isPresent()) {
                return id;
            }
        }
        for (WalSegments.Segment segment : WalSegments.list(stateDir)) {
            Optional<String> id = segmentCluster(segment.path());
            if (id.isPresent()) {
                return id;
            }
        }
        return Optional.empty();
    }

    /**
     * Refuses a state directory with a snapshot or log segment of another cluster than {@code clusterId} (the root's
     * layout record's, named by {@code layoutFile}); {@code clusterId} null means the root has no layout yet, and then
     * any state of a cluster is refused.
     *
     * @throws UnreadableStateException naming the file, its cluster and the root's
     */
    public static void require(Path stateDir, String clusterId, Path layoutFile) throws IOException {
        for (SnapshotFile.Listed listed : SnapshotFile.list(stateDir)) {
            refuseOther(listed.path(), snapshotCluster(listed.path()), clusterId, layoutFile);
        }
        for (WalSegments.Segment segment : WalSegments.list(stateDir)) {
            refuseOther(segment.path(), segmentCluster(segment.path()), clusterId, layoutFile);
        }
    }

    private static void refuseOther(Path file, Optional<String> found, String clusterId, Path layoutFile) throws IOException {
        if (found.isEmpty() || found.get().equals(clusterId)) {
            return;
        }
        throw new UnreadableStateException(file, 0, "belongs to cluster " + found.get() + ", but "
                + (clusterId == null ? layoutFile + " does not exist yet (a new root)" : layoutFile + " is of cluster " + clusterId)
                + ": this state directory is another cluster's; use that cluster's root, or another --state-dir");
    }

    private static Optional<String> snapshotCluster(Path snapshot) {
        try {
            SnapshotMeta meta = SnapshotFile.open(snapshot).meta();
            return meta.getClusterId().isEmpty() ? Optional.empty() : Optional.of(meta.getClusterId());
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    private static Optional<String> segmentCluster(Path segment) {
        try {
            return WalSegmentHeader.read(segment).map(WalSegmentHeader::clusterId);
        } catch (IOException e) {
            return Optional.empty();
        }
    }
}
