package io.mcctl.master.ha;

import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.storage.io.DurableFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.format.DateTimeFormatter;

/**
 * The operator's way out when the shared state cannot be read by any candidate ({@code --ha-start-empty}, off by
 * default): every snapshot and log segment is moved (never deleted) into {@code unreadable-<time>/} of the state
 * directory, so the master starts with every page free. docs/ha.md says the cost.
 */
final class StartEmpty {

    private StartEmpty() {
    }

    static Path moveAside(Path stateDir, String why) throws IOException {
        String stamp = DateTimeFormatter.ISO_INSTANT.format(Instant.now()).replace(':', '-');
        Path aside = stateDir.resolve("unreadable-" + stamp);
        Files.createDirectories(aside);
        for (SnapshotFile.Listed snapshot : SnapshotFile.list(stateDir)) {
            Files.move(snapshot.path(), aside.resolve(snapshot.path().getFileName()));
        }
        for (WalSegments.Segment segment : WalSegments.list(stateDir)) {
            Files.move(segment.path(), aside.resolve(segment.path().getFileName()));
        }
        Files.writeString(aside.resolve("README.txt"), "moved aside by mcctl master start --ha-start-empty at " + Instant.now()
                + " because the state could not be read: " + why + "\n");
        DurableFiles.fsyncDirectory(aside);
        DurableFiles.fsyncDirectory(stateDir);
        return aside;
    }
}
