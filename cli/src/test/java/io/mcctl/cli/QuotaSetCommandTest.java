package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class QuotaSetCommandTest {

    @TempDir
    Path root;

    @Test
    void sets_and_removes_a_quota_and_refuses_bad_input_in_one_line_changing_nothing() throws Exception {
        BucketLayout layout = new BucketLayout(root, 2, 4096, 1 << 20);
        try (MasterServer master = MasterServer.start(MasterServer.Options.builder(layout).fsType("test").build())) {
            String address = "127.0.0.1:" + master.port();
            CliRun set = CliRun.run("quota", "set", "team-a", "2MiB", "--master", address).expectOk();
            assertTrue(set.out().contains("tenant team-a: quota 2097152 bytes (was none)"), set.out());
            assertEquals(Map.of("team-a", 2L << 20), master.pages().quotas());
            CliRun json = CliRun.run("quota", "set", "team-a", "none", "--master", address, "-o", "json").expectOk();
            assertTrue(json.out().replaceAll("\\s", "").contains("\"previous_quota_bytes\":2097152"), json.out());
            assertEquals(Map.of(), master.pages().quotas());
            for (String[] bad : new String[][] {{"team a", "1MiB"}, {"team-a", "lots"}, {"team-a", "0"}}) {
                CliRun refused = CliRun.run("quota", "set", bad[0], bad[1], "--master", address).expectExit(ExitCodes.USAGE);
                assertEquals(1, refused.err().lines().filter(l -> l.startsWith("mcctl: error:")).count(), refused.err());
            }
            assertEquals(Map.of(), master.pages().quotas(), "refused input changed nothing");
        }
    }
}
