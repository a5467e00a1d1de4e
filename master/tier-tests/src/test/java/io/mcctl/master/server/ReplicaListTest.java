package io.mcctl.master.server;

import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.GetReplicaListResponse;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaStatus;
import io.mcctl.master.proto.v1.ReplicaType;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class ReplicaListTest {

    @Nested
    class Over_the_wire {

        @TempDir
        Path root;

        @Test
        void a_committed_object_has_one_complete_DISTRIBUTED_DISK_replica_with_file_offset_size_and_checksum() throws IOException {
            try (TierCluster cluster = TierCluster.start(root, 8, 1)) {
                TierWriter.Outcome written = cluster.node(0).writer().offload("t", List.of(object("kv", 12_345)), false).get(0);
                assertTrue(written.ok(), written.toString());
                GetReplicaListResponse list = cluster.node(0).client().replicaList("t", "kv");
                assertEquals(1, list.getReplicasCount());
                Replica replica = list.getReplicas(0);
                assertEquals(ReplicaType.DISTRIBUTED_DISK, replica.getType());
                assertEquals(ReplicaStatus.COMPLETE, replica.getStatus());
                assertEquals(Replica.DataCase.DISTRIBUTED_DISK, replica.getDataCase());
                DistributedDiskDescriptor d = replica.getDistributedDisk();
                assertEquals(written.descriptor(), d, "the file, offset, size and CRC32C the writer committed");
                assertEquals(cluster.layout().bucketPath(cluster.layout().homeBucket("kv")).toString(), d.getFilePath());
                assertEquals(12_345, d.getObjectSize());
                assertTrue(d.getCrc32C() != 0);
            }
        }
    }

    static Replica replica(ReplicaType type, ReplicaStatus status) {
        return Replica.newBuilder().setType(type).setStatus(status).build();
    }

    @Test
    void sortBestFirst_orders_MEMORY_NOF_DISTRIBUTED_DISK_LOCAL_DISK_DISK_and_complete_before_processing() {
        List<ReplicaType> order = List.of(ReplicaType.MEMORY, ReplicaType.NOF, ReplicaType.DISTRIBUTED_DISK, ReplicaType.LOCAL_DISK,
                ReplicaType.DISK, ReplicaType.REPLICA_TYPE_UNSPECIFIED);
        List<Replica> expected = new ArrayList<>();
        for (ReplicaStatus status : List.of(ReplicaStatus.COMPLETE, ReplicaStatus.PROCESSING)) {
            for (ReplicaType type : order) {
                expected.add(replica(type, status));
            }
        }
        Random random = new Random(7);
        for (int round = 0; round < 50; round++) {
            List<Replica> shuffled = new ArrayList<>(expected);
            Collections.shuffle(shuffled, random);
            assertEquals(expected, ReplicaPriority.sortBestFirst(shuffled));
        }
    }

    @Test
    void a_complete_disk_replica_beats_a_processing_memory_replica() {
        List<Replica> sorted = ReplicaPriority.sortBestFirst(List.of(
                replica(ReplicaType.MEMORY, ReplicaStatus.PROCESSING), replica(ReplicaType.DISK, ReplicaStatus.COMPLETE)));
        assertEquals(ReplicaType.DISK, sorted.get(0).getType());
    }

    @Test
    void sorting_leaves_the_input_alone_and_keeps_equal_replicas_in_order() {
        Replica first = Replica.newBuilder().setType(ReplicaType.MEMORY).setStatus(ReplicaStatus.COMPLETE)
                .setMemory(io.mcctl.master.proto.v1.MemoryDescriptor.newBuilder().setSegmentName("a")).build();
        Replica second = first.toBuilder().setMemory(first.getMemory().toBuilder().setSegmentName("b")).build();
        List<Replica> input = List.of(replica(ReplicaType.DISK, ReplicaStatus.COMPLETE), first, second);
        assertEquals(List.of(first, second, input.get(0)), ReplicaPriority.sortBestFirst(input));
        assertEquals(ReplicaType.DISK, input.get(0).getType());
    }
}
