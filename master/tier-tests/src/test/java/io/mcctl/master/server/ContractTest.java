package io.mcctl.master.server;

import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageRequest;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.KeyInfo;
import io.mcctl.master.proto.v1.ListKeysRequest;
import io.mcctl.master.proto.v1.ListKeysResponse;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The contract as a client written outside mcctl sees it: a stock gRPC client with its defaults. */
@Timeout(120)
class ContractTest {

    @TempDir
    Path root;

    @Test
    void a_descriptor_from_GetReplicaList_is_leased_so_a_remove_does_not_free_its_pages_for_reuse() throws IOException {
        try (TierCluster cluster = TierCluster.start(TierCluster.smallLayout(root, 1), Duration.ofSeconds(60), Duration.ofSeconds(30), 1)) {
            TierCluster.Node node = cluster.node(0);
            assertTrue(node.writer().offload("t", List.of(object("k", 4096)), false).get(0).ok());
            DistributedDiskDescriptor read = node.client().replicaList("t", "k").getReplicas(0).getDistributedDisk();
            assertTrue(node.client().replicaList("t", "k").getLeaseMs() > 0, "the answer says how long the lease is");
            node.client().remove("t", "k");
            assertEquals(1, node.client().stats().getQuarantinedPages(), "the pages wait for the lease");
            DistributedDiskDescriptor next = node.client().allocate("t", "other", 4096, false).getDistributedDisk();
            assertFalse(next.getOffset() == read.getOffset(), "a page handed out by GetReplicaList is not reused under its reader");
        }
    }

    @Test
    void a_listing_is_leased_too() throws IOException {
        try (TierCluster cluster = TierCluster.start(TierCluster.smallLayout(root, 1), Duration.ofSeconds(60), Duration.ofSeconds(30), 1)) {
            TierCluster.Node node = cluster.node(0);
            assertTrue(node.writer().offload("t", List.of(object("k", 4096)), false).get(0).ok());
            ListKeysResponse page = node.client().listKeys("t", "", 10, "");
            assertEquals(1, page.getKeysCount());
            assertTrue(page.getLeaseMs() > 0);
            node.client().remove("t", "k");
            assertEquals(1, node.client().stats().getQuarantinedPages());
        }
    }

    @Test
    void every_listing_page_fits_a_default_grpc_client_and_keys_come_in_utf8_order() throws Exception {
        // 2,000 keys of 3,000+ bytes: a page of 1,000 of them would be 6 MiB, past the 4 MiB a default client takes.
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            keys.add(String.format("%04d", i) + "x".repeat(3000));
        }
        // Keys whose UTF-8 order differs from Java's UTF-16 order: U+FF5E sorts before U+1F600 in UTF-8, after it in UTF-16.
        keys.add("\uFF5E-fullwidth-tilde");
        keys.add("\uD83D\uDE00-emoji");
        keys.add("~ascii");
        try (TierCluster cluster = TierCluster.start(TierCluster.smallLayout(root, 8), Duration.ofSeconds(60), Duration.ofSeconds(5), 1)) {
            // A plain channel with gRPC's defaults: 4 MiB receive limit. Writing through it checks requests too.
            ManagedChannel channel = ManagedChannelBuilder.forTarget(cluster.target()).usePlaintext().build();
            try {
                MasterServiceGrpc.MasterServiceBlockingStub stub = MasterServiceGrpc.newBlockingStub(channel);
                for (int from = 0; from < keys.size(); from += 500) {
                    List<String> batch = keys.subList(from, Math.min(keys.size(), from + 500));
                    BatchAllocateDistributedPageResponse allocated = stub.withDeadlineAfter(30, TimeUnit.SECONDS)
                            .batchAllocateDistributedPage(BatchAllocateDistributedPageRequest.newBuilder().addAllKeys(batch)
                                    .addAllTenantIds(java.util.Collections.nCopies(batch.size(), "t"))
                                    .addAllSizes(java.util.Collections.nCopies(batch.size(), 10L)).build());
                    NotifyDistributedDiskSuccessRequest.Builder notify = NotifyDistributedDiskSuccessRequest.newBuilder();
                    for (int i = 0; i < batch.size(); i++) {
                        notify.addKeys(batch.get(i)).addTenantIds("t").addDescriptors(allocated.getResults(i).getDistributedDisk());
                    }
                    stub.withDeadlineAfter(30, TimeUnit.SECONDS).notifyDistributedDiskSuccess(notify.build());
                }
                List<String> listed = new ArrayList<>();
                String token = "";
                int pages = 0;
                do {
                    ListKeysResponse page = stub.withDeadlineAfter(30, TimeUnit.SECONDS).listKeys(ListKeysRequest.newBuilder()
                            .setTenantId("t").setPageSize(1000).setPageToken(token).build());
                    assertTrue(page.getSerializedSize() < 4 << 20, "page of " + page.getSerializedSize() + " bytes");
                    page.getKeysList().stream().map(KeyInfo::getKey).forEach(listed::add);
                    token = page.getNextPageToken();
                    pages++;
                } while (!token.isEmpty() && pages < 100);
                List<String> expected = new ArrayList<>(keys);
                expected.sort((a, b) -> Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8)));
                assertEquals(expected, listed, "every key once, in the order of their UTF-8 bytes");
                assertTrue(pages > 2, "split by bytes, not only by count: " + pages + " pages");
                Set<String> unique = new HashSet<>(listed);
                assertEquals(listed.size(), unique.size());
            } finally {
                channel.shutdownNow();
            }
        }
    }

    @Test
    void a_page_token_the_master_did_not_give_is_refused_in_one_line() throws IOException {
        try (TierCluster cluster = TierCluster.start(TierCluster.smallLayout(root, 1), Duration.ofSeconds(60), Duration.ofSeconds(5), 1)) {
            io.mcctl.master.client.MasterException e = org.junit.jupiter.api.Assertions.assertThrows(io.mcctl.master.client.MasterException.class,
                    () -> cluster.node(0).client().listKeys("t", "", 10, "not-a-token"));
            assertEquals(io.mcctl.master.proto.v1.ErrorCode.INVALID_PARAMS, e.code());
            assertTrue(e.getMessage().contains("page token"), e.getMessage());
        }
    }

    @Test
    void stats_count_tenants_without_a_pass_over_the_keys() throws IOException {
        try (TierCluster cluster = TierCluster.start(TierCluster.smallLayout(root, 2), Duration.ofSeconds(60), Duration.ofSeconds(5), 1)) {
            TierWriter writer = cluster.node(0).writer();
            assertTrue(writer.offload("a", List.of(object("k1", 10), object("k2", 10)), false).stream().allMatch(TierWriter.Outcome::ok));
            assertTrue(writer.offload("b", List.of(object("k1", 10)), false).get(0).ok());
            GetStatsResponse stats = cluster.node(0).client().stats();
            assertEquals(2, stats.getTenants());
            assertEquals(3, stats.getMappings());
            cluster.node(0).client().remove("b", "k1");
            assertEquals(1, cluster.node(0).client().stats().getTenants(), "a tenant whose last key is gone is no longer counted");
            assertEquals(Set.of("a"), cluster.master().pages().tenantUsage().keySet());
            assertEquals(20, cluster.master().pages().tenantUsage().get("a")[1], "bytes per tenant");
        }
    }
}
