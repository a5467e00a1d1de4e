package io.mcctl.tools.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.testkit.FileDamage;
import io.mcctl.testkit.StateFixture;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class StateExportTest {

    @TempDir
    Path root;

    @Test
    void emits_a_meta_line_then_one_parsable_line_per_record() throws Exception {
        try (StateFixture state = new StateFixture(root, true)) {
            state.standardState();
            Path file = state.snapshot();
            StringWriter out = new StringWriter();
            StateExport.Counts counts = StateExport.export(file, out);
            assertEquals(new StateExport.Counts(5, 1, 1), counts);

            List<JsonNode> lines = new ArrayList<>();
            ObjectMapper json = new ObjectMapper();
            for (String line : out.toString().split("\n")) {
                lines.add(json.readTree(line));
            }
            assertEquals(8, lines.size());
            Map<String, Integer> types = new TreeMap<>();
            for (JsonNode line : lines) {
                types.merge(line.get("type").asText(), 1, Integer::sum);
            }
            assertEquals(Map.of("meta", 1, "mapping", 5, "in_flight", 1, "quarantine", 1), types);

            JsonNode meta = lines.get(0);
            assertEquals("meta", meta.get("type").asText());
            assertEquals(state.layoutRecord.clusterId(), meta.get("cluster_id").asText());
            assertEquals(17, meta.get("wal_sequence").asLong());
            assertEquals("wal", meta.get("settings").get("durability").asText());

            JsonNode b3 = lines.stream().filter(l -> l.get("type").asText().equals("in_flight")).findFirst().orElseThrow();
            assertEquals("beta", b3.get("tenant").asText());
            assertEquals("b3", b3.get("key").asText());
            assertEquals(4097, b3.get("size").asLong());
            assertEquals(2, b3.get("pages").asLong());
            assertTrue(b3.get("deadline").asText().endsWith("Z"));

            JsonNode quarantine = lines.stream().filter(l -> l.get("type").asText().equals("quarantine")).findFirst().orElseThrow();
            assertEquals(2, quarantine.get("pages").asLong());
            assertEquals(quarantine.get("first_page").asLong() * StateFixture.PAGE, quarantine.get("offset").asLong());

            JsonNode a1 = lines.stream().filter(l -> l.path("key").asText().equals("a1")).findFirst().orElseThrow();
            assertEquals("00000011", a1.get("crc32c").asText());
        }
    }

    @Test
    void a_corrupt_snapshot_writes_nothing_and_throws_naming_the_section() throws Exception {
        try (StateFixture state = new StateFixture(root, false)) {
            state.standardState();
            Path file = state.snapshot();
            SnapshotFile.SectionInfo quarantine = SnapshotFile.open(file).info(SnapshotFile.Section.QUARANTINE);
            FileDamage.flipLowestBit(file, quarantine.offset() + 2);
            StringWriter out = new StringWriter();
            CorruptStateException e = assertThrows(CorruptStateException.class, () -> StateExport.export(file, out));
            assertEquals(quarantine.offset(), e.offset());
            assertTrue(e.getMessage().endsWith("QUARANTINE section fails its CRC32C"), e.getMessage());
            assertEquals("", out.toString());
        }
    }
}
