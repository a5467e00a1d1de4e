package io.mcctl.master.durability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.proto.v1.WalRecord;
import io.mcctl.master.service.Change;
import io.mcctl.master.service.ChangeLog;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two leaders' logs in one state directory, as a paused leader that wakes after a newer one took over leaves them:
 * what the older epoch appended after the newer one's fence, in its own segment or a new one, is never replayed nor
 * followed; records carry their segment's epoch; and a leader past its lease appends nothing.
 */
@Timeout(30)
class WalFencingTest {

    @TempDir
    Path dir;

    private static void quota(WriteAheadLog wal, long bytes) throws Exception {
        wal.append(ChangeCodec.encode(new Change.QuotaSet("t", bytes)));
        wal.whenDurable().get(10, TimeUnit.SECONDS);
    }

    private static List<String> replay(Path dir) throws Exception {
        List<String> seen = new ArrayList<>();
        WalReader.read(dir, 0, false, "c", (record, file, offset) -> seen.add(describe(record)));
        return seen;
    }

    private static String describe(WalRecord record) {
        return record.getSequence() + "@" + record.getLeaderEpoch() + "=" + record.getQuotaSet().getMaxBytes();
    }

    @Test
    void records_appended_under_a_lease_that_lapses_before_their_fsync_is_answered_are_never_answered_ok() throws Exception {
        AtomicBoolean leaseHeld = new AtomicBoolean(true);
        WriteAheadLog wal = new WriteAheadLog(dir, "c", 0, 1 << 20, System::currentTimeMillis, 5, WalSegmentHeader.Fence.NONE, leaseHeld::get);
        quota(wal, 1); // answered OK while the lease holds
        wal.append(ChangeCodec.encode(new Change.QuotaSet("t", 2)));
        wal.append(ChangeCodec.encode(new Change.QuotaSet("t", 3)));
        // The lease's deadline passes with the group written or not yet: whenever the fsync completes, it is after it.
        leaseHeld.set(false);
        for (int waiter = 0; waiter < 2; waiter++) {
            java.util.concurrent.ExecutionException refused = assertThrows(java.util.concurrent.ExecutionException.class,
                    () -> wal.whenDurable().get(10, TimeUnit.SECONDS));
            assertTrue(refused.getCause().getMessage().contains("lost its leader lease"), refused.getCause().getMessage());
        }
        wal.close();
        // The records did reach the log (their outcome was unknown to their callers, never OK): a newer leader decides.
        assertEquals(List.of("1@5=1", "2@5=2", "3@5=3"), replay(dir));
    }

    @Test
    void what_a_deposed_leader_appends_after_the_new_leaders_fence_is_never_replayed_or_followed() throws Exception {
        WriteAheadLog old = new WriteAheadLog(dir, "c", 0, 1 << 20, System::currentTimeMillis, 5, WalSegmentHeader.Fence.NONE, () -> true);
        quota(old, 1);
        quota(old, 2);
        quota(old, 3);
        // A standby of epoch 9 took over after record 3 while the old leader was paused.
        WriteAheadLog next = new WriteAheadLog(dir, "c", 3, 1 << 20, System::currentTimeMillis, 9,
                new WalSegmentHeader.Fence(5, 3, 1, 0), () -> true);
        quota(next, 4);
        // The old leader wakes and appends to its segment, then rolls to one of its own.
        quota(old, 666);
        quota(old, 667);
        old.close();
        WriteAheadLog oldRolled = new WriteAheadLog(dir, "c", 20, 1 << 20, System::currentTimeMillis, 5, WalSegmentHeader.Fence.NONE, () -> true);
        quota(oldRolled, 668);
        oldRolled.close();
        quota(next, 5);
        next.close();

        assertEquals(List.of("1@5=1", "2@5=2", "3@5=3", "4@9=4", "5@9=5"), replay(dir));
        WalReader.Outcome outcome = WalReader.read(dir, 0, false, "c", (record, file, offset) -> { });
        assertEquals(1, outcome.fenced().size(), outcome.fenced().toString());

        List<String> followed = new ArrayList<>();
        WalReader.Position at = WalReader.follow(dir, WalReader.Position.after(0), "c", (record, file, offset) -> followed.add(describe(record)));
        assertEquals(List.of("1@5=1", "2@5=2", "3@5=3", "4@9=4", "5@9=5"), followed);
        assertEquals(5, at.lastSequence());
    }

