package io.mcctl.master.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.proto.v1.AllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetStatsResponse;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** An allocation that is never notified is reclaimed by the master at its deadline; nothing leaks. */
@Timeout(60)
class AllocationExpiryTest {

    static final Duration DEADLINE = Duration.ofMillis(300);
    static final Duration GRACE = Duration.ofMillis(500);

    @TempDir
    Path root;
    TierCluster cluster;
    MasterClient client;

    @BeforeEach
    void start() throws IOException {
        cluster = TierCluster.start(TierCluster.smallLayout(root, 8), DEADLINE, Duration.ofSeconds(5), GRACE, 1);
        client = cluster.node(0).client();
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    @Test
    void an_allocation_never_notified_is_reclaimed_and_a_late_notify_is_OBJECT_NOT_FOUND() throws InterruptedException {
        long before = client.stats().getPagesAllocated();
        AllocateDistributedPageResponse allocated = client.allocate("t", "abandoned", 3 * 4096 + 1, false);
        assertEquals(DEADLINE.toMillis(), allocated.getDeadlineMs(), "the writer is told its deadline");
        DistributedDiskDescriptor place = allocated.getDistributedDisk();

        assertTrue(TierCluster.await(Duration.ofSeconds(20), () -> {
            GetStatsResponse stats = client.stats();
            return stats.getInFlightAllocations() == 0 && stats.getPagesAllocated() == before;
        }), "the master reclaims the allocation after its deadline");
        assertEquals(1, cluster.master().pages().expiredAllocationsTotal(), "reclaimed by expiry, not by anything else");

        List<io.mcctl.master.proto.v1.KeyError> late = client.notifySuccess(List.of("abandoned"), List.of("t"),
                List.of(place.toBuilder().setCrc32C(123).build())).getResultsList();
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, late.get(0).getError(), late.toString());
        MasterException lateFree = assertThrows(MasterException.class, () -> client.free("t", "abandoned", place));
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, lateFree.code());
        assertTrue(!lateFree.unreachable());
        MasterException get = assertThrows(MasterException.class, () -> client.getMapping("t", "abandoned"));
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, get.code());

        GetStatsResponse after = client.stats();
        assertEquals(0, after.getMappings());
        assertEquals(before, after.getPagesAllocated());
        assertEquals(0, after.getQuarantinedPages());
    }

    @Test
    void a_reclaimed_key_can_be_allocated_again() throws InterruptedException {
        client.allocate("t", "retry", 4096, false);
        assertTrue(TierCluster.await(Duration.ofSeconds(20), () -> client.stats().getInFlightAllocations() == 0));
        // The expired allocation's page waits out the grace period (a late writer may still write it); the key
        // itself is free to allocate again at once, on other pages.
        assertEquals(1, client.stats().getQuarantinedPages());
        DistributedDiskDescriptor again = client.allocate("t", "retry", 4096, false).getDistributedDisk();
        assertEquals(1, client.stats().getInFlightAllocations());
        client.free("t", "retry", again);
        assertEquals(0, client.stats().getInFlightAllocations());
        // The freed allocation's page is back at once (its writer gave it up); the expired one's waits out the grace.
        assertTrue(TierCluster.await(Duration.ofSeconds(20), () -> client.stats().getPagesAllocated() == 0));
    }
}
