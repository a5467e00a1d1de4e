package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.mcctl.storage.layout.LayoutMismatchException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class MasterServerTest {

    @TempDir
    Path root;

    static MasterServer.Options options(BucketLayout layout, int port) {
        return MasterServer.Options.builder(layout).fsType("test").port(port).build();
    }

    @Test
    void a_master_lays_out_the_root_and_serves_its_layout() throws IOException {
        BucketLayout layout = TierCluster.smallLayout(root, 8);
        try (MasterServer master = MasterServer.start(options(layout, 0));
             MasterClient client = new MasterClient("127.0.0.1:" + master.port())) {
            assertEquals(8, master.init().created());
            for (int b = 0; b < 8; b++) {
                assertEquals(layout.bucketSize(), Files.size(layout.bucketPath(b)));
            }
            GetLayoutResponse served = client.layout();
            assertEquals(root.toAbsolutePath().normalize().toString(), served.getRootDir());
            assertEquals(8, served.getBucketCount());
            assertEquals(4096, served.getPageSize());
            assertEquals(layout.bucketSize(), served.getBucketSize());
            assertEquals(master.layoutRecord().clusterId(), served.getClusterId());
            assertEquals(LayoutFile.FORMAT_VERSION, served.getFormatVersion());
            assertEquals("test", served.getFsType());
            assertEquals(8 * 256, client.stats().getPagesTotal());
            assertEquals(8, client.stats().getBucketsCount());
        }
    }

    @Test
    void a_restarted_master_keeps_the_cluster_id_and_never_shrinks_a_bucket_file() throws IOException {
        BucketLayout layout = TierCluster.smallLayout(root, 8);
        String clusterId;
        try (MasterServer first = MasterServer.start(options(layout, 0))) {
            clusterId = first.layoutRecord().clusterId();
        }
        try (RandomAccessFile longer = new RandomAccessFile(layout.bucketPath(3).toFile(), "rw")) {
            longer.setLength(layout.bucketSize() + 4096); // something wrote past the end: left alone
        }
        try (RandomAccessFile shorter = new RandomAccessFile(layout.bucketPath(5).toFile(), "rw")) {
            shorter.setLength(4096); // short: extended
        }
        Files.delete(layout.bucketPath(6)); // missing: created
        try (MasterServer second = MasterServer.start(options(layout, 0))) {
            assertEquals(clusterId, second.layoutRecord().clusterId());
            assertEquals(1, second.init().created());
            assertEquals(1, second.init().extended());
            assertEquals(6, second.init().unchanged());
        }
        assertEquals(layout.bucketSize() + 4096, Files.size(layout.bucketPath(3)));
        assertEquals(layout.bucketSize(), Files.size(layout.bucketPath(5)));
        assertEquals(layout.bucketSize(), Files.size(layout.bucketPath(6)));
    }

    @Test
    void a_master_with_settings_that_disagree_with_the_root_does_not_start() throws IOException {
        try (MasterServer first = MasterServer.start(options(TierCluster.smallLayout(root, 8), 0))) {
            assertTrue(first.port() > 0);
        }
        LayoutMismatchException refused = assertThrows(LayoutMismatchException.class,
                () -> MasterServer.start(options(TierCluster.smallLayout(root, 16), 0)).close());
        assertTrue(refused.getMessage().contains("bucket_count is 16 here but 8 in the layout"), refused.getMessage());
    }

    @Test
    void a_port_in_use_is_refused_naming_the_address() throws IOException {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            IOException refused = assertThrows(IOException.class,
                    () -> MasterServer.start(options(TierCluster.smallLayout(root, 8), taken.getLocalPort())).close());
            assertTrue(refused.getMessage().contains("127.0.0.1:" + taken.getLocalPort()), refused.getMessage());
            assertTrue(refused.getMessage().contains("gRPC"), refused.getMessage());
        }
    }
}
