package io.mcctl.cli.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.cli.McctlProcess;
import io.mcctl.cli.bench.MasterProcess;
import io.mcctl.cli.bench.Signals;
import io.mcctl.cli.bench.TestCertificates;
import io.mcctl.master.security.TokenTable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mcctl master start} with TLS and a tokens file as a real process, the CLI's --tls-ca and --token-file
 * against it, and a real SIGHUP that reloads the tokens while the master keeps serving.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@Tag("process")
class SecuredMasterProcessTest {

    @TempDir
    Path dir;

    private static String entry(String name, String token, String tenants) {
        return "  - name: " + name + "\n    sha256: " + TokenTable.sha256Hex(token) + "\n    tenants: " + tenants + "\n";
    }

    @Test
    void the_cli_speaks_tls_with_a_token_and_sighup_reloads_the_tokens() throws Exception {
        TestCertificates ca = TestCertificates.newCa(dir.resolve("certs"), "ca");
        TestCertificates.Pair server = ca.server("master");
        Path tokens = dir.resolve("tokens.yaml");
        Files.writeString(tokens, "tokens:\n" + entry("first", "tok-first", "[a]"));
        Path first = dir.resolve("first.token");
        Files.writeString(first, "tok-first\n");
        Path second = dir.resolve("second.token");
        Files.writeString(second, "tok-second\n");
        try (McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of(), "--root", dir.resolve("root").toString(),
                "--bucket-count", "4", "--bucket-size", "1MiB",
                "--page-size", "4KiB", "--tls-cert", server.cert().toString(), "--tls-key", server.key().toString(),
                "--tokens-file", tokens.toString())) {
            String[] ls = {"ls", "--master", master.address(), "--tenant", "a", "--tls-ca", ca.caCert().toString()};
            McctlProcess.Done ok = McctlProcess.run(dir, Map.of(), concat(ls, "--token-file", first.toString()));
            assertEquals(0, ok.exitCode(), ok.err());
            McctlProcess.Done byEnv = McctlProcess.run(dir, Map.of("MCCTL_TOKEN", "tok-first", "MCCTL_TLS_CA", ca.caCert().toString()),
                    "ls", "--master", master.address(), "--tenant", "a");
            assertEquals(0, byEnv.exitCode(), byEnv.err());
            McctlProcess.Done notYet = McctlProcess.run(dir, Map.of(), concat(ls, "--token-file", second.toString()));
            assertTrue(notYet.exitCode() != 0 && notYet.err().contains("UNAUTHENTICATED"), notYet.err());
            assertEquals(1, notYet.err().strip().lines().count(), notYet.err());

            // A master started with SIGHUP ignored (this test run under nohup, say) cannot reload: it says so at start.
            assertFalse(master.log().contains("SIGHUP is ignored"), master.log());
            Files.writeString(tokens, "tokens:\n" + entry("first", "tok-first", "[a]") + entry("second", "tok-second", "[a]"));
            Signals.send(master.process().pid(), "HUP");
            waitForLog(master, "tokens reloaded from " + tokens + ": 2 tokens");
            McctlProcess.Done now = McctlProcess.run(dir, Map.of(), concat(ls, "--token-file", second.toString()));
            assertEquals(0, now.exitCode(), now.err());

            Files.writeString(tokens, "tokens: [oops");
            Signals.send(master.process().pid(), "HUP");
            waitForLog(master, "tokens not reloaded, the 2 tokens read before stay in force: " + tokens + ": cannot be read as YAML");
            McctlProcess.Done still = McctlProcess.run(dir, Map.of(), concat(ls, "--token-file", second.toString()));
            assertEquals(0, still.exitCode(), still.err());
            assertTrue(master.process().isAlive());
            assertTrue(!master.log().contains("tok-first") && !master.log().contains("tok-second"), "a token is never logged");
        }
    }

    @Test
    void a_master_started_with_sighup_ignored_says_at_start_that_kill_hup_will_not_reload_its_tokens() throws Exception {
        Path tokens = dir.resolve("tokens.yaml");
        Files.writeString(tokens, "tokens:\n" + entry("first", "tok-first", "[a]"));
        // nohup: the master's JVM starts with SIGHUP ignored, whatever the disposition of the JVM running this test.
        try (MasterProcess master = MasterProcess.start(McctlProcess.jvmOptions("256m"), Duration.ofSeconds(60),
                builder -> {
                    builder.directory(dir.toFile()).environment().remove("MCCTL_CONFIG");
                    builder.command().add(0, "nohup");
                },
                "--root", dir.resolve("root").toString(), "--bucket-count", "4", "--bucket-size", "1MiB", "--page-size", "4KiB",
                "--tokens-file", tokens.toString())) {
            // Logged before the master says it serves, which start() waited for.
            assertTrue(master.log().contains("SIGHUP is ignored by this process (it was started with SIGHUP ignored, as nohup does): "
                    + "kill -HUP will not make it read the tokens file again, only a restart will"), master.log());
        }
        // Started as usual, with the same tokens file, the master says nothing of the kind.
        try (McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of(), "--root", dir.resolve("root").toString(),
                "--bucket-count", "4", "--bucket-size", "1MiB", "--page-size", "4KiB", "--tokens-file", tokens.toString())) {
            assertFalse(master.log().contains("SIGHUP is ignored"), master.log());
        }
    }

    @Test
    void a_bad_tls_file_stops_the_start_with_one_line_and_lays_out_nothing() throws Exception {
        Path missing = dir.resolve("missing.pem");
        McctlProcess.Done done = McctlProcess.run(dir, Map.of(), "master", "start", "--root", dir.resolve("root").toString(),
                "--bind", "127.0.0.1", "--port", "0", "--metrics-port", "0", "--tls-cert", missing.toString(), "--tls-key", missing.toString());
        assertEquals(2, done.exitCode(), done.err());
        assertTrue(done.err().contains("TLS certificate " + missing + " does not exist"), done.err());
        assertTrue(!Files.exists(dir.resolve("root")), "nothing laid out");
    }

    private static String[] concat(String[] a, String... b) {
        String[] all = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }

    private static void waitForLog(McctlProcess.Master master, String text) throws Exception {
        while (!master.log().contains(text)) {
            Thread.sleep(50); // bounded by the test's timeout
        }
    }
}
