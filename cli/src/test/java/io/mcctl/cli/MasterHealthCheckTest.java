package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class MasterHealthCheckTest {

    @TempDir
    Path dir;

    @Test
    void a_failing_mount_check_stops_the_start_in_one_line_and_lays_out_nothing() throws Exception {
        Path root = dir.resolve("root");
        // 256 buckets of 1 TiB cannot fit the filesystem under a temporary directory: the capacity check fails.
        CliRun run = CliRun.run(Map.of("MOONCAKE_DISTRIBUTED_HEALTH_CHECK", "true"), "master", "start", "--root", root.toString(),
                "--bucket-size", "1TiB", "--port", "0", "--metrics-port", "0").expectExit(ExitCodes.FAILED);
        assertEquals(1, run.err().lines().filter(l -> l.startsWith("mcctl: error:")).count(), run.err());
        assertTrue(run.err().contains("health check failed"), run.err());
        assertTrue(run.err().contains("capacity"), run.err());
        assertFalse(Files.exists(root.resolve("mooncake.layout.json")));
        assertFalse(Files.exists(root.resolve("bucket_00.data")));
    }
}
