package io.mcctl.master.client;

import static io.mcctl.testkit.TestObjects.bytesOf;
import static io.mcctl.testkit.TestObjects.content;
import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.KeyInfo;
import io.mcctl.master.proto.v1.ListKeysResponse;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Four nodes, each on its own thread with its own client and fd pool, offload at the same time into ONE
 * bucket (every key has the same home). Every object must read back byte for byte, and no two mappings
 * may share a page.
 */
@Timeout(60)
class SharedBucketConcurrencyTest {

    static final int NODES = 4;
    static final int KEYS_PER_NODE = 12;
    static final int BATCH = 3;
    static final int BUCKET = 5;
    static final String TENANT = "shared";

    @TempDir
    Path root;
    TierCluster cluster;

    @BeforeEach
    void start() throws IOException {
        cluster = TierCluster.start(root, 8, NODES);
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    @Test
    void concurrent_writers_into_one_bucket_never_overlap_and_every_byte_reads_back() throws Exception {
        List<String> keys = TestObjects.keysWithHome(cluster.layout(), BUCKET, "kv-", NODES * KEYS_PER_NODE);
        Map<String, Integer> sizes = new ConcurrentHashMap<>();
        SplittableRandom random = new SplittableRandom(20240607);
        long expectedPages = 0;
        for (String key : keys) {
            int size = 1 + random.nextInt(5 * 4096); // 1 byte .. 5 pages: 48 keys fit in one bucket of 256 pages
            sizes.put(key, size);
            expectedPages += (size + 4095) / 4096;
        }

        ExecutorService pool = Executors.newFixedThreadPool(NODES);
        CyclicBarrier together = new CyclicBarrier(NODES);
        List<Future<List<TierWriter.Outcome>>> results = new ArrayList<>();
        try {
            for (int n = 0; n < NODES; n++) {
                TierCluster.Node node = cluster.node(n);
                List<String> mine = keys.subList(n * KEYS_PER_NODE, (n + 1) * KEYS_PER_NODE);
                results.add(pool.submit(() -> {
                    together.await(10, TimeUnit.SECONDS);
                    List<TierWriter.Outcome> outcomes = new ArrayList<>();
                    for (int i = 0; i < mine.size(); i += BATCH) {
                        List<TierWriter.ObjectSource> batch = new ArrayList<>();
                        for (String key : mine.subList(i, i + BATCH)) {
                            batch.add(object(key, sizes.get(key)));
                        }
                        outcomes.addAll(node.writer().offload(TENANT, batch, false));
                    }
                    return outcomes;
                }));
            }
            for (Future<List<TierWriter.Outcome>> result : results) {
                for (TierWriter.Outcome outcome : result.get(30, TimeUnit.SECONDS)) {
                    assertTrue(outcome.ok(), outcome.toString());
                    assertEquals(cluster.layout().bucketPath(BUCKET).toString(), outcome.descriptor().getFilePath(),
                            "every key of the test lands in the one shared bucket");
                }
            }
        } finally {
            pool.shutdownNow();
        }

        // Every node reads every key (its own and the others'), byte for byte.
        for (int n = 0; n < NODES; n++) {
            List<TierReader.Outcome> read = cluster.node(n).reader().get(TENANT, keys);
            for (int i = 0; i < keys.size(); i++) {
                String key = keys.get(i);
                TierReader.Outcome outcome = read.get(i);
                assertEquals(TierReader.Status.OK, outcome.status(), "node " + n + " reading " + key + ": " + outcome.message());
                assertArrayEquals(content(key, sizes.get(key)), bytesOf(outcome.data()), "node " + n + " reading " + key);
            }
        }

        GetStatsResponse stats = cluster.stats();
        assertEquals(keys.size(), stats.getMappings());
        assertEquals(0, stats.getInFlightAllocations());
        assertEquals(expectedPages, stats.getPagesAllocated());
        assertEquals(expectedPages, stats.getBuckets(BUCKET).getPagesAllocated());

        assertNoOverlap(listAll(cluster.node(0).client(), TENANT, 7), 4096);
    }

    static List<KeyInfo> listAll(MasterClient client, String tenant, int pageSize) {
        List<KeyInfo> all = new ArrayList<>();
        String token = "";
        for (int pages = 0; pages < 10_000; pages++) {
            ListKeysResponse page = client.listKeys(tenant, "", pageSize, token);
            all.addAll(page.getKeysList());
            if (page.getNextPageToken().isEmpty()) {
                return all;
            }
            token = page.getNextPageToken();
        }
        throw new AssertionError("listing never ended");
    }

    /** Within each file, the page runs of the mappings are disjoint. */
    static void assertNoOverlap(List<KeyInfo> keys, long pageSize) {
        Map<String, List<KeyInfo>> byFile = new HashMap<>();
        for (KeyInfo info : keys) {
            byFile.computeIfAbsent(info.getDistributedDisk().getFilePath(), f -> new ArrayList<>()).add(info);
        }
        for (List<KeyInfo> inFile : byFile.values()) {
            inFile.sort(Comparator.comparingLong(k -> k.getDistributedDisk().getOffset()));
            for (int i = 1; i < inFile.size(); i++) {
                DistributedDiskDescriptor previous = inFile.get(i - 1).getDistributedDisk();
                DistributedDiskDescriptor current = inFile.get(i).getDistributedDisk();
                long previousEnd = previous.getOffset() + ((previous.getObjectSize() + pageSize - 1) / pageSize) * pageSize;
                if (current.getOffset() < previousEnd) {
                    fail(inFile.get(i - 1).getKey() + " " + previous + " overlaps " + inFile.get(i).getKey() + " " + current);
                }
            }
        }
    }
}
