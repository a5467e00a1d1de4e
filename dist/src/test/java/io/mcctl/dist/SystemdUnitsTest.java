package io.mcctl.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The release's service units pass {@code systemd-analyze verify} (Debian's systemd): every key known and well formed,
 * the launcher they run present and executable, the man pages they name installed. They name /opt/mcctl, where the
 * release is meant to be unpacked; the test verifies them with that prefix replaced by where it unpacked the release.
 */
@Timeout(120)
class SystemdUnitsTest {

    private static final List<String> UNITS = List.of("mcctl-master.service", "mcctl-node.service");

    private static Path dir;
    private static Release release;

    @BeforeAll
    static void unpack(@TempDir Path shared) throws Exception {
        dir = shared;
        release = Release.unpack(dir);
    }

    @Test
    void the_units_pass_systemd_analyze_verify_with_no_warning() throws Exception {
        Path analyze = Release.requireTool("/usr/bin/systemd-analyze", "systemd");
        Path units = Files.createDirectories(dir.resolve("units"));
        for (String unit : UNITS) {
            String text = Files.readString(release.home.resolve("deploy/systemd").resolve(unit), StandardCharsets.UTF_8);
            assertTrue(text.contains("/opt/mcctl/bin/mcctl"), () -> unit + " runs the release's launcher at /opt/mcctl");
            Files.writeString(units.resolve(unit), text.replace("/opt/mcctl/", release.home + "/"), StandardCharsets.UTF_8);
        }
        List<String> command = new java.util.ArrayList<>(List.of(analyze.toString(), "verify"));
        UNITS.forEach(unit -> command.add(units.resolve(unit).toString()));
        // The Documentation= man pages are looked up with man, in the release's share/man.
        Release.Done verify = Release.exec(dir, Map.of("PATH", "/usr/bin:/bin", "MANPATH", release.home.resolve("share/man").toString(),
                "HOME", dir.toString()), Duration.ofSeconds(60), command.toArray(String[]::new));
        assertEquals(0, verify.exitCode(), verify.out() + verify.err());
        assertEquals("", (verify.out() + verify.err()).strip(), "systemd-analyze verify warns");
    }

    @Test
    void the_units_restart_on_failure_reload_tokens_on_sighup_and_run_hardened_as_their_own_user() throws Exception {
        for (String unit : UNITS) {
            List<String> lines = Files.readAllLines(release.home.resolve("deploy/systemd").resolve(unit), StandardCharsets.UTF_8);
            for (String directive : List.of("User=mcctl", "Restart=on-failure", "LimitNOFILE=65536", "StateDirectory=mcctl",
                    "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes")) {
                assertTrue(lines.contains(directive), () -> unit + " has no " + directive);
            }
            // A JIT compiles into executable memory: a unit that forbids it would stop the JVM.
            assertTrue(lines.stream().noneMatch(line -> line.startsWith("MemoryDenyWriteExecute=yes")), unit);
        }
        assertTrue(Files.readAllLines(release.home.resolve("deploy/systemd/mcctl-master.service")).contains("ExecReload=/bin/kill -HUP $MAINPID"),
                "the master's reload sends SIGHUP, which reads the tokens file again");
    }
}
