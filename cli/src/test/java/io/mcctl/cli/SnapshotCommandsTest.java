package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.Snapshotter;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.durability.WriteAheadLog;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.Result;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.mcctl.testkit.FileDamage;
import io.mcctl.testkit.StateFixture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code mcctl snapshot list|inspect|verify|diff|export} over real master state made by the real page service, log and snapshotter. */
@Timeout(60)
class SnapshotCommandsTest {

    static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path work;

    State state;

    @BeforeEach
    void makeState() throws Exception {
        state = new State(work.resolve("mooncake-data"));
    }

    /**
     * Real state: a {@link PageService} over 4 buckets of 16 pages of 4 KiB, logged by a {@link WriteAheadLog} and
     * snapshotted by a {@link Snapshotter}. The standard state: tenant alpha with mappings a1 (2 pages), a2 (1),
     * doc/a3 (3), a4 removed after a read (2 pages in quarantine) and a5 removed unread; tenant beta with mappings
     * b1 (1 page), doc/b2 (2) and b3 in flight (2 pages). 17 log records.
     */
    static final class State {
        static final long PAGE = 4096;
        final Path root;
        final Path dir;
        final BucketLayout layout;
        final PageService pages;
        final WriteAheadLog wal;
        final Snapshotter snapshotter;
        final long[] pagesPerBucket = new long[4];
        boolean closed;

        State(Path root) throws IOException {
            this.root = root;
            this.dir = root.resolve("master");
            this.layout = new BucketLayout(root, 4, PAGE, 16 * PAGE);
            Files.createDirectories(dir);
            LayoutFile.Record record = LayoutFile.loadOrCreate(layout);
            this.wal = new WriteAheadLog(dir, record.clusterId(), 0, 1 << 20, System::currentTimeMillis);
            // Each allocation logged and waited for on its own: the tests count the records.
            this.pages = PageService.builder(layout).allocationDeadline(Duration.ofHours(1)).readLease(Duration.ofHours(1))
                    .changeLog(wal.changeLog()).reservations(false).build();
            this.snapshotter = new Snapshotter(pages, wal, dir, record, 10, Map.of("durability", "wal"), 0);
        }

        Placement allocate(String tenant, String key, long size) {
            Result<Placement> r = pages.allocate(tenant, key, size, false);
            assertTrue(r.isOk(), r::toString);
            pagesPerBucket[r.value().bucket()] += layout.pagesFor(size);
            return r.value();
        }

        Placement commit(String tenant, String key, long size, int crc) {
            Placement p = allocate(tenant, key, size);
            assertTrue(pages.notifySuccess(tenant, key, p.withCrc(crc)).isOk());
            wal.whenDurable().join(); // as a notify is answered: readers find the mapping once the log holds it
            return p.withCrc(crc);
        }

        void remove(String tenant, String key, boolean afterRead) {
            Placement p = pages.peek(tenant, key).value();
            if (afterRead) {
                assertTrue(pages.getMapping(tenant, key).isOk());
            } else {
                pagesPerBucket[p.bucket()] -= layout.pagesFor(p.size());
            }
            assertTrue(pages.remove(tenant, key).isOk());
        }

        State standard() {
            commit("alpha", "a1", 5000, 0x11);
            commit("alpha", "a2", 4096, 0x12);
            commit("alpha", "doc/a3", 9000, 0x13);
            commit("alpha", "a4", 8000, 0x14);
            remove("alpha", "a4", true);
            commit("alpha", "a5", 100, 0x15);
            remove("alpha", "a5", false);
            commit("beta", "b1", 1, 0x21);
            commit("beta", "doc/b2", 8192, 0x22);
            allocate("beta", "b3", 4097);
            return this;
        }

        Path snapshot() throws Exception {
            wal.whenDurable().get();
            return snapshotter.take().path();
        }

        /** Makes every record durable and closes the log, as a stopped master leaves it. */
        void stop() throws Exception {
            if (!closed) {
                wal.whenDurable().get();
                wal.close();
                closed = true;
            }
        }

        Path segment() throws IOException {
            return WalSegments.list(dir).get(0).path();
        }

        String dir() {
            return dir.toString();
        }
    }

    // ---- damage ----

    static void flipByte(Path file, long offset) throws IOException {
        FileDamage.flipLowestBit(file, offset);
    }

