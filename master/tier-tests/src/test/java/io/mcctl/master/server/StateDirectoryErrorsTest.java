package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.durability.StateLock;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A state directory that cannot be written, made so for root too: the directory moved away under a running master and
 * a regular file put in its place (permissions do not stop root; a path through a regular file does). The log writes
 * on in its open segment until it must start the next; every error then names the operation, the file and the
 * system's reason.
 */
@Timeout(60)
class StateDirectoryErrorsTest {

    @TempDir
    Path dir;

    @Test
    void a_log_roll_and_a_snapshot_into_a_state_directory_that_is_gone_name_the_file_the_operation_and_the_reason() throws Exception {
        Path state = dir.resolve("state");
        BucketLayout layout = new BucketLayout(dir.resolve("root"), 8, TierCluster.PAGE, 16L << 20);
        // Segments of 8 KiB: a few dozen offloads roll the log.
        MasterServer.Options options = MasterServer.Options.builder(layout).fsType("test").stateDir(state)
                .snapshotInterval(Duration.ofMinutes(10)).walSegmentBytes(8 << 10).build();
        try (TierCluster cluster = TierCluster.start(options, 0); MasterClient client = cluster.newClient()) {
            offload(client, "before");
            Files.move(state, dir.resolve("state-moved"));
            Files.writeString(state, "a regular file where the state directory was");

            MasterException snapshot = assertThrows(MasterException.class, client::createSnapshot);
            assertTrue(snapshot.getMessage().contains("snapshot failed: create state directory " + state + ": File exists"), snapshot.getMessage());

            String refusal = null;
            for (int i = 0; i < 2000 && refusal == null; i++) {
                try {
                    offload(client, "k" + i);
                } catch (MasterException e) {
                    refusal = cluster.master().pages().refusal();
                }
            }
            assertNotNull(refusal, "the log never had to start a segment");
            assertTrue(refusal.contains("the write-ahead log failed starting the segment after " + WalSegments.fileName(1) + ": create log segment "
                    + state.resolve("wal-")), refusal);
            assertTrue(refusal.contains(": Not a directory"), refusal);
            assertTrue(client.stats().getChangesRefused().equals(refusal));
        }
    }

    @Test
    void a_lock_on_a_state_directory_under_a_regular_file_names_the_directory_and_the_reason() throws Exception {
        Path file = Files.writeString(dir.resolve("file"), "not a directory");
        Path state = file.resolve("state");
        IOException e = assertThrows(IOException.class, () -> StateLock.acquire(state));
        assertTrue(e.getMessage().equals("create state directory " + state + ": Not a directory"), e.getMessage());
    }

    static void offload(MasterClient client, String key) {
        DistributedDiskDescriptor d = client.allocate("t", key, 100, false).getDistributedDisk();
        ErrorCode committed = client.notifySuccess(List.of(key), List.of("t"), List.of(d)).getResults(0).getError();
        if (committed != ErrorCode.OK) {
            throw new MasterException(committed, "notify of " + key + ": " + committed, false, null);
        }
    }
}
