package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class BenchPagesCommandTest {

    @Test
    void json_report_has_every_phase_over_a_table_of_the_size_asked_for() throws Exception {
        CliRun run = CliRun.run("bench", "pages", "--mappings", "5000", "--seconds", "0.2", "--working-set", "100", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        JsonNode phases = report.get("phases");
        assertEquals(4, phases.size());
        assertTrue(report.get("key_length").isNull(), report::toString); // keys as short as their numbers
        assertEquals("offload cycle, filling the table", phases.get(0).get("phase").asText());
        assertTrue(phases.get(0).get("mappings_at_end").asLong() >= 5000, phases::toString);
        assertEquals("lookup, 100 keys", phases.get(3).get("phase").asText());
        for (JsonNode phase : phases) {
            assertEquals(0, phase.get("failures").asLong(), phase::toString);
            assertTrue(phase.get("keys").asLong() > 0 && phase.get("cpu_ns_per_key").asDouble() > 0, phase::toString);
            double share = phase.get("collector_share_of_cpu").asDouble();
            assertTrue(share >= 0 && share <= 1, phase::toString);
        }
        // Lookups create no mappings; offload cycles do.
        assertEquals(phases.get(1).get("mappings_at_end").asLong(), phases.get(3).get("mappings_at_end").asLong());
        assertTrue(phases.get(1).get("mappings_at_end").asLong() > phases.get(0).get("mappings_at_end").asLong());
    }

    @Test
    void keys_of_the_length_asked_for_are_offloaded_and_found() throws Exception {
        CliRun run = CliRun.run("bench", "pages", "--mappings", "2000", "--seconds", "0.2", "--working-set", "100", "--key-length", "80",
                "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        assertEquals(80, report.get("key_length").asInt());
        for (JsonNode phase : report.get("phases")) {
            assertEquals(0, phase.get("failures").asLong(), phase::toString);
        }
    }

    @Test
    void a_key_length_out_of_range_is_a_usage_error() {
        for (String bad : new String[] {"7", "1025", "0"}) {
            CliRun run = CliRun.run("bench", "pages", "--mappings", "2000", "--key-length", bad).expectExit(ExitCodes.USAGE);
            assertTrue(run.err().contains("invalid --key-length " + bad + ": allowed is 8 to 1024 characters"), run.err());
        }
    }

    @Test
    void a_working_set_larger_than_the_table_is_a_usage_error() {
        CliRun run = CliRun.run("bench", "pages", "--mappings", "2000", "--working-set", "3000").expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("invalid --working-set 3000: allowed is 1 to --mappings (2000)"), run.err());
    }
}