    static void truncate(Path file, long size) throws IOException {
        FileDamage.truncate(file, size);
    }

    /** The byte offsets of the frames of a log segment (4-byte little-endian length, 4-byte CRC32C, payload). */
    static List<Long> frameOffsets(Path segment) throws IOException {
        return StateFixture.frameOffsets(segment);
    }

    /** A snapshot for 4 buckets of 16 pages of 4 KiB holding {@code mappings}, written record by record. */
    static Path handMade(Path dir, List<MappingRecord> mappings) throws IOException {
        try (SnapshotFile.Writer writer = new SnapshotFile.Writer(dir, 5)) {
            writer.beginSection(SnapshotFile.Section.MAPPINGS);
            for (MappingRecord m : mappings) {
                writer.add(m);
            }
            writer.beginSection(SnapshotFile.Section.PENDING);
            writer.beginSection(SnapshotFile.Section.QUARANTINE);
            writer.beginSection(SnapshotFile.Section.META);
            writer.add(SnapshotMeta.newBuilder().setFormatVersion(1).setClusterId("hand-made").setBucketCount(4).setPageSize(4096)
                    .setBucketSize(16 * 4096).setWalSequence(5).setCreatedMs(1_700_000_000_000L).setMappings(mappings.size()).build());
            return writer.finish();
        }
    }

    static MappingRecord mapping(String tenant, String key, int bucket, long offset, long size) {
        return MappingRecord.newBuilder().setTenantId(tenant).setKey(key)
                .setPlacement(PlacementRecord.newBuilder().setBucket(bucket).setOffset(offset).setSize(size).setCrc32C(9)).build();
    }

    static JsonNode json(CliRun run) throws IOException {
        return JSON.readTree(run.out());
    }

    static void assertOneErrorLine(CliRun run, String... fragments) {
        List<String> lines = run.err().lines().toList();
        assertEquals(1, lines.size(), run.err());
        assertTrue(lines.get(0).startsWith("mcctl: error: "), run.err());
        for (String fragment : fragments) {
            assertTrue(lines.get(0).contains(fragment), () -> "'" + fragment + "' missing from: " + run.err());
        }
    }

    // ---- list ----

    @Nested
    class List_ {

        @Test
        void shows_snapshots_newest_first_and_the_log_segments_in_text() throws Exception {
            state.commit("t", "k", 1, 1);
            Path older = state.snapshot();
            state.standard();
            Path newer = state.snapshot();
            state.stop();
            CliRun run = CliRun.run("snapshot", "list", state.dir()).expectOk();
            String out = run.out();
            assertTrue(out.indexOf(newer.getFileName().toString()) < out.indexOf(older.getFileName().toString()), out);
            assertTrue(out.contains("FILE  ") && out.contains("COVERS") && out.contains("CREATED"), out);
            assertTrue(out.lines().anyMatch(l -> l.startsWith(newer.getFileName().toString()) && l.matches(".*\\s19\\s+\\d{4}-\\S+Z\\s+\\d+\\s+6$")), out);
            assertTrue(out.lines().anyMatch(l -> l.matches("wal-0{19}1\\.log\\s+1\\s+\\d+\\s+19\\s+19\\s+ok")), out);
            assertTrue(out.strip().endsWith("2 snapshots, 1 log segment holding 19 records"), out);
        }

        @Test
        void json_has_stable_fields_and_marks_an_unreadable_snapshot() throws Exception {
            state.standard();
            Path good = state.snapshot();
            state.stop();
            Path broken = state.dir.resolve(SnapshotFile.fileName(99));
            Files.write(broken, java.util.Arrays.copyOf(Files.readAllBytes(good), 50));
            JsonNode report = json(CliRun.run("snapshot", "list", state.dir(), "-o", "json").expectOk());
            JsonNode first = report.get("snapshots").get(0);
            assertEquals(broken.getFileName().toString(), first.get("file").asText());
            assertFalse(first.get("readable").asBoolean());
            assertTrue(first.get("error").asText().contains("footer magic missing"), first.toString());
            JsonNode second = report.get("snapshots").get(1);
            assertEquals(17, second.get("wal_sequence").asLong());
            assertEquals(5, second.get("mappings").asLong());
            assertEquals(1, second.get("in_flight").asLong());
            assertEquals(Files.size(good), second.get("bytes").asLong());
            assertTrue(second.get("created").asText().endsWith("Z"));
            JsonNode segment = report.get("wal_segments").get(0);
            assertEquals(1, segment.get("first_sequence").asLong());
            assertEquals(17, segment.get("records").asLong());
            assertEquals(17, segment.get("last_sequence").asLong());
            assertEquals("ok", segment.get("status").asText());
        }

