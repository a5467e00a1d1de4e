package io.mcctl.tools.snapshot;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.protocol.Placement;
import io.mcctl.testkit.FileDamage;
import io.mcctl.testkit.StateFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class SnapshotVerifierTest {

    @TempDir
    Path root;

    static String errors(SnapshotVerifier.Report report) {
        return String.join("\n", report.problems().stream().map(Problem::text).toList());
    }

    @Nested
    class A_snapshot_file {

        @Test
        void made_by_the_master_passes_with_its_counts() throws Exception {
            try (StateFixture state = new StateFixture(root, false)) {
                state.standardState();
                Path file = state.snapshot();
                SnapshotVerifier.Report report = SnapshotVerifier.verify(file);
                assertTrue(report.passed(), () -> errors(report));
                assertTrue(report.problems().isEmpty(), () -> errors(report));
                assertEquals(new SnapshotVerifier.SnapshotResult(file, 1, true, 5, 1, 1, 2), report.snapshots().get(0));
                assertNull(report.wal());
                assertNull(report.recovery());
            }
        }

        @Test
        void with_a_flipped_byte_in_a_section_fails_naming_the_file_and_the_section_offset() throws Exception {
            try (StateFixture state = new StateFixture(root, false)) {
                state.standardState();
                Path file = state.snapshot();
                SnapshotFile.SectionInfo pending = SnapshotFile.open(file).info(SnapshotFile.Section.PENDING);
                FileDamage.flipLowestBit(file, pending.offset() + 4); // inside the tenant id: "beta" -> "cet`"-like, still a string
                SnapshotVerifier.Report report = SnapshotVerifier.verify(file);
                assertFalse(report.passed());
                assertEquals(1, report.errors(), () -> errors(report));
                Problem problem = report.problems().get(0);
                assertEquals(file, problem.file());
                assertEquals(pending.offset(), problem.offset());
                assertEquals("PENDING section fails its CRC32C", problem.message());
                assertFalse(report.snapshots().get(0).ok());
            }
        }

        @Test
        void with_two_mappings_on_one_page_fails_naming_both_keys() throws Exception {
            Path file = StateFixture.writeSnapshot(root, 9, List.of(
                    StateFixture.mapping("alpha", "first", 2, 0, 3 * StateFixture.PAGE),
                    StateFixture.mapping("alpha", "clear", 2, 3 * StateFixture.PAGE, 100),
                    StateFixture.mapping("beta", "second", 2, 2 * StateFixture.PAGE, 1)), List.of(), List.of());
            SnapshotVerifier.Report report = SnapshotVerifier.verify(file);
            assertFalse(report.passed());
            assertEquals(1, report.errors(), () -> errors(report));
            Problem problem = report.problems().get(0);
            assertEquals("mapping of key 'second' of tenant 'beta' (bucket 2, pages [2, 3)) overlaps mapping of key 'first' of tenant 'alpha'"
                    + " (bucket 2, pages [0, 3)) on pages [2, 3)", problem.message());
            assertEquals(file, problem.file());
            assertEquals(recordOffsets(file).get(2), problem.offset());
        }

        @Test
        void names_every_pair_when_mappings_in_flight_allocations_and_quarantine_share_pages() throws Exception {
            Path file = StateFixture.writeSnapshot(root, 9,
                    List.of(StateFixture.mapping("t", "m", 1, 4 * StateFixture.PAGE, 2 * StateFixture.PAGE)),
                    List.of(PendingRecord.newBuilder().setTenantId("t").setKey("p")
                            .setPlacement(StateFixture.placement(1, 5 * StateFixture.PAGE, 2 * StateFixture.PAGE, 0)).setDeadlineMs(1).build()),
                    List.of(QuarantineRecord.newBuilder().setBucket(1).setFirstPage(3).setPages(4).setReleaseMs(1).build()));
            SnapshotVerifier.Report report = SnapshotVerifier.verify(file);
            assertEquals(3, report.errors(), () -> errors(report));
            String all = errors(report);
            assertTrue(all.contains("in-flight allocation of key 'p' of tenant 't' (bucket 1, pages [5, 7)) overlaps mapping of key 'm'"
                    + " of tenant 't' (bucket 1, pages [4, 6)) on pages [5, 6)"), all);
            assertTrue(all.contains("quarantined range (bucket 1, pages [3, 7)) overlaps mapping of key 'm' of tenant 't' (bucket 1, pages [4, 6))"
                    + " on pages [4, 6)"), all);
            assertTrue(all.contains("quarantined range (bucket 1, pages [3, 7)) overlaps in-flight allocation of key 'p' of tenant 't'"
                    + " (bucket 1, pages [5, 7)) on pages [5, 7)"), all);
        }

        @Test
        void with_ranges_outside_their_bucket_fails_with_a_line_for_each() throws Exception {
            long bucketSize = StateFixture.PAGES_PER_BUCKET * StateFixture.PAGE;
            Path file = StateFixture.writeSnapshot(root, 3, List.of(
                    StateFixture.mapping("t", "past-the-end", 0, bucketSize - StateFixture.PAGE, StateFixture.PAGE + 1),
                    StateFixture.mapping("t", "no-such-bucket", 4, 0, 10),
                    StateFixture.mapping("t", "unaligned", 1, 100, 10),
                    StateFixture.mapping("t", "empty", 1, 0, 0),
                    StateFixture.mapping("t", "fine", 1, StateFixture.PAGE, 10)), List.of(),
                    List.of(QuarantineRecord.newBuilder().setBucket(3).setFirstPage(15).setPages(2).build()));
            SnapshotVerifier.Report report = SnapshotVerifier.verify(file);
            assertEquals(5, report.errors(), () -> errors(report));
            List<String> messages = report.problems().stream().map(Problem::message).toList();
            assertEquals(List.of(
                    "mapping of key 'past-the-end' of tenant 't' at 0@61440+4097 ends at byte 65537, past the end of bucket 0 (65536 bytes)",
                    "mapping of key 'no-such-bucket' of tenant 't' at 4@0+10 names bucket 4; the layout has buckets 0..3",
                    "mapping of key 'unaligned' of tenant 't' at 1@100+10 starts at byte 100, not on a page boundary (pages of 4096 bytes)",
                    "mapping of key 'empty' of tenant 't' at 1@0+0 has size 0; a placement holds at least 1 byte",
                    "quarantined range at page 15 of bucket 3 (2 pages) ends at page 17, past the end of bucket 3 (16 pages)"), messages);
            List<Long> offsets = recordOffsets(file);
            assertEquals(offsets.get(0), report.problems().get(0).offset());
            assertEquals(offsets.get(3), report.problems().get(3).offset());
        }

        @Test
        void cut_short_fails_naming_the_file() throws Exception {
            try (StateFixture state = new StateFixture(root, false)) {
                state.standardState();
                Path file = state.snapshot();
                FileDamage.truncate(file, Files.size(file) - 10);
                SnapshotVerifier.Report report = SnapshotVerifier.verify(file);
                assertEquals(1, report.errors(), () -> errors(report));
                assertEquals(file, report.problems().get(0).file());
                assertEquals("footer magic missing (file cut short?)", report.problems().get(0).message());
            }
        }

        @Test
        void whose_meta_counts_disagree_with_its_sections_fails() throws Exception {
            Path file;
            try (SnapshotFile.Writer writer = new SnapshotFile.Writer(root, 5)) {
                writer.beginSection(SnapshotFile.Section.MAPPINGS);
                writer.add(StateFixture.mapping("t", "k", 0, 0, 1));
                writer.beginSection(SnapshotFile.Section.PENDING);
                writer.beginSection(SnapshotFile.Section.QUARANTINE);
                writer.beginSection(SnapshotFile.Section.META);
                writer.add(io.mcctl.master.proto.v1.SnapshotMeta.newBuilder().setFormatVersion(1).setBucketCount(4).setPageSize(4096)
                        .setBucketSize(65536).setWalSequence(5).setMappings(2).build());
                file = writer.finish();
            }
            SnapshotVerifier.Report report = SnapshotVerifier.verify(file);
            assertEquals(List.of("meta record counts 2 mappings, the sections hold 1"), report.problems().stream().map(Problem::message).toList());
        }

        @Test
        void names_the_offset_of_a_record_that_does_not_decode_even_deep_in_a_large_section() throws Exception {
            List<MappingRecord> mappings = new ArrayList<>();
            for (int i = 0; i < 70_000; i++) {
                mappings.add(StateFixture.mapping("t", String.format("k%06d", i), i % 4, (i / 4 % 16) * StateFixture.PAGE, 1));
            }
            Path file = StateFixture.writeSnapshot(root, 1, mappings, List.of(), List.of());
            long at = recordOffsets(file).get(69_000);
            byte[] bytes = Files.readAllBytes(file);
            bytes[(int) at + 1] = 0x0f; // the first tag after the length: field 1 with wire type 7, which does not exist
            Files.write(file, bytes);
            SnapshotVerifier.Report report = SnapshotVerifier.verify(file);
            Problem decode = report.problems().stream().filter(p -> p.message().contains("does not decode")).findFirst().orElseThrow();
            assertEquals(at, decode.offset(), () -> errors(report));
            assertTrue(decode.message().startsWith("MAPPINGS record 69000 does not decode"), decode.message());
        }
    }

    /** The byte offset of every record of the MAPPINGS section, from its framing. */
    static List<Long> recordOffsets(Path file) throws Exception {
        SnapshotFile.SectionInfo info = SnapshotFile.open(file).info(SnapshotFile.Section.MAPPINGS);
        byte[] bytes = Files.readAllBytes(file);
        com.google.protobuf.CodedInputStream in = com.google.protobuf.CodedInputStream.newInstance(bytes, (int) info.offset(), (int) info.length());
        List<Long> out = new ArrayList<>();
        while (!in.isAtEnd()) {
            out.add(info.offset() + in.getTotalBytesRead());
            in.skipRawBytes(in.readRawVarint32());
        }
        return out;
    }

    @Nested
    class A_state_directory {

        @Test
        void made_by_a_master_with_a_log_passes_and_recovery_rebuilds_the_live_state() throws Exception {
            try (StateFixture state = new StateFixture(root, true)) {
                state.standardState();
                state.snapshot();
                // After the snapshot: one more mapping, one freed allocation, one overwrite-free removal.
                state.commit("gamma", "g1", 3 * StateFixture.PAGE, 0x31);
                Placement loose = state.allocate("gamma", "g2", 10);
                state.free("gamma", "g2", loose);
                state.durable();
                state.stop();

                SnapshotVerifier.Report report = SnapshotVerifier.verify(state.stateDir);
                assertTrue(report.passed(), () -> errors(report));
                assertTrue(report.problems().isEmpty(), () -> errors(report));
                assertEquals(1, report.snapshots().size());
                assertEquals(new SnapshotVerifier.WalResult(1, 21, 1, 21, null, -1, true), report.wal());
                SnapshotVerifier.RecoveryResult recovery = report.recovery();
                assertNull(recovery.skipped());
                assertEquals(state.stateDir.resolve(SnapshotFile.fileName(17)), recovery.snapshot());
                assertEquals(17, recovery.snapshotSequence());
                assertEquals(4, recovery.replayed());
                assertEquals(21, recovery.lastSequence());
                assertEquals(6, recovery.mappings());
                assertEquals(1, recovery.inFlight());
                assertEquals(1, recovery.quarantinedRanges());
                assertTrue(recovery.ok());
            }
        }

        @Test
        void with_a_torn_log_tail_passes_with_a_warning_and_is_left_unchanged() throws Exception {
            Path segment;
            try (StateFixture state = new StateFixture(root, true)) {
                state.standardState();
                state.durable();
                segment = state.segment();
            }
            long size = Files.size(segment);
            FileDamage.truncate(segment, size - 3);
            Map<Path, byte[]> before = contents(root.resolve("master"));

            SnapshotVerifier.Report report = SnapshotVerifier.verify(root.resolve("master"));
            assertTrue(report.passed(), () -> errors(report));
            assertEquals(1, report.warnings(), () -> errors(report));
            Problem torn = report.problems().get(0);
            long lastFrame = StateFixture.frameOffsets(segment).get(16);
            assertEquals(segment, torn.file());
            assertEquals(lastFrame, torn.offset());
            assertTrue(torn.message().startsWith("torn tail"), torn.message());
            assertEquals(16, report.wal().records());
            assertEquals(16, report.recovery().replayed());
            assertEquals(5, report.recovery().mappings());
            assertEquals(0, report.recovery().inFlight()); // b3's allocation was the record cut short

            Map<Path, byte[]> after = contents(root.resolve("master"));
            assertEquals(before.keySet(), after.keySet());
            for (Path file : before.keySet()) {
                assertArrayEquals(before.get(file), after.get(file), file::toString);
            }
        }

        @Test
        void with_a_corrupt_record_in_the_middle_of_the_log_fails_naming_the_segment_and_offset() throws Exception {
            Path segment;
            try (StateFixture state = new StateFixture(root, true)) {
                state.standardState();
                state.durable();
                segment = state.segment();
            }
            long frame = StateFixture.frameOffsets(segment).get(5);
            FileDamage.flipLowestBit(segment, frame + 8 + 3);
            SnapshotVerifier.Report report = SnapshotVerifier.verify(root.resolve("master"));
            assertFalse(report.passed());
            assertEquals(1, report.errors(), () -> errors(report)); // recovery fails at the same place: reported once
            Problem problem = report.problems().get(0);
            assertEquals(segment, problem.file());
            assertEquals(frame, problem.offset());
            assertTrue(problem.message().startsWith("record fails its CRC32C (a whole record follows at byte "), problem.message());
            assertFalse(report.wal().ok());
            assertEquals(5, report.wal().records());
            assertFalse(report.recovery().ok());
        }

        @Test
        void whose_log_starts_after_the_newest_snapshot_fails_naming_the_missing_records() throws Exception {
            try (StateFixture state = new StateFixture(root, true)) {
                state.commit("t", "k", 1, 1);
                state.snapshot(); // covers 1..2
                state.commit("t", "k2", 1, 1);
                state.durable();
            }
            // The log as if records 1..3 had been deleted: one segment holding only record 4, named for it.
            Path dir = root.resolve("master");
            Path segment = WalSegments.list(dir).get(0).path();
            List<Long> frames = StateFixture.frameOffsets(segment);
            byte[] bytes = Files.readAllBytes(segment);
            Files.delete(segment);
            Files.write(dir.resolve(WalSegments.fileName(4)), java.util.Arrays.copyOfRange(bytes, frames.get(3).intValue(), bytes.length));

            SnapshotVerifier.Report report = SnapshotVerifier.verify(dir);
            assertFalse(report.passed());
            assertEquals("the log starts at record 4 but the newest usable snapshot covers records up to 2: records 3 to 3 are missing",
                    report.problems().get(0).message(), () -> errors(report));
        }

        @Test
        void with_an_overlap_only_after_replay_fails_naming_both_sides() throws Exception {
            Path dir = root.resolve("master");
            try (StateFixture state = new StateFixture(root, true)) {
                state.commit("t", "k", 1, 1);
                state.durable();
            }
            // A hand-made snapshot covering record 0 that already holds a mapping on the page the log's allocation takes.
            Path segment = WalSegments.list(dir).get(0).path();
            List<Long> frames = StateFixture.frameOffsets(segment);
            io.mcctl.master.proto.v1.WalRecord first = io.mcctl.master.proto.v1.WalRecord.parseFrom(
                    java.util.Arrays.copyOfRange(Files.readAllBytes(segment), (int) (frames.get(0) + 8), (int) (long) frames.get(1)));
            io.mcctl.master.proto.v1.PlacementRecord taken = first.getAllocated().getPlacement();
            Path snapshot = StateFixture.writeSnapshot(dir, 0,
                    List.of(StateFixture.mapping("other", "squatter", taken.getBucket(), taken.getOffset(), 1)), List.of(), List.of());
            SnapshotVerifier.Report report = SnapshotVerifier.verify(dir);
            assertFalse(report.passed());
            assertEquals(1, report.errors(), () -> errors(report));
            Problem problem = report.problems().get(0);
            assertEquals(dir, problem.file());
            assertTrue(problem.message().startsWith("after recovery from " + snapshot.getFileName() + " and 2 log records: "), problem.message());
            assertTrue(problem.message().contains("mapping of key 'squatter' of tenant 'other'"), problem.message());
            assertTrue(problem.message().contains("mapping of key 'k' of tenant 't'"), problem.message());
        }

        @Test
        void that_is_empty_fails_saying_what_it_expected() throws Exception {
            Path dir = Files.createDirectories(root.resolve("empty"));
            SnapshotVerifier.Report report = SnapshotVerifier.verify(dir);
            assertFalse(report.passed());
            assertTrue(report.problems().get(0).message().startsWith("holds no snapshot"), () -> errors(report));
        }
    }

    static Map<Path, byte[]> contents(Path dir) throws Exception {
        Map<Path, byte[]> out = new HashMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.toList()) {
                out.put(f, Files.readAllBytes(f));
            }
        }
        return out;
    }
}
