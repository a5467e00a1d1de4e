package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.StateLock;
import io.mcctl.master.durability.StateRecovery;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.durability.WriteAheadLog;
import io.mcctl.master.proto.v1.Removed;
import io.mcctl.master.proto.v1.WalRecord;
import io.mcctl.storage.layout.LayoutFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class SnapshotRecoverCommandTest {

    @TempDir
    Path work;

    private static List<Path> asideFolders(Path dir) throws Exception {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.getFileName().toString().startsWith("damaged-")).toList();
        }
    }

    @Test
    void a_corrupt_record_in_the_log_is_reported_by_a_dry_run_and_cut_with_the_flag() throws Exception {
        SnapshotCommandsTest.State state = new SnapshotCommandsTest.State(work.resolve("root")).standard();
        state.stop();
        io.mcctl.storage.layout.BucketFiles.initialise(state.layout); // as the master lays them out, for the fsck at the end
        Path segment = state.segment();
        long frame = SnapshotCommandsTest.frameOffsets(segment).get(6);
        SnapshotCommandsTest.flipByte(segment, frame + 12);
        assertThrows(CorruptStateException.class, () -> StateRecovery.recover(state.dir, state.layout, true));
        byte[] damaged = Files.readAllBytes(segment);
        Map<String, String> before = StateOwnershipProcessTest.listing(state.dir);

        CliRun dry = CliRun.run("snapshot", "recover", "--state-dir", state.dir()).expectExit(ExitCodes.CORRUPT);
        assertTrue(dry.out().contains("would lose: log cut at " + segment.getFileName() + " byte " + frame
                + " (record fails its CRC32C (a whole record follows at byte"), dry.out());
        assertTrue(dry.out().contains("every record after 6 in it is lost"), dry.out());
        assertEquals(before, StateOwnershipProcessTest.listing(state.dir), "a dry run changes nothing");

        try (StateLock master = StateLock.acquire(state.dir)) {
            Map<String, String> held = StateOwnershipProcessTest.listing(state.dir);
            CliRun refused = CliRun.run("snapshot", "recover", "--state-dir", state.dir(), "--discard-damaged").expectExit(ExitCodes.IN_USE);
            assertTrue(refused.err().contains("is held by pid " + ProcessHandle.current().pid()), refused.err());
            assertEquals(held, StateOwnershipProcessTest.listing(state.dir), "refused while held: nothing changed");
        }

        CliRun done = CliRun.run("snapshot", "recover", "--state-dir", state.dir(), "--discard-damaged").expectOk();
        assertTrue(done.out().contains("lost: log cut at " + segment.getFileName() + " byte " + frame), done.out());
        assertTrue(done.out().lines().anyMatch(line -> line.startsWith("fsck: ") && line.contains("clean")), done.out());
        List<Path> aside = asideFolders(state.dir);
        assertEquals(1, aside.size());
        assertTrue(java.util.Arrays.equals(damaged, Files.readAllBytes(aside.get(0).resolve(segment.getFileName()))),
                "the segment is kept whole beside the state");
        assertEquals(frame, Files.size(segment), "the log ends where the bad record began");
        assertEquals(6, StateRecovery.recover(state.dir, state.layout, true).lastSequence);
    }

    @Test
    void a_corrupt_newest_snapshot_whose_log_is_gone_is_named_first_and_set_aside_with_the_log_it_cannot_replay() throws Exception {
        SnapshotCommandsTest.State state = new SnapshotCommandsTest.State(work.resolve("root")).standard();
        Path snapshot = state.snapshot();
        long covered = state.wal.lastAppended();
        state.stop();
        // The master that took the snapshot pruned the log it covers and went on in a new segment.
        String cluster = LayoutFile.read(state.layout.layoutFile()).clusterId();
        try (WriteAheadLog wal = new WriteAheadLog(state.dir, cluster, covered, 1 << 20, System::currentTimeMillis)) {
            wal.append(WalRecord.newBuilder().setRemoved(Removed.newBuilder().setTenantId("alpha").setKey("a1")));
            wal.whenDurable().get();
        }
        Files.delete(WalSegments.list(state.dir).get(0).path());
        SnapshotCommandsTest.flipByte(snapshot, 40);

        CorruptStateException refusal = assertThrows(CorruptStateException.class, () -> StateRecovery.recover(state.dir, state.layout, true));
        assertTrue(refusal.getMessage().startsWith(snapshot + " at byte "), refusal.getMessage());
        assertTrue(refusal.getMessage().contains("and the older snapshots and log cannot stand in for it"), refusal.getMessage());

        CliRun done = CliRun.run("snapshot", "recover", "--state-dir", state.dir(), "--discard-damaged");
        assertEquals(ExitCodes.OK, done.exitCode(), done.out() + done.err());
        assertTrue(done.out().contains("lost: snapshot " + snapshot.getFileName() + " set aside: corrupt"), done.out());
        assertTrue(done.out().contains("lost: log segment " + WalSegments.fileName(covered + 1) + " set aside whole"), done.out());
        Path aside = asideFolders(state.dir).get(0);
        assertTrue(Files.exists(aside.resolve(snapshot.getFileName())) && Files.exists(aside.resolve(WalSegments.fileName(covered + 1))));
        assertTrue(done.out().contains("fsck: nothing left to check"), done.out());
        assertEquals(0, StateRecovery.recover(state.dir, state.layout, true).mappings().size(), "what is left recovers (empty)");
    }
}