        @Test
        void a_missing_directory_is_one_error_line_and_not_found() {
            CliRun run = CliRun.run("snapshot", "list", work.resolve("nowhere").toString()).expectExit(ExitCodes.NOT_FOUND);
            assertOneErrorLine(run, "no such state directory: " + work.resolve("nowhere"));
        }

        @Test
        void a_file_instead_of_a_directory_is_a_usage_error() throws Exception {
            Path file = Files.writeString(work.resolve("file"), "x");
            assertOneErrorLine(CliRun.run("snapshot", "list", file.toString()).expectExit(ExitCodes.USAGE), file + " is a file");
        }
    }

    // ---- inspect ----

    @Nested
    class Inspect {

        @Test
        void json_counts_the_state_exactly() throws Exception {
            Path file = state.standard().snapshot();
            JsonNode report = json(CliRun.run("snapshot", "inspect", file.toString(), "-o", "json").expectOk());
            assertEquals(1, report.get("format_version").asInt());
            JsonNode meta = report.get("meta");
            assertEquals(4, meta.get("bucket_count").asInt());
            assertEquals(4096, meta.get("page_size").asLong());
            assertEquals(17, meta.get("wal_sequence").asLong());
            assertEquals("wal", meta.get("settings").get("durability").asText());
            JsonNode counters = report.get("counters");
            assertEquals(5, counters.get("mappings").asLong());
            assertEquals(1, counters.get("in_flight").asLong());
            assertEquals(1, counters.get("quarantined_ranges").asLong());
            assertEquals(2, counters.get("quarantined_pages").asLong());
            assertEquals(2, counters.get("tenants").asLong());
            assertEquals(13, counters.get("pages_used").asLong());
            assertEquals(64, counters.get("pages_total").asLong());
            JsonNode buckets = report.get("pages_per_bucket");
            assertEquals(4, buckets.size());
            for (int b = 0; b < 4; b++) {
                assertEquals(state.pagesPerBucket[b], buckets.get(b).asLong(), "bucket " + b);
            }
            assertEquals(4, report.get("sections").size());
            for (JsonNode section : report.get("sections")) {
                assertTrue(section.get("crc_ok").asBoolean(), section.toString());
                assertTrue(section.get("crc32c").asText().matches("[0-9a-f]{8}"), section.toString());
            }
            assertEquals("MAPPINGS", report.get("sections").get(0).get("type").asText());
            assertEquals(5, report.get("sections").get(0).get("records").asLong());
            assertFalse(report.has("keys"));
        }

        @Test
        void text_shows_meta_sections_counters_and_only_buckets_in_use() throws Exception {
            Path file = state.standard().snapshot();
            String out = CliRun.run("snapshot", "inspect", file.toString()).expectOk().out();
            assertTrue(out.contains("4 buckets of 65536 bytes, pages of 4096 bytes (16 pages per bucket)"), out);
            assertTrue(out.contains("WAL records up to 17"), out);
            assertTrue(out.lines().anyMatch(l -> l.matches("MAPPINGS\\s+16\\s+\\d+\\s+5\\s+[0-9a-f]{8}\\s+ok")), out);
            assertTrue(out.lines().anyMatch(l -> l.matches("mappings\\s+5")), out);
            assertTrue(out.lines().anyMatch(l -> l.matches("in flight\\s+1")), out);
            assertTrue(out.lines().anyMatch(l -> l.matches("quarantined\\s+1 range, 2 pages")), out);
            assertTrue(out.lines().anyMatch(l -> l.matches("tenants\\s+2")), out);
            assertTrue(out.lines().anyMatch(l -> l.matches("pages used\\s+13 of 64")), out);
            List<String> bucketRows = out.lines().dropWhile(l -> !l.startsWith("BUCKET")).skip(1).takeWhile(l -> !l.isBlank()).toList();
            long inUse = java.util.Arrays.stream(state.pagesPerBucket).filter(p -> p != 0).count();
            assertEquals(inUse, bucketRows.size(), out);
            for (String row : bucketRows) {
                String[] cells = row.trim().split("\\s+");
                assertEquals(state.pagesPerBucket[Integer.parseInt(cells[0])], Long.parseLong(cells[1]), row);
            }
        }

