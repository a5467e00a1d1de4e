package io.mcctl.tools.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.proto.v1.WalRecord;
import io.mcctl.testkit.FileDamage;
import io.mcctl.testkit.StateFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class WalDumpTest {

    @TempDir
    Path root;

    Path segment;

    /** The standard state's 17 records: allocated/committed pairs, two removals, one allocation left in flight. */
    Path logged() throws Exception {
        try (StateFixture state = new StateFixture(root, true)) {
            state.standardState();
            state.durable();
            segment = state.segment();
        }
        return root.resolve("master");
    }

    @Test
    void shows_every_record_in_order_with_its_change() throws Exception {
        Path dir = logged();
        List<WalRecord> records = new ArrayList<>();
        WalDump.Result result = WalDump.dump(dir, 1, (r, f, o) -> records.add(r));
        assertEquals(17, result.records());
        assertEquals(17, result.lastSequence());
        assertFalse(result.torn());
        assertNull(result.corruption());
        List<String> changes = records.stream().map(WalDump::change).toList();
        assertEquals(List.of("allocated", "committed", "allocated", "committed", "allocated", "committed", "allocated", "committed",
                "removed", "allocated", "committed", "removed", "allocated", "committed", "allocated", "committed", "allocated"), changes);
        for (int i = 0; i < records.size(); i++) {
            assertEquals(i + 1, records.get(i).getSequence());
        }
        String line = WalDump.text(records.get(1));
        assertTrue(line.matches("2  \\d{4}-\\d\\d-\\d\\dT\\S+Z  committed       tenant=alpha key=a1 at=\\d@\\d+\\+5000 crc32c=00000011"), line);
        assertEquals("a1", WalDump.json(records.get(1), segment, 0).get("key"));
    }

    @Test
    void shows_promotion_tasks_queued_and_ended() throws Exception {
        try (StateFixture state = new StateFixture(root, true)) {
            state.standardState();
            assertTrue(state.pages.promotions().queue("alpha", "a1").isOk());
            io.mcctl.master.protocol.Placement source = state.pages.peek("alpha", "a1").value();
            assertTrue(state.pages.promotions().take("alpha", "a1", source, "node"));
            assertTrue(state.pages.promotions().end("alpha", "a1", "node", io.mcctl.master.service.Change.PromotionOutcome.FAILED).isOk());
            state.durable();
            segment = state.segment();
        }
        List<WalRecord> records = new ArrayList<>();
        WalDump.dump(root.resolve("master"), 18, (r, f, o) -> records.add(r));
        assertEquals(List.of("promotion_queued", "promotion_ended"), records.stream().map(WalDump::change).toList());
        assertTrue(WalDump.text(records.get(0)).matches("18  \\S+  promotion_queued tenant=alpha key=a1 at=\\d@\\d+\\+5000 crc32c=00000011"),
                WalDump.text(records.get(0)));
        assertTrue(WalDump.text(records.get(1)).endsWith(" outcome=failed"), WalDump.text(records.get(1)));
        assertEquals("failed", WalDump.json(records.get(1), segment, 0).get("outcome"));
    }

    @Test
    void shows_reservations_opened_before_their_allocations_and_closed_after() throws Exception {
        try (StateFixture state = new StateFixture(root, true, true)) { // as a master runs: allocations answered inside reservations
            state.commit("alpha", "r1", 5000, 0x21);
            state.pages.closeAllReservations(); // as a master that stops does
            state.durable();
            segment = state.segment();
        }
        List<WalRecord> records = new ArrayList<>();
        WalDump.dump(root.resolve("master"), 1, (r, f, o) -> records.add(r));
        List<String> changes = records.stream().map(WalDump::change).toList();
        assertEquals("reserved", changes.get(0), changes::toString);
        assertTrue(changes.indexOf("allocated") > 0 && changes.lastIndexOf("reservation_closed") > changes.indexOf("committed"), changes::toString);
        assertEquals(changes.stream().filter("reserved"::equals).count(), changes.stream().filter("reservation_closed"::equals).count());
        String reserved = WalDump.text(records.get(0));
        assertTrue(reserved.matches("1  \\S+  reserved        bucket=\\d first_page=\\d+ pages=\\d+ open_until=\\S+ hold_until=\\S+"), reserved);
        Map<String, Object> json = WalDump.json(records.get(0), segment, 0);
        assertTrue((long) json.get("hold_until_ms") > (long) json.get("open_until_ms"), json::toString);
        WalRecord closed = records.get(changes.lastIndexOf("reservation_closed"));
        assertTrue(WalDump.text(closed).contains(" reservation_closed bucket="), WalDump.text(closed));
    }

    @Test
    void starts_at_the_sequence_asked_for() throws Exception {
        Path dir = logged();
        List<Long> sequences = new ArrayList<>();
        WalDump.Result result = WalDump.dump(dir, 15, (r, f, o) -> sequences.add(r.getSequence()));
        assertEquals(List.of(15L, 16L, 17L), sequences);
        assertEquals(3, result.records());
        assertEquals(0, WalDump.dump(dir, 18, (r, f, o) -> sequences.add(-1L)).records());
    }

    @Test
    void reports_a_torn_tail_after_the_last_whole_record() throws Exception {
        Path dir = logged();
        long lastFrame = StateFixture.frameOffsets(segment).get(16);
        FileDamage.truncate(segment, Files.size(segment) - 2);
        List<Long> sequences = new ArrayList<>();
        WalDump.Result result = WalDump.dump(dir, 1, (r, f, o) -> sequences.add(r.getSequence()));
        assertEquals(16, sequences.size());
        assertTrue(result.torn());
        assertEquals(segment, result.tornFile());
        assertEquals(lastFrame, result.tornOffset());
        assertNull(result.corruption());
    }

    @Test
    void stops_at_a_corrupt_record_naming_the_segment_and_offset() throws Exception {
        Path dir = logged();
        long frame = StateFixture.frameOffsets(segment).get(9);
        FileDamage.flipLowestBit(segment, frame + 10);
        List<Long> sequences = new ArrayList<>();
        WalDump.Result result = WalDump.dump(dir, 1, (r, f, o) -> sequences.add(r.getSequence()));
        assertEquals(9, sequences.size());
        assertEquals(segment, result.corruption().file());
        assertEquals(frame, result.corruption().offset());
        assertEquals(9, result.lastSequence());
    }

    @Test
    void an_empty_segment_is_called_empty_not_a_legacy_format() throws Exception {
        Path dir = logged();
        Files.createFile(dir.resolve("wal-00000000000000000018.log"));
        List<Map<String, Object>> segments = WalDump.segments(dir);
        assertEquals(2, segments.size());
        Map<String, Object> empty = segments.get(1);
        assertEquals(Boolean.TRUE, empty.get("empty"));
        assertFalse(empty.containsKey("legacy"));
        assertFalse(empty.containsKey("format_version"));
        assertEquals("segment wal-00000000000000000018.log (0 bytes): empty (no header and no record: its header was never written)",
                WalDump.segmentText(empty));
        assertFalse(segments.get(0).containsKey("empty"));
        assertEquals(17, WalDump.dump(dir, 1, (r, f, o) -> { }).records());
    }

    @Test
    void a_directory_without_a_log_dumps_nothing() throws Exception {
        WalDump.Result result = WalDump.dump(root, 1, (r, f, o) -> { });
        assertEquals(0, result.segments());
        assertEquals(0, result.records());
    }
}
