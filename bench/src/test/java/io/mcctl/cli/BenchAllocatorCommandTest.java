package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class BenchAllocatorCommandTest {

    @Test
    void json_report_has_every_case_with_both_allocators_and_their_ratio() throws Exception {
        CliRun run = CliRun.run("bench", "allocator", "--ops", "2000", "--rfc-budget-ms", "20", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        JsonNode cases = report.get("cases");
        assertEquals(4, cases.size());
        for (JsonNode c : cases) {
            for (String field : new String[] {"mcctl_ns_per_pair", "rfc_ns_per_pair", "speedup", "mcctl_failures", "rfc_failures",
                    "fragmentation_score", "start_fill"}) {
                assertTrue(c.has(field), () -> field + " missing in " + c);
            }
            assertEquals(2000, c.get("mcctl_pairs").asLong());
            assertTrue(c.get("rfc_pairs").asLong() > 0);
            assertTrue(Math.abs(c.get("start_fill").asDouble() - c.get("target_fill").asDouble()) < 0.01, c::toString);
        }
        assertTrue(report.get("memory_bytes_256_buckets_x_65536_pages").asLong() > 256 * 8192);
        assertTrue(report.has("scaling_1m_over_64k_at_90pct"));
        assertTrue(report.get("machine").has("cores"));
    }

    @Test
    void too_few_ops_is_a_usage_error() {
        CliRun run = CliRun.run("bench", "allocator", "--ops", "5").expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("--ops 5"), run.err());
    }
}
