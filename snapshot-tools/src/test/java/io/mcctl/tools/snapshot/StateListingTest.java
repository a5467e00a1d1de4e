package io.mcctl.tools.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.testkit.StateFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class StateListingTest {

    @TempDir
    Path root;

    @Test
    void lists_snapshots_newest_first_and_segments_with_their_records() throws Exception {
        Path older;
        Path newer;
        try (StateFixture state = new StateFixture(root, true)) {
            state.commit("t", "k1", 1, 1);
            older = state.snapshot();
            state.standardState();
            newer = state.snapshot();
            state.durable();
        }
        StateListing.Listing listing = StateListing.list(root.resolve("master"));
        assertEquals(List.of(newer, older), listing.snapshots().stream().map(StateListing.SnapshotEntry::file).toList());
        StateListing.SnapshotEntry first = listing.snapshots().get(0);
        assertEquals(19, first.walSequence());
        assertEquals(6, first.meta().getMappings());
        assertEquals(Files.size(newer), first.bytes());
        assertNull(first.unreadable());
        assertEquals(2, listing.snapshots().get(1).meta().getWalSequence());

        assertEquals(1, listing.segments().size());
        StateListing.SegmentEntry segment = listing.segments().get(0);
        assertEquals(1, segment.firstSequence());
        assertEquals(19, segment.records());
        assertEquals(19, segment.lastSequence());
        assertEquals(StateListing.SegmentStatus.OK, segment.status());
    }

    @Test
    void a_snapshot_that_does_not_open_is_listed_with_the_reason() throws Exception {
        Path dir = Files.createDirectories(root.resolve("state"));
        Path good = StateFixture.writeSnapshot(dir, 4, List.of(StateFixture.mapping("t", "k", 0, 0, 1)), List.of(), List.of());
        Path bad = dir.resolve(SnapshotFile.fileName(7));
        Files.write(bad, java.util.Arrays.copyOf(Files.readAllBytes(good), 40));
        StateListing.Listing listing = StateListing.list(dir);
        assertEquals(2, listing.snapshots().size());
        StateListing.SnapshotEntry broken = listing.snapshots().get(0);
        assertEquals(bad, broken.file());
        assertNull(broken.meta());
        assertTrue(broken.unreadable().contains("footer magic missing"), broken.unreadable());
        assertEquals(1, listing.snapshots().get(1).meta().getMappings());
        assertTrue(listing.segments().isEmpty());
    }
}