        @Test
        void keys_are_listed_filtered_by_tenant_and_prefix() throws Exception {
            Path file = state.standard().snapshot();
            JsonNode beta = json(CliRun.run("snapshot", "inspect", file.toString(), "--tenant", "beta", "-o", "json").expectOk());
            assertEquals(List.of("b1", "doc/b2"), keys(beta));
            assertEquals(2, beta.get("keys_matching").asLong());
            JsonNode b1 = beta.get("keys").get(0);
            assertEquals("beta", b1.get("tenant").asText());
            assertEquals(1, b1.get("size").asLong());
            assertEquals(1, b1.get("pages").asLong());
            assertEquals("00000021", b1.get("crc32c").asText());
            JsonNode docs = json(CliRun.run("snapshot", "inspect", file.toString(), "--keys", "--prefix", "doc/", "-o", "json").expectOk());
            assertEquals(List.of("doc/a3", "doc/b2"), keys(docs));

            String text = CliRun.run("snapshot", "inspect", file.toString(), "--keys", "--limit", "2").expectOk().out();
            assertTrue(text.lines().anyMatch(l -> l.matches("alpha\\s+a1\\s+\\d\\s+\\d+\\s+5000\\s+2\\s+00000011")), text);
            assertTrue(text.contains("2 of 5 matching keys (--limit)"), text);
        }

        private List<String> keys(JsonNode report) {
            List<String> out = new ArrayList<>();
            report.get("keys").forEach(k -> out.add(k.get("key").asText()));
            return out;
        }

        @Test
        void a_corrupt_section_is_shown_failing_and_exits_failed_with_one_error_line() throws Exception {
            Path file = state.standard().snapshot();
            SnapshotFile.SectionInfo mappings = SnapshotFile.open(file).info(SnapshotFile.Section.MAPPINGS);
            flipByte(file, mappings.offset() + mappings.length() - 1);
            CliRun run = CliRun.run("snapshot", "inspect", file.toString()).expectExit(ExitCodes.FAILED);
            assertTrue(run.out().lines().anyMatch(l -> l.startsWith("MAPPINGS") && l.contains("FAILS (computed ")), run.out());
            assertOneErrorLine(run, file + " at byte " + mappings.offset() + ": MAPPINGS section fails its CRC32C");
        }

        @Test
        void a_truncated_file_is_one_error_line_naming_file_and_offset() throws Exception {
            Path file = state.standard().snapshot();
            long size = Files.size(file);
            truncate(file, size - 5);
            CliRun run = CliRun.run("snapshot", "inspect", file.toString()).expectExit(ExitCodes.FAILED);
            assertOneErrorLine(run, file + " at byte " + (size - 5 - 8) + ": footer magic missing");
        }

        @Test
        void bad_arguments_are_usage_errors_naming_the_value() throws Exception {
            Path file = state.standard().snapshot();
            assertOneErrorLine(CliRun.run("snapshot", "inspect", file.toString(), "--limit", "-3").expectExit(ExitCodes.USAGE),
                    "invalid --limit -3: allowed is 0 (all) or more");
            assertOneErrorLine(CliRun.run("snapshot", "inspect", file.toString(), "--tenant", "no spaces").expectExit(ExitCodes.USAGE),
                    "invalid --tenant: tenant id 'no spaces' has character ' '");
            assertOneErrorLine(CliRun.run("snapshot", "inspect", state.dir()).expectExit(ExitCodes.USAGE),
                    state.dir() + " is a directory", "mcctl snapshot list " + state.dir());
            assertOneErrorLine(CliRun.run("snapshot", "inspect", work.resolve("none.snap").toString()).expectExit(ExitCodes.NOT_FOUND),
                    "no such snapshot file: " + work.resolve("none.snap"));
        }
    }

    // ---- verify ----

    @Nested
    class Verify {

