package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A client that saw its master go away reaches it again with its first read once it is back. */
@Timeout(60)
class MasterRestartReadTest {

    @TempDir
    Path root;

    @Test
    void the_first_read_after_the_master_is_back_reaches_it_instead_of_waiting_out_the_reconnect_backoff() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 4);
        MasterServer first = MasterServer.start(MasterServerTest.options(layout, 0));
        int port = first.port();
        try (MasterClient client = new MasterClient("127.0.0.1:" + port, Duration.ofSeconds(5))) {
            long pages = client.stats().getPagesTotal();
            first.close();
            // Reads while the master is down fail as unreachable; meanwhile the channel's reconnect backoff grows
            // (about 1 s, then 1.6 s), so that without a reset the channel would still be waiting when the master is back.
            long downUntil = System.nanoTime() + 1_500_000_000L;
            while (System.nanoTime() < downUntil) {
                MasterException down = assertThrows(MasterException.class, client::stats);
                assertTrue(down.unreachable(), down.getMessage());
                Thread.sleep(200);
            }
            try (MasterServer second = MasterServer.start(MasterServerTest.options(layout, port))) {
                assertEquals(pages, client.stats().getPagesTotal(), "one read, at once, reaches the restarted master");
            }
        }
    }
}
