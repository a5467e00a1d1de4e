package io.mcctl.cli.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The checker's reading of the log's segment headers, over hand-written lines of {@code mcctl snapshot wal dump}. */
@Timeout(30)
class ChaosCheckerTest {

    private static JsonNode line(String json) throws Exception {
        return ChaosHistory.JSON.readTree(json);
    }

    private static List<String> epochViolations(List<JsonNode> wal) throws Exception {
        ChaosChecker checker = new ChaosChecker();
        JsonNode cleanFsck = line("{\"master\":{},\"errors\":[]}");
        checker.check(List.of(), wal, cleanFsck, 0);
        return checker.violations().stream().filter(v -> v.contains("epoch")).toList();
    }

    @Test
    void a_segment_left_empty_without_a_header_does_not_count_as_a_deposed_leader() throws Exception {
        List<JsonNode> wal = List.of(
                line("{\"type\":\"segment\",\"segment\":\"wal-00000000000000000001.log\",\"bytes\":4096,\"leader_epoch\":3}"),
                line("{\"type\":\"segment\",\"segment\":\"wal-00000000000000000009.log\",\"bytes\":0,\"format_version\":1,\"legacy\":true}"),
                line("{\"type\":\"segment\",\"segment\":\"wal-00000000000000000010.log\",\"bytes\":4096,\"leader_epoch\":4}"));
        assertEquals(List.of(), epochViolations(wal));
    }

    @Test
    void a_segment_of_an_older_epoch_after_a_newer_one_is_a_violation() throws Exception {
        List<JsonNode> wal = List.of(
                line("{\"type\":\"segment\",\"segment\":\"wal-00000000000000000001.log\",\"bytes\":4096,\"leader_epoch\":3}"),
                line("{\"type\":\"segment\",\"segment\":\"wal-00000000000000000009.log\",\"bytes\":4096,\"leader_epoch\":2}"));
        List<String> violations = epochViolations(wal);
        assertEquals(1, violations.size(), violations.toString());
        assertTrue(violations.get(0).contains("wal-00000000000000000009.log"), violations.toString());
    }
}
