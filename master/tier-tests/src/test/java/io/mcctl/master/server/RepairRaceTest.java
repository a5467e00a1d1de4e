package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.CheckPagesResponse;
import io.mcctl.storage.alloc.PageRangeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * fsck's repair over gRPC while two nodes offload and remove real objects: leaks injected into the live allocators
 * are freed, and every object acknowledged reads back byte-exact afterwards, so no repair ever freed (and let another
 * offload overwrite) a page that an offload held.
 */
@Timeout(120)
class RepairRaceTest {

    static final String TENANT = "race";

    @TempDir
    Path root;

    @Test
    void repairs_racing_offloads_and_removes_free_only_the_injected_leaks_and_every_object_reads_back() throws Exception {
        try (TierCluster cluster = TierCluster.start(TierCluster.smallLayout(root, 4), Duration.ofSeconds(60), Duration.ofMillis(50), 2)) {
            MasterServer master = cluster.master();
            Map<String, Integer> acknowledged = new ConcurrentHashMap<>();
            List<String> failures = Collections.synchronizedList(new ArrayList<>());
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> writers = new ArrayList<>();
            for (int w = 0; w < 2; w++) {
                TierCluster.Node node = cluster.node(w);
                String prefix = "n" + w + "-";
                Random random = new Random(w);
                Thread thread = new Thread(() -> {
                    for (int n = 0; !stop.get(); n++) {
                        String key = prefix + (n % 40);
                        int size = 1 + random.nextInt(5 * (int) TierCluster.PAGE);
                        if (acknowledged.remove(key) != null) {
                            node.client().remove(TENANT, key);
                        }
                        TierWriter.Outcome outcome = node.writer().offload(TENANT, List.of(TestObjects.object(key, size)), false).get(0);
                        if (outcome.ok()) {
                            acknowledged.put(key, size);
                        } else if (!outcome.toString().contains("NO_AVAILABLE_HANDLE")) {
                            failures.add(outcome.toString());
                        }
                    }
                }, "writer-" + w);
                thread.start();
                writers.add(thread);
            }
            Random random = new Random(99);
            long injected = 0;
            long repaired = 0;
            long pagesPerBucket = cluster.layout().pagesPerBucket();
            try (var admin = cluster.newClient()) {
                // At least 60 rounds, and on a slow machine more, until the writers have stored enough to mean something.
                for (int round = 0; round < 60 || (acknowledged.size() <= 10 && round < 3000); round++) {
                    int bucket = random.nextInt(4);
                    long page = random.nextInt((int) pagesPerBucket - 2);
                    try {
                        master.pages().allocator(bucket).markAllocated(page, 2);
                        injected += 2;
                    } catch (PageRangeException taken) {
                        // held by an offload right now: inject elsewhere next round
                    }
                    CheckPagesResponse check = admin.checkPages(true, 0, 1000);
                    repaired += check.getRepairedLeakedPages();
                    if (check.getFalseFreePages() != 0 || check.getOverlapPages() != 0) {
                        failures.add("round " + round + ": " + check);
                    }
                }
                stop.set(true);
                for (Thread thread : writers) {
                    thread.join(30_000);
                }
                CheckPagesResponse quiet = admin.checkPages(true, 0, 1000);
                repaired += quiet.getRepairedLeakedPages();
                assertEquals(0, quiet.getUnsettledPages(), quiet.toString());
                assertEquals(List.of(), failures);
                assertEquals(injected, repaired, "every injected leak, and nothing else, was freed");
                CheckPagesResponse after = admin.checkPages(false, 0, 1000);
                assertEquals(0, after.getLeakedPages() + after.getFalseFreePages() + after.getOverlapPages(), after.toString());
            }
            assertTrue(acknowledged.size() > 10, "enough objects to mean something: " + acknowledged.size());
            TierReader reader = cluster.node(1).reader();
            List<String> keys = new ArrayList<>(acknowledged.keySet());
            List<TierReader.Outcome> read = reader.get(TENANT, keys);
            for (int i = 0; i < keys.size(); i++) {
                TierReader.Outcome outcome = read.get(i);
                assertEquals(TierReader.Status.OK, outcome.status(), outcome.toString());
                assertArrayEquals(TestObjects.content(keys.get(i), acknowledged.get(keys.get(i))), TestObjects.bytesOf(outcome.data()), keys.get(i));
            }
        }
    }
}