        @Test
        void a_good_snapshot_and_a_good_state_directory_pass() throws Exception {
            Path file = state.standard().snapshot();
            state.commit("gamma", "g1", 3 * State.PAGE, 0x31);
            state.stop();
            CliRun one = CliRun.run("snapshot", "verify", file.toString()).expectOk();
            assertTrue(one.out().contains(file + ": ok, 5 mappings, 1 in flight, 1 quarantined range (2 pages)"), one.out());
            assertTrue(one.out().strip().endsWith("verify passed: 0 errors, 0 warnings (checked 1 snapshot in " + file + ")"), one.out());

            CliRun dir = CliRun.run("snapshot", "verify", state.dir()).expectOk();
            assertTrue(dir.out().contains("write-ahead log: 1 segment, records 1 to 19: ok"), dir.out());
            assertTrue(dir.out().contains("recovery: " + file.getFileName() + " and 2 log records rebuild 6 mappings, 1 in flight, "
                    + "1 quarantined range up to record 19: ok, no page claimed twice"), dir.out());
            assertTrue(dir.out().strip().endsWith("verify passed: 0 errors, 0 warnings (checked 1 snapshot, 1 log segment, recovery in "
                    + state.dir() + ")"), dir.out());

            JsonNode report = json(CliRun.run("snapshot", "verify", state.dir(), "-o", "json").expectOk());
            assertTrue(report.get("passed").asBoolean());
            assertEquals("state_dir", report.get("kind").asText());
            assertEquals(19, report.get("wal").get("last_sequence").asLong());
            assertEquals(6, report.get("recovery").get("mappings").asLong());
            assertEquals(0, report.get("problems").size());
        }

        @Test
        void a_flipped_byte_in_a_section_fails_naming_file_and_section_offset() throws Exception {
            Path file = state.standard().snapshot();
            SnapshotFile.SectionInfo quarantine = SnapshotFile.open(file).info(SnapshotFile.Section.QUARANTINE);
            flipByte(file, quarantine.offset() + quarantine.length() - 1); // the low bits of release_ms: still a range, only the CRC fails
            CliRun run = CliRun.run("snapshot", "verify", file.toString()).expectExit(ExitCodes.FAILED);
            assertTrue(run.out().contains("error: " + file + " at byte " + quarantine.offset() + ": QUARANTINE section fails its CRC32C"), run.out());
            assertTrue(run.out().strip().endsWith("verify FAILED: 1 error, 0 warnings (checked 1 snapshot in " + file + ")"), run.out());

            JsonNode report = json(CliRun.run("snapshot", "verify", file.toString(), "-o", "json").expectExit(ExitCodes.FAILED));
            assertFalse(report.get("passed").asBoolean());
            JsonNode problem = report.get("problems").get(0);
            assertEquals("error", problem.get("severity").asText());
            assertEquals(file.toString(), problem.get("file").asText());
            assertEquals(quarantine.offset(), problem.get("offset").asLong());
        }

        @Test
        void two_mappings_on_one_page_fail_naming_both_keys() throws Exception {
            Path file = handMade(work, List.of(mapping("alpha", "one", 1, 0, 2 * State.PAGE), mapping("beta", "two", 1, State.PAGE, 10)));
            CliRun run = CliRun.run("snapshot", "verify", file.toString()).expectExit(ExitCodes.FAILED);
            assertTrue(run.out().contains("mapping of key 'two' of tenant 'beta' (bucket 1, pages [1, 2)) overlaps mapping of key 'one' "
                    + "of tenant 'alpha' (bucket 1, pages [0, 2)) on pages [1, 2)"), run.out());
            assertTrue(run.out().contains("verify FAILED: 1 error"), run.out());
        }

        @Test
        void a_range_outside_its_bucket_fails() throws Exception {
            Path file = handMade(work, List.of(mapping("t", "edge", 3, 15 * State.PAGE, State.PAGE + 1)));
            CliRun run = CliRun.run("snapshot", "verify", file.toString()).expectExit(ExitCodes.FAILED);
            assertTrue(run.out().contains("mapping of key 'edge' of tenant 't' at 3@61440+4097 ends at byte 65537, past the end of bucket 3 "
                    + "(65536 bytes)"), run.out());
        }

