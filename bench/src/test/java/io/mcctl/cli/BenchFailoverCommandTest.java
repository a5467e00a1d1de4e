package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code mcctl bench failover} at a tiny size: real etcd, real --ha master processes, real kills and SIGTERMs. */
@Timeout(300)
@Tag("process")
class BenchFailoverCommandTest {

    @Test
    void every_round_kills_or_stops_the_leader_and_ends_with_an_offload_through_the_new_one_and_the_ha_comparison_reports_both_modes() throws Exception {
        CliRun run = CliRun.run("bench", "failover", "--mappings", "600", "--rounds", "2", "--throughput-rounds", "1", "--throughput-keys", "512",
                "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        assertEquals("failover", report.get("benchmark").asText());
        assertEquals(5, report.get("lease_ttl_s").asInt());
        assertTrue(report.get("mappings").asLong() >= 512, run.out()); // 8 callers x one batch of 64, and what the round's load added
        JsonNode rounds = report.get("rounds");
        assertEquals(2, rounds.size(), run.out());
        long lastEpoch = 0;
        for (JsonNode round : rounds) {
            assertTrue(round.get("first_offload_ok").asBoolean(), round::toString);
            assertNotEquals(round.get("killed").asText(), round.get("new_leader").asText(), round::toString);
            assertTrue(round.get("epoch").asLong() > lastEpoch, round::toString);
            lastEpoch = round.get("epoch").asLong();
            assertTrue(round.get("takeover_mappings").asLong() >= 512, round::toString);
            assertTrue(round.get("kill_to_first_offload_ms").asDouble() >= round.get("lease_expiry_ms").asDouble(), round::toString);
            assertTrue(round.get("offload_attempts").asInt() >= 1, round::toString);
            for (String figure : List.of("lease_expiry_ms", "election_ms", "takeover_ms", "takeover_records_read", "standby_back_ms")) {
                assertTrue(round.get(figure).asDouble() >= 0, figure + ": " + round);
            }
        }
        // The second round killed the master that took over in the first.
        assertEquals(rounds.get(0).get("new_leader").asText(), rounds.get(1).get("killed").asText());
        for (String figure : List.of("kill_to_first_offload_ms", "lease_expiry_ms", "election_ms", "takeover_ms", "client_ms", "standby_back_ms")) {
            JsonNode spread = report.get("summary").get(figure);
            assertTrue(spread.get("min").asDouble() <= spread.get("median").asDouble(), figure + ": " + spread);
            assertTrue(spread.get("median").asDouble() <= spread.get("max").asDouble(), figure + ": " + spread);
        }
        // Then as many stops with SIGTERM: the stopping leader exits having handed over, and a standby leads after it.
        JsonNode stops = report.get("sigterm_rounds");
        assertEquals(2, stops.size(), run.out());
        for (JsonNode round : stops) {
            assertTrue(round.get("stepped_down").asBoolean(), round::toString);
            assertTrue(round.get("first_offload_ok").asBoolean(), round::toString);
            assertNotEquals(round.get("stopped").asText(), round.get("new_leader").asText(), round::toString);
            assertTrue(round.get("epoch").asLong() > lastEpoch, round::toString);
            lastEpoch = round.get("epoch").asLong();
            assertTrue(round.get("sigterm_to_first_offload_ms").asDouble() >= round.get("key_released_ms").asDouble(), round::toString);
        }
        for (String figure : List.of("sigterm_to_first_offload_ms", "key_released_ms", "election_ms", "takeover_ms", "client_ms")) {
            JsonNode spread = report.get("sigterm_summary").get(figure);
            assertTrue(spread.get("min").asDouble() <= spread.get("max").asDouble(), figure + ": " + spread);
        }
        JsonNode throughput = report.get("throughput");
        assertEquals(2, throughput.get("rounds").size(), throughput::toString);
        assertEquals(List.of("without --ha", "with --ha"), List.of(throughput.get("rounds").get(0).get("mode").asText(),
                throughput.get("rounds").get(1).get("mode").asText()));
        for (JsonNode row : throughput.get("rounds")) {
            assertEquals(512, row.get("keys").asLong(), row::toString);
            assertTrue(row.get("master_cpu_us_per_key").asDouble() > 0, row::toString); // read from the master's own /proc
        }
        assertEquals(0, throughput.get("failures").asLong(), throughput::toString);
        assertTrue(throughput.get("keys_per_s_ha_over_plain_median").asDouble() > 0, throughput::toString);
        assertTrue(throughput.get("master_cpu_per_key_ha_over_plain").asDouble() > 0, throughput::toString);
    }

    @Test
    void a_missing_etcd_is_one_line_naming_the_debian_package() {
        CliRun run = CliRun.run("bench", "failover", "--etcd", "/nonexistent/etcd").expectExit(ExitCodes.FAILED);
        assertEquals(1, run.err().strip().lines().count(), run.err());
        assertTrue(run.err().contains("/nonexistent/etcd") && run.err().contains("etcd-server"), run.err());
    }

    @Test
    void bad_flags_are_one_line_each_naming_the_value_and_what_is_allowed() {
        for (List<String> bad : List.of(List.of("--rounds", "0"), List.of("--mappings", "100"), List.of("--lease-ttl", "1500ms"),
                List.of("--throughput-rounds", "-1"), List.of("--throughput-keys", "10"))) {
            CliRun run = CliRun.run("bench", "failover", bad.get(0), bad.get(1)).expectExit(ExitCodes.USAGE);
            assertEquals(1, run.err().strip().lines().count(), run.err());
            assertTrue(run.err().contains(bad.get(0)) && run.err().contains(bad.get(1)) && run.err().contains("allowed"), run.err());
        }
    }
}
