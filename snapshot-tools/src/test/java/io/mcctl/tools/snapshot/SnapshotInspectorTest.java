package io.mcctl.tools.snapshot;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.testkit.FileDamage;
import io.mcctl.testkit.StateFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class SnapshotInspectorTest {

    @TempDir
    Path root;

    @Test
    void counters_and_pages_per_bucket_match_the_state_that_was_snapshotted() throws Exception {
        try (StateFixture state = new StateFixture(root, true)) {
            state.standardState();
            Path file = state.snapshot();
            SnapshotInspector.Report report = SnapshotInspector.inspect(file, SnapshotInspector.KeyFilter.NONE);

            assertTrue(report.ok(), report.problems()::toString);
            assertEquals(SnapshotFile.FORMAT_VERSION, report.formatVersion());
            assertEquals(state.layoutRecord.clusterId(), report.meta().getClusterId());
            assertEquals(17, report.meta().getWalSequence()); // 7 allocations + 7 commits + 2 removes + 1 allocation
            assertEquals("wal", report.meta().getSettingsMap().get("durability"));
            assertEquals(new SnapshotInspector.Counters(5, 1, 1, 2, 2, 13, 64), report.counters());
            assertArrayEquals(state.pagesPerBucket, report.pagesPerBucket());
            assertEquals(List.of("MAPPINGS", "PENDING", "QUARANTINE", "META"),
                    report.sections().stream().map(s -> s.info().section().name()).toList());
            assertTrue(report.sections().stream().allMatch(SnapshotRecords.SectionStatus::crcOk));
            assertEquals(5, report.sections().get(0).info().records());
            assertNull(report.keys());
        }
    }

    @Test
    void keys_are_listed_in_tenant_and_key_order_and_filtered_by_tenant_prefix_and_limit() throws Exception {
        try (StateFixture state = new StateFixture(root, false)) {
            state.standardState();
            Path file = state.snapshot();

            List<String> all = keys(file, new SnapshotInspector.KeyFilter(true, null, "", 0));
            assertEquals(List.of("alpha/a1", "alpha/a2", "alpha/doc/a3", "beta/b1", "beta/doc/b2"), all);
            assertEquals(List.of("beta/b1", "beta/doc/b2"), keys(file, new SnapshotInspector.KeyFilter(true, "beta", "", 0)));
            assertEquals(List.of("alpha/doc/a3", "beta/doc/b2"), keys(file, new SnapshotInspector.KeyFilter(true, null, "doc/", 0)));
            assertEquals(List.of("alpha/a1", "alpha/a2"), keys(file, new SnapshotInspector.KeyFilter(true, null, "", 2)));

            SnapshotInspector.Report limited = SnapshotInspector.inspect(file, new SnapshotInspector.KeyFilter(true, "alpha", "", 1));
            assertEquals(3, limited.keysMatching());
            SnapshotInspector.KeyEntry a1 = limited.keys().get(0);
            assertEquals(5000, a1.size());
            assertEquals(2, a1.pages());
            assertEquals(0x11, a1.crc32c());
            assertEquals("00000011", a1.json().get("crc32c"));
        }
    }

    private static List<String> keys(Path file, SnapshotInspector.KeyFilter filter) throws Exception {
        return SnapshotInspector.inspect(file, filter).keys().stream().map(k -> k.tenant() + "/" + k.key()).toList();
    }

    @Test
    void a_section_that_fails_its_checksum_is_marked_and_reported_with_its_offset() throws Exception {
        try (StateFixture state = new StateFixture(root, false)) {
            state.standardState();
            Path file = state.snapshot();
            SnapshotFile.SectionInfo mappings = SnapshotFile.open(file).info(SnapshotFile.Section.MAPPINGS);
            // The last byte of the section is inside a record's checksum field: it still decodes, the CRC does not hold.
            FileDamage.flipLowestBit(file, mappings.offset() + mappings.length() - 1);

            SnapshotInspector.Report report = SnapshotInspector.inspect(file, SnapshotInspector.KeyFilter.NONE);
            assertFalse(report.sections().get(0).crcOk());
            assertTrue(report.sections().get(1).crcOk());
            assertEquals(1, report.problems().size());
            Problem problem = report.problems().get(0);
            assertEquals(file, problem.file());
            assertEquals(mappings.offset(), problem.offset());
            assertEquals("MAPPINGS section fails its CRC32C", problem.message());
        }
    }

    @Test
    void a_file_that_is_not_a_snapshot_throws_naming_the_file_and_offset() throws Exception {
        Path file = root.resolve("snapshot-00000000000000000001.snap");
        Files.writeString(file, "this is not a snapshot, but it is long enough to have a header and a trailer");
        CorruptStateException e = assertThrows(CorruptStateException.class,
                () -> SnapshotInspector.inspect(file, SnapshotInspector.KeyFilter.NONE));
        assertEquals(file, e.file());
        assertEquals(0, e.offset());
        assertTrue(e.getMessage().contains("bad magic"), e.getMessage());
    }
}
