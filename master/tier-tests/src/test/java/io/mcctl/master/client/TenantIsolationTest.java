package io.mcctl.master.client;

import static io.mcctl.testkit.TestObjects.bytesOf;
import static io.mcctl.testkit.TestObjects.content;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyInfo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Tenants are walls: the same key name in two tenants is two objects, and neither tenant reaches the other's. */
@Timeout(60)
class TenantIsolationTest {

    static final String KEY = "layer-0/block-17";

    @TempDir
    Path root;
    TierCluster cluster;
    TierCluster.Node a;
    TierCluster.Node b;

    @BeforeEach
    void start() throws IOException {
        cluster = TierCluster.start(root, 8, 2);
        a = cluster.node(0);
        b = cluster.node(1);
        // The same key in two tenants, written by two nodes, with contents that tell them apart.
        assertTrue(a.writer().offload("red", List.of(named(KEY, content("red", 6000))), false).get(0).ok());
        assertTrue(b.writer().offload("blue", List.of(named(KEY, content("blue", 6000))), false).get(0).ok());
    }

    static TierWriter.ObjectSource named(String key, byte[] bytes) {
        return new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(bytes)));
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    @Test
    void the_same_key_in_two_tenants_gets_different_pages_and_each_reads_its_own_bytes() {
        DistributedDiskDescriptor red = a.client().getMapping("red", KEY).getDistributedDisk();
        DistributedDiskDescriptor blue = a.client().getMapping("blue", KEY).getDistributedDisk();
        assertEquals(red.getFilePath(), blue.getFilePath(), "same key, same home bucket");
        assertTrue(red.getOffset() + 2 * 4096 <= blue.getOffset() || blue.getOffset() + 2 * 4096 <= red.getOffset(),
                "disjoint pages: " + red + " vs " + blue);
        assertArrayEquals(content("red", 6000), bytesOf(b.reader().get("red", List.of(KEY)).get(0).data()));
        assertArrayEquals(content("blue", 6000), bytesOf(a.reader().get("blue", List.of(KEY)).get(0).data()));
    }

    @Test
    void a_tenant_cannot_see_read_or_remove_another_tenants_key() {
        assertEquals(TierReader.Status.NOT_FOUND, a.reader().get("green", List.of(KEY)).get(0).status());
        assertFalse(a.client().exists("green", KEY));
        MasterException notFound = assertThrows(MasterException.class, () -> a.client().getMapping("green", KEY));
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, notFound.code());

        long pagesBefore = a.client().stats().getPagesAllocated();
        MasterException removeElsewhere = assertThrows(MasterException.class, () -> a.client().remove("green", KEY));
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, removeElsewhere.code());
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, a.client().batchRemove(List.of(KEY), List.of("green")).getResults(0).getError());
        assertEquals(2, a.client().stats().getMappings(), "removed nothing");
        assertEquals(pagesBefore, a.client().stats().getPagesAllocated());

        a.client().remove("red", KEY);
        assertFalse(a.client().exists("red", KEY));
        assertTrue(a.client().exists("blue", KEY), "removing red's key leaves blue's");
        assertArrayEquals(content("blue", 6000), bytesOf(b.reader().get("blue", List.of(KEY)).get(0).data()));
    }

    @Test
    void listing_shows_only_the_tenants_own_keys() {
        List<KeyInfo> red = a.client().listKeys("red", "", 100, "").getKeysList();
        List<KeyInfo> green = a.client().listKeys("green", "", 100, "").getKeysList();
        assertEquals(1, red.size());
        assertEquals(KEY, red.get(0).getKey());
        assertEquals(a.client().getMapping("red", KEY).getDistributedDisk(), red.get(0).getDistributedDisk());
        assertTrue(green.isEmpty());
        assertEquals(2, a.client().stats().getTenants());
    }

    @Test
    void a_free_or_notify_in_another_tenant_cannot_touch_an_allocation() {
        DistributedDiskDescriptor pending = a.client().allocate("red", "pending", 4096, false).getDistributedDisk();
        MasterException free = assertThrows(MasterException.class, () -> b.client().free("blue", "pending", pending));
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, free.code());
        assertEquals(ErrorCode.OBJECT_NOT_FOUND,
                b.client().notifySuccess(List.of("pending"), List.of("blue"), List.of(pending)).getResults(0).getError());
        assertEquals(1, a.client().stats().getInFlightAllocations());
        assertEquals(ErrorCode.OK, a.client().notifySuccess(List.of("pending"), List.of("red"), List.of(pending)).getResults(0).getError());
    }

    @Test
    void a_batch_that_interleaves_tenants_keeps_each_key_in_its_own_tenant_and_counts_each_tenants_usage() {
        // amber, teal, amber again, an id that is no tenant id, teal again: every switch between a batch's tenants.
        List<String> tenants = List.of("amber", "teal", "amber", "no tenant!", "teal");
        List<String> keys = List.of("x", "x", "y", "z", "y");
        var allocated = a.client().batchAllocate(keys, tenants, List.of(4096L, 8192L, 1000L, 5L, 3000L), false).getResultsList();
        assertEquals(ErrorCode.INVALID_PARAMS, allocated.get(3).getStatus().getError());
        assertTrue(allocated.get(3).getStatus().getMessage().contains("no tenant!"), allocated.get(3).getStatus().getMessage());
        List<DistributedDiskDescriptor> written = allocated.stream().map(r -> r.getDistributedDisk()).toList();
        var notified = a.client().notifySuccess(keys, tenants, written).getResultsList();
        for (int i : new int[] {0, 1, 2, 4}) {
            assertEquals(ErrorCode.OK, allocated.get(i).getStatus().getError(), "allocation " + i);
            assertEquals(ErrorCode.OK, notified.get(i).getError(), "notify " + i);
        }

        var found = b.client().batchGetMapping(List.of("x", "x", "y", "z", "y"), List.of("teal", "amber", "teal", "amber", "amber"))
                .getResultsList();
        assertEquals(written.get(1), found.get(0).getDistributedDisk(), "teal's x");
        assertEquals(written.get(0), found.get(1).getDistributedDisk(), "amber's x");
        assertEquals(written.get(4), found.get(2).getDistributedDisk(), "teal's y");
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, found.get(3).getStatus().getError(), "z was never amber's");
        assertEquals(written.get(2), found.get(4).getDistributedDisk(), "amber's y");

        assertEquals(ErrorCode.OK, a.client().batchRemove(List.of("x", "y"), List.of("amber", "teal")).getResults(1).getError());
        var stats = a.client().stats();
        assertEquals(4, stats.getTenants(), "red, blue, amber and teal; the bad id left no trace");
        var amber = stats.getTenantStatsList().stream().filter(t -> t.getTenantId().equals("amber")).findFirst().orElseThrow();
        var teal = stats.getTenantStatsList().stream().filter(t -> t.getTenantId().equals("teal")).findFirst().orElseThrow();
        assertEquals(List.of(1L, 1000L, 2L, 1L), List.of(amber.getKeys(), amber.getBytes(), amber.getHits(), amber.getMisses()),
                "amber: y left, of 1000 bytes; x and y found, z missed");
        assertEquals(List.of(1L, 8192L, 2L, 0L), List.of(teal.getKeys(), teal.getBytes(), teal.getHits(), teal.getMisses()),
                "teal: x left, of 8192 bytes; x and y found");
    }
}
