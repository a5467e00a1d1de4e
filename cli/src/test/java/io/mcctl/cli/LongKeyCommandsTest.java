package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Commands on the longest keys allowed (4,096 UTF-8 bytes) that do not exist: the miss and its exit code, in one line. */
@Timeout(60)
class LongKeyCommandsTest {

    @TempDir
    Path dir;

    @Test
    void stat_and_rm_of_a_missing_key_of_4096_bytes_exit_not_found_naming_it_by_its_start_and_length() throws Exception {
        BucketLayout layout = new BucketLayout(dir.resolve("root"), 2, 4096, 1 << 20);
        try (MasterServer master = MasterServer.start(MasterServer.Options.builder(layout).fsType("test").build())) {
            String address = "127.0.0.1:" + master.port();
            for (String key : List.of("é".repeat(2048), "k".repeat(4096))) {
                for (String command : List.of("stat", "rm")) {
                    CliRun run = CliRun.run(command, key, "--master", address).expectExit(ExitCodes.NOT_FOUND);
                    assertEquals(1, run.err().strip().lines().count(), run.err());
                    assertTrue(run.err().contains(key.substring(0, 16)) && run.err().contains("(4096 bytes)"), run.err());
                    assertTrue(run.err().length() < 400, run.err());
                }
            }
        }
    }
}
