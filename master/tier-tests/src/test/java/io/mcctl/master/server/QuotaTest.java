package io.mcctl.master.server;

import io.mcctl.master.service.eviction.EvictionPolicy;
import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.TenantStats;
import io.mcctl.master.service.Change;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Per-tenant byte quotas over a real master: a tenant at its quota evicts its own objects, never another tenant's. */
@Timeout(120)
class QuotaTest {

    static final int SIZE = 4096 * 3 + 1; // four pages

    @TempDir
    Path root;

    static MasterServer.Options options(BucketLayout layout, boolean eviction) {
        return MasterServer.Options.builder(layout).fsType("test").readLease(Duration.ofMillis(50)).snapshotInterval(null)
                .allocationGrace(Duration.ofSeconds(10))
                .eviction(eviction ? new EvictionPolicy(true, 0.9, 0.7) : EvictionPolicy.OFF).build();
    }

    @Test
    void a_flooding_tenant_at_its_quota_evicts_its_own_objects_and_the_other_tenants_stay() throws Exception {
        BucketLayout layout = TierCluster.smallLayout(root, 4); // 1,024 pages: 256 objects
        MasterServer.Options options = options(layout, true);
        List<String> quiet = new ArrayList<>();
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            TierCluster.Node node = cluster.node(0);
            node.client().setQuota("flood", 20L * SIZE);
            for (int i = 0; i < 40; i++) {
                quiet.add("q-" + i);
                assertTrue(node.writer().offload("quiet", List.of(object("q-" + i, SIZE)), false).get(0).ok());
            }
            for (int i = 0; i < 300; i++) {
                TierWriter.Outcome o = node.writer().offload("flood", List.of(object("f-" + i, SIZE)), false).get(0);
                assertTrue(o.ok(), "f-" + i + ": " + o);
            }
            PageService pages = cluster.master().pages();
            assertTrue(pages.usedBytes("flood") <= 20L * SIZE, "flood holds " + pages.usedBytes("flood"));
            assertTrue(pages.evictedTotal(Change.RemoveReason.EVICTED_QUOTA) >= 280, "evicted " + pages.evictedTotal(Change.RemoveReason.EVICTED_QUOTA));
            List<TierReader.Outcome> read = node.reader().get("quiet", quiet);
            for (int i = 0; i < quiet.size(); i++) {
                assertTrue(read.get(i).ok(), quiet.get(i) + " of the quiet tenant was evicted: " + read.get(i));
                assertArrayEquals(TestObjects.content(quiet.get(i), SIZE), TestObjects.bytesOf(read.get(i).data()));
            }
            TenantStats flood = node.client().stats().getTenantStatsList().stream().filter(t -> t.getTenantId().equals("flood")).findFirst()
                    .orElseThrow();
            assertEquals(20L * SIZE, flood.getQuotaBytes());
            cluster.master().snapshot(); // the quota from the snapshot, then one more from the log after it
            node.client().setQuota("quiet", 100L * SIZE);
        }
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            assertEquals(Map.of("flood", 20L * SIZE, "quiet", 100L * SIZE), cluster.master().pages().quotas(), "quotas survive a restart");
            assertTrue(cluster.node(0).writer().offload("flood", List.of(object("after", SIZE)), false).get(0).ok());
            assertTrue(cluster.master().pages().usedBytes("flood") <= 20L * SIZE);
        }
    }

    @Test
    void without_eviction_a_tenant_at_its_quota_is_refused_with_a_message_that_says_so() throws Exception {
        try (TierCluster cluster = TierCluster.start(options(TierCluster.smallLayout(root, 2), false), 1)) {
            TierCluster.Node node = cluster.node(0);
            node.client().setQuota("t", 2L * SIZE);
            assertTrue(node.writer().offload("t", List.of(object("a", SIZE), object("b", SIZE)), false).stream().allMatch(TierWriter.Outcome::ok));
            TierWriter.Outcome refused = node.writer().offload("t", List.of(object("c", SIZE)), false).get(0);
            assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, refused.code());
            assertTrue(refused.message().contains("at its quota"), refused.message());
            MasterException bad = assertThrows(MasterException.class, () -> node.client().setQuota("t", -1));
            assertEquals(ErrorCode.INVALID_PARAMS, bad.code());
            assertEquals(Map.of("t", 2L * SIZE), cluster.master().pages().quotas(), "a refused quota changes nothing");
            node.client().setQuota("t", 0);
            assertTrue(node.writer().offload("t", List.of(object("c", SIZE)), false).get(0).ok(), "no quota, no limit");
        }
    }
}