        @Test
        void a_truncated_snapshot_fails() throws Exception {
            Path file = state.standard().snapshot();
            truncate(file, Files.size(file) / 2);
            CliRun run = CliRun.run("snapshot", "verify", file.toString()).expectExit(ExitCodes.FAILED);
            assertTrue(run.out().contains("error: " + file + " at byte "), run.out());
            assertTrue(run.out().contains("footer magic missing (file cut short?)"), run.out());
        }

        @Test
        void a_log_with_a_corrupt_record_in_the_middle_fails_naming_the_segment_and_offset() throws Exception {
            state.standard();
            state.stop();
            Path segment = state.segment();
            long frame = frameOffsets(segment).get(7);
            flipByte(segment, frame + 12);
            CliRun run = CliRun.run("snapshot", "verify", state.dir()).expectExit(ExitCodes.FAILED);
            assertTrue(run.out().contains("error: " + segment + " at byte " + frame + ": record fails its CRC32C"), run.out());
            assertTrue(run.out().contains("write-ahead log: 1 segment, records 1 to 7: FAILED"), run.out());
            assertTrue(run.out().contains("verify FAILED: 1 error, 0 warnings"), run.out());
        }

        @Test
        void a_torn_log_tail_is_a_warning_and_passes() throws Exception {
            state.standard();
            state.stop();
            Path segment = state.segment();
            long last = frameOffsets(segment).get(16);
            truncate(segment, Files.size(segment) - 1);
            long size = Files.size(segment);
            CliRun run = CliRun.run("snapshot", "verify", state.dir()).expectOk();
            assertTrue(run.out().contains("warning: " + segment + " at byte " + last + ": torn tail"), run.out());
            assertTrue(run.out().contains("verify passed: 0 errors, 1 warning"), run.out());
            assertEquals(size, Files.size(segment), "verify leaves the torn tail for the master to cut");
        }

        @Test
        void a_missing_target_is_not_found() {
            assertOneErrorLine(CliRun.run("snapshot", "verify", work.resolve("gone").toString()).expectExit(ExitCodes.NOT_FOUND),
                    "no such snapshot file or state directory: " + work.resolve("gone"));
        }
    }

    // ---- diff ----

    @Nested
    class Diff {

        @Test
        void reports_exactly_the_keys_added_removed_and_moved() throws Exception {
            Path a = state.standard().snapshot();
            long[] before = state.pagesPerBucket.clone();
            state.remove("alpha", "a2", false);
            state.commit("gamma", "g1", 2 * State.PAGE, 0x41);
            Placement old = state.pages.peek("beta", "doc/b2").value();
            Result<Placement> fresh = state.pages.allocate("beta", "doc/b2", 5 * State.PAGE, true);
            assertTrue(state.pages.notifySuccess("beta", "doc/b2", fresh.value().withCrc(0x43)).isOk());
            state.pagesPerBucket[old.bucket()] -= 2;
            state.pagesPerBucket[fresh.value().bucket()] += 5;
            Path b = state.snapshot();

            JsonNode report = json(CliRun.run("snapshot", "diff", a.toString(), b.toString(), "-o", "json").expectOk());
            assertEquals(1, report.get("counts").get("added").asInt());
            assertEquals(1, report.get("counts").get("removed").asInt());
            assertEquals(1, report.get("counts").get("moved").asInt());
            assertEquals(0, report.get("counts").get("rewritten").asInt());
            assertEquals(3, report.get("counts").get("unchanged").asInt());
            assertEquals("g1", report.get("added").get(0).get("key").asText());
            assertEquals("gamma", report.get("added").get(0).get("tenant").asText());
            assertEquals("a2", report.get("removed").get(0).get("key").asText());
            JsonNode moved = report.get("moved").get(0);
            assertEquals("doc/b2", moved.get("key").asText());
            assertEquals(old.offset(), moved.get("before").get("offset").asLong());
            assertEquals(fresh.value().offset(), moved.get("after").get("offset").asLong());
            assertEquals("00000043", moved.get("after").get("crc32c").asText());
            for (int bucket = 0; bucket < 4; bucket++) {
                assertEquals(before[bucket], report.get("pages_per_bucket").get("before").get(bucket).asLong());
                assertEquals(state.pagesPerBucket[bucket], report.get("pages_per_bucket").get("after").get(bucket).asLong());
            }

            String text = CliRun.run("snapshot", "diff", a.toString(), b.toString()).expectOk().out();
            assertTrue(text.lines().anyMatch(l -> l.matches("added\\s+gamma\\s+g1\\s+-\\s+\\d@\\d+\\+8192 crc32c=00000041")), text);
            assertTrue(text.lines().anyMatch(l -> l.matches("removed\\s+alpha\\s+a2\\s+\\d@\\d+\\+4096 crc32c=00000012\\s+-")), text);
            assertTrue(text.lines().anyMatch(l -> l.matches("moved\\s+beta\\s+doc/b2\\s+" + old.bucket() + "@" + old.offset()
                    + "\\+8192 crc32c=00000022\\s+" + fresh.value().bucket() + "@" + fresh.value().offset() + "\\+20480 crc32c=00000043")), text);
            List<String> bucketRows = text.lines().dropWhile(l -> !l.startsWith("BUCKET")).skip(1).takeWhile(l -> !l.isBlank()).toList();
            long changed = java.util.stream.IntStream.range(0, 4).filter(i -> before[i] != state.pagesPerBucket[i]).count();
            assertEquals(changed, bucketRows.size(), text);
            assertTrue(text.strip().endsWith("1 added, 1 removed, 1 moved, 0 rewritten, 3 unchanged"), text);
        }

