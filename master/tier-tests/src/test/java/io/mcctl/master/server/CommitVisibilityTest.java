package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.protocol.PackedPlacements;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A lookup that meets a mapping whose commit the log does not hold yet answers it only once the log holds it, on every
 * read path of a real master. The commit is made inside the master's process, where nothing waits for it, so that its
 * record sits in the log's buffer (the log writes what nobody waits for within 10 ms) while the lookup arrives over the
 * wire; the lookup must not come back before the log made the commit durable.
 */
@Timeout(60)
class CommitVisibilityTest {

    @TempDir
    Path root;

    @Test
    void every_read_path_answers_a_commit_only_once_the_log_holds_it() throws Exception {
        try (TierCluster cluster = TierCluster.start(root, 4, 0)) {
            MasterClient stream = cluster.addNode(false, MasterClient.Transport.STREAM).client();
            MasterClient unary = cluster.addNode(false, MasterClient.Transport.UNARY).client();
            // Each path looks the key up and says what it found: the placement's file and offset, or null for nothing.
            Map<String, Function<String, String>> paths = new LinkedHashMap<>();
            paths.put("GetDistributedPageMapping", key -> where(unary.getMapping("t", key).getDistributedDisk()));
            paths.put("BatchGetDistributedPageMapping", key -> where(unary.batchGetMapping(List.of(key), List.of("t")).getResults(0)
                    .getDistributedDisk()));
            paths.put("BatchGetDistributedPageMapping, packed", key -> {
                BatchGetDistributedPageMappingResponse packed = unary.batchGetMappingPacked(List.of(key), List.of("t"));
                Placement p = PackedPlacements.of(packed.getPlacements(), 1).placement(0);
                return cluster.layout().bucketPath(p.bucket()) + "@" + p.offset();
            });
            paths.put("Session lookup", key -> where(stream.batchGetMapping(List.of(key), List.of("t")).getResults(0).getDistributedDisk()));
            paths.put("Session lookup, packed", key -> {
                BatchGetDistributedPageMappingResponse packed = stream.batchGetMappingPacked(List.of(key), List.of("t"));
                Placement p = PackedPlacements.of(packed.getPlacements(), 1).placement(0);
                return cluster.layout().bucketPath(p.bucket()) + "@" + p.offset();
            });
            paths.put("GetReplicaList", key -> where(unary.replicaList("t", key).getReplicas(0).getDistributedDisk()));
            paths.put("ListKeys", key -> where(unary.listKeys("t", key, 10, "").getKeys(0).getDistributedDisk()));
            paths.put("ExistKey", key -> unary.exists("t", key) ? "exists" : null);
            paths.put("BatchExistKey", key -> unary.batchExists(List.of(key), List.of("t")).getExists(0) ? "exists" : null);

            PageService pages = cluster.master().pages();
            for (Map.Entry<String, Function<String, String>> path : paths.entrySet()) {
                String key = "key-" + path.getKey().replace(' ', '-').replace(",", "");
                Placement allocated = pages.allocate("t", key, 1000, false).value();
                cluster.master().wal().whenDurable().get(10, TimeUnit.SECONDS);
                assertTrue(pages.notifySuccess("t", key, allocated.withCrc(7)).isOk());
                long commit = cluster.master().wal().lastAppended();

                String found = path.getValue().apply(key);
                long durable = cluster.master().wal().lastDurable();

                assertTrue(durable >= commit, path.getKey() + " answered before the log held the commit " + commit + " (durable: " + durable + ")");
                String expected = path.getKey().contains("Exist") ? "exists" : cluster.layout().bucketPath(allocated.bucket()) + "@" + allocated.offset();
                assertEquals(expected, found, path.getKey());
            }
        }
    }

    private static String where(DistributedDiskDescriptor d) {
        return d.getFilePath().isEmpty() ? null : d.getFilePath() + "@" + d.getOffset();
    }
}
