package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** mcctl demo owner-death and mcctl bench crossnode, small, with their real master and node processes. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
@Tag("process")
class OwnerCouplingCommandsTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void the_owner_death_demo_shows_local_disk_objects_lost_and_page_mode_objects_kept() throws Exception {
        CliRun run = CliRun.run("demo", "owner-death", "--objects", "2", "--size", "4KiB", "--client-ttl", "2s", "-o", "json").expectOk();
        JsonNode report = JSON.readTree(run.out());
        assertTrue(report.get("as_described").asBoolean(), run.out());
        assertEquals(2, report.get("local_disk_before").asInt());
        assertEquals(0, report.get("local_disk_after").asInt());
        assertEquals(2, report.get("local_disk_files_intact").asInt());
        assertEquals(2, report.get("distributed_disk_after_byte_exact").asInt());
        assertEquals(2, report.get("cleaned_replicas").asInt());
    }

    @Test
    void bench_crossnode_reports_both_paths_and_their_ratio() throws Exception {
        CliRun run = CliRun.run("bench", "crossnode", "--objects", "3", "--rounds", "1", "--sizes", "4KiB", "-o", "json").expectOk();
        JsonNode c = JSON.readTree(run.out()).get("cases").get(0);
        assertEquals(4096, c.get("object_size").asLong());
        assertEquals(3, c.get("local_disk_via_owner").get("reads").asInt());
        assertEquals(3, c.get("distributed_disk_pread").get("reads").asInt());
        assertTrue(c.get("latency_ratio").asDouble() > 0, run.out());
    }

    @Test
    void bench_layout_counts_a_file_per_key_against_a_few_bucket_files_and_both_know_every_object_after_a_restart() throws Exception {
        CliRun run = CliRun.run("bench", "layout", "--objects", "300", "-o", "json").expectOk();
        JsonNode models = JSON.readTree(run.out()).get("models");
        assertEquals(300, models.get(0).get("filesCreated").asLong(), run.out());
        assertEquals(300, models.get(0).get("knownAfterRestart").asLong(), run.out());
        assertTrue(models.get(1).get("filesCreated").asLong() < 300, run.out());
        assertEquals(300, models.get(1).get("knownAfterRestart").asLong(), run.out());
    }
}
