package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code mcctl snapshot wal dump} over a real write-ahead log: the standard state's 17 records. */
@Timeout(60)
class WalDumpCommandTest {

    @TempDir
    Path work;

    SnapshotCommandsTest.State state;
    Path segment;

    @BeforeEach
    void log() throws Exception {
        state = new SnapshotCommandsTest.State(work.resolve("mooncake-data")).standard();
        state.stop();
        segment = state.segment();
    }

    @Test
    void text_shows_every_record_on_one_line_then_a_summary() {
        List<String> all = CliRun.run("snapshot", "wal", "dump", state.dir()).expectOk().out().lines().toList();
        assertTrue(all.get(0).matches("segment wal-0+1\\.log \\(\\d+ bytes\\): format 2 \\(readers of 2 or later\\), cluster \\S+, "
                + "first record 1, leader epoch 0"), all.get(0));
        List<String> lines = all.subList(1, all.size());
        assertEquals(18, lines.size(), String.join("\n", lines));
        for (int i = 0; i < 17; i++) {
            assertTrue(lines.get(i).startsWith((i + 1) + "  "), lines.get(i));
            assertTrue(lines.get(i).matches("\\d+  \\d{4}-\\d\\d-\\d\\dT\\S+Z  \\S+\\s+.*"), lines.get(i));
        }
        assertTrue(lines.get(0).matches("1  \\S+  allocated\\s+tenant=alpha key=a1 at=\\d@\\d+\\+5000 deadline=\\S+Z"), lines.get(0));
        assertTrue(lines.get(1).matches("2  \\S+  committed\\s+tenant=alpha key=a1 at=\\d@\\d+\\+5000 crc32c=00000011"), lines.get(1));
        assertTrue(lines.get(8).matches("9  \\S+  removed\\s+tenant=alpha key=a4 at=\\S+ crc32c=00000014 quarantined_until=\\S+Z"), lines.get(8));
        assertTrue(lines.get(11).matches("12  \\S+  removed\\s+tenant=alpha key=a5 at=\\S+ crc32c=00000015 freed"), lines.get(11));
        assertTrue(lines.get(16).matches("17  \\S+  allocated\\s+tenant=beta key=b3 at=\\d@\\d+\\+4097 deadline=\\S+"), lines.get(16));
        assertEquals("17 records, sequences 1 to 17 in 1 segment", lines.get(17));
    }

    @Test
    void json_is_one_line_per_record_and_an_end_line() throws Exception {
        List<String> all = CliRun.run("snapshot", "wal", "dump", state.dir(), "-o", "json", "--from", "10").expectOk().out().lines().toList();
        ObjectMapper json = new ObjectMapper();
        JsonNode header = json.readTree(all.get(0));
        assertEquals("segment", header.get("type").asText());
        assertEquals(2, header.get("format_version").asInt());
        assertEquals(1, header.get("first_sequence").asLong());
        assertEquals(0, header.get("leader_epoch").asLong());
        List<String> lines = all.subList(1, all.size());
        assertEquals(9, lines.size());
        for (int i = 0; i < 8; i++) {
            JsonNode record = json.readTree(lines.get(i));
            assertEquals("record", record.get("type").asText());
            assertEquals(10 + i, record.get("sequence").asLong());
            assertTrue(record.get("time").asText().endsWith("Z"));
            assertEquals(segment.getFileName().toString(), record.get("segment").asText());
        }
        JsonNode committed = json.readTree(lines.get(1));
        assertEquals("committed", committed.get("change").asText());
        assertEquals("a5", committed.get("key").asText());
        assertEquals(100, committed.get("placement").get("size").asLong());
        JsonNode end = json.readTree(lines.get(8));
        assertEquals("end", end.get("type").asText());
        assertEquals(8, end.get("records").asLong());
        assertEquals(17, end.get("last_sequence").asLong());
        assertFalse(end.get("torn").asBoolean());
        assertTrue(end.get("error").isNull());
    }

    @Test
    void a_torn_tail_is_reported_at_the_end_and_exits_ok() throws Exception {
        long last = SnapshotCommandsTest.frameOffsets(segment).get(16);
        SnapshotCommandsTest.truncate(segment, Files.size(segment) - 4);
        List<String> all = CliRun.run("snapshot", "wal", "dump", state.dir()).expectOk().out().lines().toList();
        assertTrue(all.get(0).matches("segment wal-0+1\\.log \\(\\d+ bytes\\): format 2 \\(readers of 2 or later\\), cluster \\S+, "
                + "first record 1, leader epoch 0"), all.get(0));
        List<String> lines = all.subList(1, all.size());
        assertEquals(18, lines.size(), String.join("\n", lines));
        assertTrue(lines.get(15).startsWith("16  "), lines.get(15));
        assertTrue(lines.get(16).startsWith("torn tail: " + segment + " at byte " + last + ": "), lines.get(16));
        assertEquals("16 records, sequences 1 to 16 in 1 segment; ends in a torn tail", lines.get(17));
    }

    @Test
    void a_corrupt_record_stops_the_dump_with_file_and_offset_and_exits_failed() throws Exception {
        long frame = SnapshotCommandsTest.frameOffsets(segment).get(4);
        SnapshotCommandsTest.flipByte(segment, frame + 20);
        CliRun run = CliRun.run("snapshot", "wal", "dump", state.dir()).expectExit(ExitCodes.FAILED);
        List<String> lines = run.out().lines().toList();
        assertEquals(6, lines.size(), run.out()); // the segment's header, 4 records, the summary
        assertEquals("4 records, sequences 1 to 4 in 1 segment; stopped at a corrupt record", lines.get(5));
        SnapshotCommandsTest.assertOneErrorLine(run, segment + " at byte " + frame + ": record fails its CRC32C");

        CliRun json = CliRun.run("snapshot", "wal", "dump", state.dir(), "-o", "json").expectExit(ExitCodes.FAILED);
        JsonNode end = new ObjectMapper().readTree(json.out().lines().reduce((a, b) -> b).orElseThrow());
        assertEquals(frame, end.get("error").get("offset").asLong());
    }

    @Test
    void bad_input_is_one_error_line() throws Exception {
        SnapshotCommandsTest.assertOneErrorLine(CliRun.run("snapshot", "wal", "dump", state.dir(), "--from", "0").expectExit(ExitCodes.USAGE),
                "invalid --from 0: allowed is a record sequence of 1 or more");
        SnapshotCommandsTest.assertOneErrorLine(CliRun.run("snapshot", "wal", "dump", work.resolve("no").toString()).expectExit(ExitCodes.NOT_FOUND),
                "no such state directory");
        CliRun help = CliRun.run("snapshot", "wal", "dump", "--help").expectOk();
        assertTrue(help.out().contains("JSON Lines"), help.out());
    }
}
