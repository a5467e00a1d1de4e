package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A descriptor that names no allocation is refused with what the caller sent, as it sent it, over real gRPC. */
@Timeout(60)
class DescriptorEchoTest {

    @TempDir
    Path root;

    @Test
    void a_bucket_outside_the_layout_and_a_size_of_two_to_the_64_minus_1_are_echoed_as_sent() throws Exception {
        try (TierCluster cluster = TierCluster.start(root, 8, 0); MasterClient client = cluster.newClient()) {
            DistributedDiskDescriptor given = client.allocate("t", "k", 4096, false).getDistributedDisk();
            DistributedDiskDescriptor bucket99 = given.toBuilder().clearFilePath().setBucket(99).build();
            KeyError refused = client.notifySuccess(List.of("k"), List.of("t"), List.of(bucket99)).getResults(0);
            assertEquals(ErrorCode.INVALID_PARAMS, refused.getError(), refused::toString);
            assertTrue(refused.getMessage().contains("bucket 99@" + given.getOffset() + "+4096"), refused.getMessage());

            DistributedDiskDescriptor huge = given.toBuilder().setObjectSize(-1L).build(); // uint64 2^64-1 on the wire
            refused = client.notifySuccess(List.of("k"), List.of("t"), List.of(huge)).getResults(0);
            assertEquals(ErrorCode.INVALID_PARAMS, refused.getError(), refused::toString);
            assertTrue(refused.getMessage().contains("+18446744073709551615 does not match"), refused.getMessage());
        }
    }
}
