package io.mcctl.tools.snapshot;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.Result;
import io.mcctl.testkit.FileDamage;
import io.mcctl.testkit.StateFixture;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class SnapshotDiffTest {

    @TempDir
    Path root;

    @Test
    void reports_exactly_the_keys_added_removed_and_moved_and_the_buckets_whose_use_changed() throws Exception {
        try (StateFixture state = new StateFixture(root, false)) {
            state.standardState();
            Path a = state.snapshot();
            long[] before = state.pagesPerBucket.clone();

            Placement a1 = state.pages.peek("alpha", "a1").value();
            state.remove("alpha", "a1", a1);
            Placement g1 = state.commit("gamma", "g1", 2 * StateFixture.PAGE, 0x41);
            // Overwrite b1: a new placement, the old one freed (nobody read it).
            Placement oldB1 = state.pages.peek("beta", "b1").value();
            Result<Placement> fresh = state.pages.allocate("beta", "b1", 3 * StateFixture.PAGE, true);
            assertTrue(fresh.isOk(), fresh::toString);
            assertTrue(state.pages.notifySuccess("beta", "b1", fresh.value().withCrc(0x42)).isOk());
            state.pagesPerBucket[oldB1.bucket()] -= 1;
            state.pagesPerBucket[fresh.value().bucket()] += 3;
            Path b = state.snapshot();

            SnapshotDiff.Report diff = SnapshotDiff.diff(a, b);
            assertEquals(List.of("gamma/g1"), names(diff.added()));
            assertEquals(List.of("alpha/a1"), names(diff.removed()));
            assertEquals(List.of("beta/b1"), names(diff.moved()));
            assertTrue(diff.rewritten().isEmpty());
            assertEquals(3, diff.unchanged());
            assertEquals(g1.offset(), diff.added().get(0).after().getOffset());
            assertEquals(0x41, diff.added().get(0).after().getCrc32C());
            SnapshotDiff.Change moved = diff.moved().get(0);
            assertEquals(oldB1.offset(), moved.before().getOffset());
            assertEquals(fresh.value().offset(), moved.after().getOffset());
            assertEquals(3 * StateFixture.PAGE, moved.after().getSize());
            assertArrayEquals(before, diff.a().pagesPerBucket());
            assertArrayEquals(state.pagesPerBucket, diff.b().pagesPerBucket());
            assertFalse(diff.changedBuckets().isEmpty());
            for (SnapshotDiff.BucketChange change : diff.changedBuckets()) {
                assertEquals(before[change.bucket()], change.before());
                assertEquals(state.pagesPerBucket[change.bucket()], change.after());
            }
            assertEquals(1, diff.a().meta().getWalSequence());
            assertEquals(2, diff.b().meta().getWalSequence());
        }
    }

    @Test
    void a_snapshot_against_itself_is_the_same() throws Exception {
        try (StateFixture state = new StateFixture(root, false)) {
            state.standardState();
            Path a = state.snapshot();
            SnapshotDiff.Report diff = SnapshotDiff.diff(a, a);
            assertTrue(diff.same());
            assertEquals(5, diff.unchanged());
        }
    }

    @Test
    void a_corrupt_snapshot_throws_naming_it() throws Exception {
        try (StateFixture state = new StateFixture(root, false)) {
            state.standardState();
            Path a = state.snapshot();
            Path b = state.snapshot();
            SnapshotFile.SectionInfo mappings = SnapshotFile.open(b).info(SnapshotFile.Section.MAPPINGS);
            FileDamage.flipLowestBit(b, mappings.offset() + mappings.length() - 1);
            CorruptStateException e = assertThrows(CorruptStateException.class, () -> SnapshotDiff.diff(a, b));
            assertEquals(b, e.file());
        }
    }

    private static List<String> names(List<SnapshotDiff.Change> changes) {
        return changes.stream().map(c -> c.tenant() + "/" + c.key()).toList();
    }
}
