package io.mcctl.master.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.storage.layout.LayoutFile;
import io.mcctl.storage.layout.LayoutMismatchException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A node checks its view of the root against the master's layout before it reads or writes a byte. */
@Timeout(60)
class MountCheckTest {

    @TempDir
    Path dir;
    Path root;
    TierCluster cluster;

    @BeforeEach
    void start() throws IOException {
        root = dir.resolve("tier");
        cluster = TierCluster.start(root, 8, 0);
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    static void assertOneLine(String message) {
        assertFalse(message.contains("\n") || message.contains("\r"), "one line: " + message);
    }

    @Test
    void a_node_that_does_not_see_the_root_is_refused_naming_the_root_and_the_mount() throws IOException {
        Files.move(root, dir.resolve("elsewhere"));
        IOException refused = assertThrows(IOException.class, cluster::addNode);
        String message = refused.getMessage();
        assertOneLine(message);
        assertTrue(message.contains(root.toString()), message);
        assertTrue(message.contains("mounted"), "says to check the mount: " + message);

        Files.move(dir.resolve("elsewhere"), root);
        assertEquals(0, cluster.addNode().tier().openFiles(), "with the root back, the node connects");
    }

    @Test
    void a_node_whose_root_holds_another_clusters_layout_is_refused_naming_both_cluster_ids() throws IOException {
        String ours = cluster.master().layoutRecord().clusterId();
        String theirs = UUID.randomUUID().toString();
        Path record = root.resolve(LayoutFile.FILE_NAME);
        String json = Files.readString(record, StandardCharsets.UTF_8);
        assertTrue(json.contains(ours));
        Files.writeString(record, json.replace(ours, theirs), StandardCharsets.UTF_8);

        LayoutMismatchException refused = assertThrows(LayoutMismatchException.class, cluster::addNode);
        String message = refused.getMessage();
        assertOneLine(message);
        assertTrue(message.contains(ours), "names the master's cluster: " + message);
        assertTrue(message.contains(theirs), "names the cluster this node mounted: " + message);
    }

    @Test
    void a_node_whose_root_has_no_layout_record_is_refused() throws IOException {
        Files.delete(root.resolve(LayoutFile.FILE_NAME));
        LayoutMismatchException refused = assertThrows(LayoutMismatchException.class, cluster::addNode);
        assertOneLine(refused.getMessage());
        assertTrue(refused.getMessage().contains(LayoutFile.FILE_NAME), refused.getMessage());
        assertTrue(refused.getMessage().contains(root.toString()), refused.getMessage());
    }

    @Test
    void a_node_whose_layout_record_disagrees_on_the_bucket_count_is_refused_naming_the_field() throws IOException {
        Path record = root.resolve(LayoutFile.FILE_NAME);
        String json = Files.readString(record, StandardCharsets.UTF_8);
        String changed = json.replaceFirst("\"bucket_count\"\\s*:\\s*8", "\"bucket_count\" : 16");
        assertFalse(changed.equals(json), "the record names bucket_count 8: " + json);
        Files.writeString(record, changed, StandardCharsets.UTF_8);
        LayoutMismatchException refused = assertThrows(LayoutMismatchException.class, cluster::addNode);
        assertTrue(refused.getMessage().contains("bucket_count"), refused.getMessage());
    }
}