        @Test
        void a_directory_instead_of_a_snapshot_is_a_usage_error() throws Exception {
            Path a = state.standard().snapshot();
            assertOneErrorLine(CliRun.run("snapshot", "diff", a.toString(), state.dir()).expectExit(ExitCodes.USAGE), "is a directory");
        }
    }

    // ---- export ----

    @Nested
    class Export {

        @Test
        void emits_one_json_line_per_record_after_the_meta_line() throws Exception {
            Path file = state.standard().snapshot();
            CliRun run = CliRun.run("snapshot", "export", file.toString(), "-o", "json").expectOk();
            List<String> lines = run.out().lines().toList();
            assertEquals(1 + 5 + 1 + 1, lines.size(), run.out());
            List<String> types = new ArrayList<>();
            for (String line : lines) {
                JsonNode node = JSON.readTree(line);
                types.add(node.get("type").asText());
            }
            assertEquals("meta", types.get(0));
            assertEquals(5, types.stream().filter("mapping"::equals).count());
            assertEquals(1, types.stream().filter("in_flight"::equals).count());
            assertEquals(1, types.stream().filter("quarantine"::equals).count());
            assertEquals(17, JSON.readTree(lines.get(0)).get("wal_sequence").asLong());
            assertEquals(run.out(), CliRun.run("snapshot", "export", file.toString()).expectOk().out(), "text prints the same lines");
        }

        @Test
        void a_corrupt_snapshot_prints_nothing_and_one_error_line() throws Exception {
            Path file = state.standard().snapshot();
            SnapshotFile.SectionInfo pending = SnapshotFile.open(file).info(SnapshotFile.Section.PENDING);
            flipByte(file, pending.offset() + 3);
            CliRun run = CliRun.run("snapshot", "export", file.toString(), "-o", "json").expectExit(ExitCodes.FAILED);
            assertEquals("", run.out());
            assertOneErrorLine(run, file + " at byte " + pending.offset() + ": PENDING section fails its CRC32C");
        }
    }

    @Test
    @Tag("process")
    void verify_in_a_real_process_exits_failed_and_list_reads_the_default_directory() throws Exception {
        state.standard();
        state.stop();
        Path segment = state.segment();
        long frame = frameOffsets(segment).get(3);
        flipByte(segment, frame + 9);
        McctlProcess.Done verify = McctlProcess.run(work, Map.of(), "snapshot", "verify", state.dir());
        assertEquals(ExitCodes.FAILED, verify.exitCode(), verify.out() + verify.err());
        assertTrue(verify.out().contains(segment + " at byte " + frame), verify.out());
        McctlProcess.Done list = McctlProcess.run(work, Map.of(), "snapshot", "list");
        assertEquals(ExitCodes.OK, list.exitCode(), list.err());
        assertTrue(list.out().contains("Snapshots") || list.out().contains("no snapshots in ./mooncake-data/master"), list.out());
        assertTrue(list.out().lines().anyMatch(l -> l.contains("corrupt at byte " + frame + ": record fails its CRC32C")), list.out());
    }
}
