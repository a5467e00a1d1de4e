package io.mcctl.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The Prometheus rules as shipped pass Debian's promtool: the syntax check and their unit tests (input series, expected alerts). */
@Timeout(120)
class PrometheusRulesTest {

    @TempDir
    Path dir;

    @Test
    void promtool_checks_the_rules_and_their_unit_tests_pass() throws Exception {
        Path promtool = Release.requireTool("/usr/bin/promtool", "prometheus");
        Release release = Release.unpack(dir);
        Path rules = release.home.resolve("deploy/prometheus");
        Map<String, String> env = Map.of("PATH", "/usr/bin:/bin", "HOME", dir.toString());

        Release.Done check = Release.exec(rules, env, Duration.ofSeconds(60), promtool.toString(), "check", "rules", "mcctl-rules.yml");
        assertEquals(0, check.exitCode(), check.out() + check.err());
        assertTrue(check.out().contains("SUCCESS"), check.out());

        Release.Done test = Release.exec(rules.resolve("tests"), env, Duration.ofSeconds(60), promtool.toString(), "test", "rules",
                "mcctl-rules.test.yml");
        assertEquals(0, test.exitCode(), test.out() + test.err());
        assertTrue(test.out().contains("SUCCESS"), test.out());
    }
}
