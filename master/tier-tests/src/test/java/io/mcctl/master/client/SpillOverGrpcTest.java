package io.mcctl.master.client;

import static io.mcctl.testkit.TestObjects.bytesOf;
import static io.mcctl.testkit.TestObjects.content;
import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A full home bucket does not fail an offload while another bucket has room; only a full tier does. */
@Timeout(60)
class SpillOverGrpcTest {

    static final String TENANT = "t";

    @TempDir
    Path root;
    TierCluster cluster;
    BucketLayout layout;

    @BeforeEach
    void start() throws IOException {
        cluster = TierCluster.start(root, 8, 2);
        layout = cluster.layout();
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    @Test
    void a_full_home_bucket_spills_to_the_next_bucket_and_the_object_reads_back_from_there() {
        int home = layout.bucketCount() - 1; // the next bucket wraps around to 0
        List<String> keys = TestObjects.keysWithHome(layout, home, "spill-", 2);
        int whole = (int) layout.bucketSize();
        TierCluster.Node a = cluster.node(0);
        TierWriter.Outcome filler = a.writer().offload(TENANT, List.of(object(keys.get(0), whole)), false).get(0);
        assertTrue(filler.ok(), filler.toString());
        assertEquals(layout.bucketPath(home).toString(), filler.descriptor().getFilePath());
        GetStatsResponse full = a.client().stats();
        assertEquals(0, full.getBuckets(home).getPagesFree());
        assertEquals(0, full.getBuckets(home).getLargestFreeRun());

        TierWriter.Outcome spilled = a.writer().offload(TENANT, List.of(object(keys.get(1), 5000)), false).get(0);
        assertTrue(spilled.ok(), spilled.toString());
        assertEquals(layout.bucketPath(0).toString(), spilled.descriptor().getFilePath(), "written where the master said");
        assertEquals(layout.bucketPath(0).toString(),
                a.client().replicaList(TENANT, keys.get(1)).getReplicas(0).getDistributedDisk().getFilePath());
        assertEquals(1, cluster.master().pages().spillsTotal());

        TierCluster.Node b = cluster.node(1);
        List<TierReader.Outcome> read = b.reader().get(TENANT, keys);
        assertArrayEquals(content(keys.get(0), whole), bytesOf(read.get(0).data()));
        assertArrayEquals(content(keys.get(1), 5000), bytesOf(read.get(1).data()));
        assertEquals(2, b.tier().openFiles(), "the reader followed the descriptor to the other bucket's file");
    }

    @Test
    void when_no_bucket_has_room_allocate_is_NO_AVAILABLE_HANDLE_and_changes_nothing() {
        MasterClient client = cluster.node(0).client();
        for (int bucket = 0; bucket < layout.bucketCount(); bucket++) {
            client.allocate(TENANT, "filler-" + bucket, layout.bucketSize(), false);
        }
        GetStatsResponse before = client.stats();
        assertEquals(before.getPagesTotal(), before.getPagesAllocated());

        MasterException refused = assertThrows(MasterException.class, () -> client.allocate(TENANT, "one-more", 1, false));
        assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, refused.code());
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, ((StatusRuntimeException) refused.getCause()).getStatus().getCode());

        TierCluster.Node node = cluster.node(1);
        TierWriter.Outcome outcome = node.writer().offload(TENANT, List.of(object("also-refused", 100)), false).get(0);
        assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, outcome.code());
        assertEquals(0, node.metrics().leaksPreventedTotal(), "nothing was allocated, so nothing to free");
        assertEquals(0, node.tier().openFiles(), "nothing was written");

        GetStatsResponse after = client.stats();
        assertEquals(before.getMappings(), after.getMappings());
        assertEquals(before.getInFlightAllocations(), after.getInFlightAllocations());
        assertEquals(before.getPagesAllocated(), after.getPagesAllocated());
        assertEquals(2, cluster.master().pages().allocationFailuresTotal());
    }
}
