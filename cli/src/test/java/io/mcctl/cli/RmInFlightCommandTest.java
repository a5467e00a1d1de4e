package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.server.MasterServer;
import io.mcctl.master.server.MasterSettings;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code mcctl rm --in-flight} against a real master on a loopback port, across a restart of that master. */
@Timeout(60)
class RmInFlightCommandTest {

    static final long PAGE = 4096;

    @TempDir
    Path temp;

    MasterServer.Options options(BucketLayout layout) {
        return MasterServer.Options.builder(layout).snapshotInterval(null)
                .settings(Map.of(MasterSettings.ALLOCATION_GRACE.key(), "30s")).build();
    }

    @Test
    void dropping_an_in_flight_allocation_frees_the_key_keeps_its_pages_quarantined_and_survives_a_restart() throws Exception {
        Path root = Files.createDirectories(temp.resolve("root"));
        BucketLayout layout = new BucketLayout(root, 2, PAGE, 1 << 20);
        DistributedDiskDescriptor stuck;
        try (MasterServer master = MasterServer.start(options(layout));
             MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(10))) {
            String address = "127.0.0.1:" + master.port();
            stuck = client.allocate("default", "stuck", 3 * PAGE, false).getDistributedDisk();

            CliRun run = CliRun.run("rm", "--master", address, "--in-flight", "stuck").expectOk();
            assertTrue(run.out().contains("dropped the in-flight allocation of stuck"), run.out());
            assertTrue(run.out().contains("quarantined until"), run.out());
            GetStatsResponse stats = client.stats();
            assertEquals(0, stats.getInFlightAllocations());
            assertEquals(3, stats.getQuarantinedPages(), "its writer may still be writing: the pages wait out deadline plus grace");

            CliRun again = CliRun.run("rm", "--master", address, "--in-flight", "stuck").expectExit(ExitCodes.NOT_FOUND);
            assertTrue(again.err().contains("no allocation in flight"), again.err());
            CliRun bad = CliRun.run("rm", "--master", address, "--in-flight", "").expectExit(ExitCodes.USAGE);
            assertEquals(1, bad.err().lines().count(), bad.err());
            assertEquals(stats.getQuarantinedPages(), client.stats().getQuarantinedPages(), "refused input changed nothing");

            DistributedDiskDescriptor fresh = client.allocate("default", "stuck", PAGE, false).getDistributedDisk();
            boolean overlaps = fresh.getFilePath().equals(stuck.getFilePath()) && fresh.getOffset() < stuck.getOffset() + 3 * PAGE
                    && stuck.getOffset() < fresh.getOffset() + PAGE;
            assertTrue(!overlaps, "the key is allocated again at once, on other pages");
            client.free("default", "stuck", fresh);
        }
        try (MasterServer master = MasterServer.start(options(layout));
             MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(10))) {
            GetStatsResponse stats = client.stats();
            assertEquals(0, stats.getInFlightAllocations(), "the drop was logged: no allocation comes back");
            assertEquals(3, stats.getQuarantinedPages(), "and its pages are still quarantined after the restart");
        }
    }

    @Test
    void removing_a_key_that_is_being_written_says_so_and_points_at_rm_in_flight() throws Exception {
        Path root = Files.createDirectories(temp.resolve("root"));
        try (MasterServer master = MasterServer.start(options(new BucketLayout(root, 2, PAGE, 1 << 20)));
             MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(10))) {
            String address = "127.0.0.1:" + master.port();
            client.allocate("default", "busy", PAGE, false);

            CliRun run = CliRun.run("rm", "--master", address, "busy").expectExit(ExitCodes.FAILED);
            assertEquals(1, run.err().lines().count(), run.err());
            assertTrue(run.err().startsWith("mcctl: error: busy: it is being written (an allocation in flight"), run.err());
            assertTrue(run.err().strip().endsWith("or drop the allocation with mcctl rm --in-flight busy"), run.err());
            assertEquals(1, client.stats().getInFlightAllocations(), "rm changed nothing of the allocation");

            CliRun both = CliRun.run("rm", "--master", address, "busy", "absent").expectExit(ExitCodes.NOT_FOUND);
            List<String> err = both.err().lines().toList();
            assertEquals(2, err.size(), both.err());
            assertTrue(err.get(0).contains("busy: it is being written"), both.err());
            assertTrue(err.get(1).contains("absent") && err.get(1).contains("not found"), both.err());

            CliRun.run("rm", "--master", address, "--in-flight", "busy").expectOk();
            assertEquals(0, client.stats().getInFlightAllocations());
        }
    }
}