    @Test
    void a_follower_that_applied_records_past_a_newer_leaders_fence_starts_again() throws Exception {
        WriteAheadLog old = new WriteAheadLog(dir, "c", 0, 1 << 20, System::currentTimeMillis, 5, WalSegmentHeader.Fence.NONE, () -> true);
        quota(old, 1);
        quota(old, 2);
        WalReader.Position at = WalReader.follow(dir, WalReader.Position.after(0), "c", (record, file, offset) -> { });
        assertEquals(2, at.lastSequence());
        old.close();
        WriteAheadLog next = new WriteAheadLog(dir, "c", 1, 1 << 20, System::currentTimeMillis, 9, new WalSegmentHeader.Fence(5, 1, 1, 0), () -> true);
        next.close();
        assertThrows(WalReader.FellBehindException.class, () -> WalReader.follow(dir, at, "c", (record, file, offset) -> { }));
    }

    @Test
    void a_record_of_another_epoch_than_its_segment_is_refused() throws Exception {
        WriteAheadLog wal = new WriteAheadLog(dir, "c", 0, 1 << 20, System::currentTimeMillis, 5, WalSegmentHeader.Fence.NONE, () -> true);
        quota(wal, 1);
        wal.close();
        // The header rewritten to another epoch: its records no longer match it.
        Path segment = dir.resolve(WalSegments.fileName(1));
        byte[] bytes = Files.readAllBytes(segment);
        byte[] header = WalSegmentHeader.leader(1, "c", 6, WalSegmentHeader.Fence.NONE).encode();
        System.arraycopy(header, 0, bytes, 0, header.length);
        Files.write(segment, bytes);
        CorruptStateException e = assertThrows(CorruptStateException.class, () -> replay(dir));
        assertTrue(e.getMessage().contains("epoch 5 in a segment of epoch 6"), e.getMessage());
    }

    @Test
    void a_leader_past_its_lease_appends_nothing_and_creates_no_segment() throws Exception {
        AtomicBoolean leased = new AtomicBoolean(true);
        WriteAheadLog wal = new WriteAheadLog(dir, "c", 0, 1 << 20, System::currentTimeMillis, 5, WalSegmentHeader.Fence.NONE, leased::get);
        quota(wal, 1);
        leased.set(false);
        assertThrows(ChangeLog.Refused.class, () -> wal.append(ChangeCodec.encode(new Change.QuotaSet("t", 2))));
        wal.close();
        assertEquals(List.of("1@5=1"), replay(dir));
        Path before = dir.resolve(WalSegments.fileName(2));
        assertThrows(java.io.IOException.class, () -> new WriteAheadLog(dir, "c", 1, 1 << 20, System::currentTimeMillis, 5,
                WalSegmentHeader.Fence.NONE, () -> false));
        assertFalse(Files.exists(before));
        assertTrue(WalSegmentHeader.read(dir.resolve(WalSegments.fileName(1))).orElseThrow().leaderEpoch() == 5);
    }

    @Test
    void the_empty_segment_of_a_leader_that_stopped_before_its_first_record_is_replaced_by_the_next_leader() throws Exception {
        WriteAheadLog old = new WriteAheadLog(dir, "c", 0, 1 << 20, System::currentTimeMillis, 5, WalSegmentHeader.Fence.NONE, () -> true);
        old.close(); // handed over (or died) before it logged anything: its segment holds a header and no record
        WriteAheadLog next = new WriteAheadLog(dir, "c", 0, 1 << 20, System::currentTimeMillis, 9, WalSegmentHeader.Fence.NONE, () -> true);
        quota(next, 4);
        next.close();
        assertEquals(9, WalSegmentHeader.read(dir.resolve(WalSegments.fileName(1))).orElseThrow().leaderEpoch());
        assertEquals(List.of("1@9=4"), replay(dir));
    }

    @Test
    void a_leader_of_an_older_epoch_never_replaces_a_newer_leaders_segment_even_an_empty_one() throws Exception {
        WriteAheadLog newer = new WriteAheadLog(dir, "c", 0, 1 << 20, System::currentTimeMillis, 9, WalSegmentHeader.Fence.NONE, () -> true);
        newer.close();
        CorruptStateException refused = assertThrows(CorruptStateException.class, () -> new WriteAheadLog(dir, "c", 0, 1 << 20,
                System::currentTimeMillis, 5, WalSegmentHeader.Fence.NONE, () -> true));
        assertTrue(refused.getMessage().contains("epoch 9, newer than this one of epoch 5"), refused.getMessage());
        assertEquals(9, WalSegmentHeader.read(dir.resolve(WalSegments.fileName(1))).orElseThrow().leaderEpoch());
    }
}
