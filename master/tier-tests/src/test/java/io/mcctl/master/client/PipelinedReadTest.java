package io.mcctl.master.client;

import static io.mcctl.testkit.TestObjects.bytesOf;
import static io.mcctl.testkit.TestObjects.content;
import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link TierReader#getPipelined}: mapping calls that cover several read batches, batches handed over in
 * key order, and a key whose read lease ran short looked up again before it is read, on one thread or several.
 */
@Timeout(60)
class PipelinedReadTest {

    static final String TENANT = "tenant-p";

    @TempDir
    Path root;
    TierCluster cluster;

    @AfterEach
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    List<String> offload(TierCluster.Node node, String prefix, int count) {
        List<String> keys = new ArrayList<>();
        List<TierWriter.ObjectSource> objects = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String key = prefix + i;
            keys.add(key);
            objects.add(object(key, sizeOf(key)));
        }
        for (TierWriter.Outcome outcome : node.writer().offload(TENANT, objects, false)) {
            assertTrue(outcome.ok(), outcome.toString());
        }
        return keys;
    }

    /** The smallest object this test writes: large enough, in the lease test, for a batch to be read on several threads. */
    int smallest = 1;

    int sizeOf(String key) {
        return smallest + Math.floorMod(key.hashCode(), 9000);
    }

    double batchLookups() throws IOException, InterruptedException {
        String body = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.metricsPort() + "/metrics"))
                .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString()).body();
        Matcher m = Pattern.compile("(?m)^mcctl_master_rpc_requests_total\\{method=\"BatchGetDistributedPageMapping\"\\} ([0-9.eE+-]+)$").matcher(body);
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    /** Collects what the sink is handed, batch by batch. */
    static final class Collected implements TierReader.BatchSink {
        final List<List<TierReader.Outcome>> batches = new ArrayList<>();
        final List<TierReader.Outcome> all = new ArrayList<>();

        @Override
        public List<ByteBuffer> destinations(List<String> batch) {
            return null;
        }

        @Override
        public void accept(List<TierReader.Outcome> outcomes) {
            batches.add(outcomes);
            all.addAll(outcomes);
        }
    }

    @Test
    void every_key_arrives_in_order_in_batches_with_mapping_calls_growing_to_cover_several_batches() throws Exception {
        cluster = TierCluster.start(root, 8, 1);
        List<String> keys = offload(cluster.node(0), "k-", 200);
        keys.add(100, "never-offloaded");
        // Unary calls: the master's per-method counter counts each; the Session stream is one call for all of them.
        TierCluster.Node reader = cluster.addNode(true, MasterClient.Transport.UNARY);

        double before = batchLookups();
        Collected sink = new Collected();
        // Calls of 7, 14, 28, then at most 35 keys (30 rounded up to whole batches of 7): 7 + 14 + 28 + 4 x 35
        // + 12 = 201 keys in 8 mapping calls and 29 batches.
        reader.reader().getPipelined(TENANT, keys, 7, 30, sink);
        assertEquals(8, batchLookups() - before, "mapping calls");

        assertEquals(29, sink.batches.size());
        for (int b = 0; b < sink.batches.size(); b++) {
            assertEquals(b < 28 ? 7 : 5, sink.batches.get(b).size(), "batch " + b);
        }
        assertEquals(keys.size(), sink.all.size());
        for (int i = 0; i < keys.size(); i++) {
            TierReader.Outcome outcome = sink.all.get(i);
            assertEquals(keys.get(i), outcome.key());
            if (i == 100) {
                assertEquals(TierReader.Status.NOT_FOUND, outcome.status());
            } else {
                assertEquals(TierReader.Status.OK, outcome.status(), outcome.toString());
                assertArrayEquals(content(keys.get(i), sizeOf(keys.get(i))), bytesOf(outcome.data()), keys.get(i));
            }
        }
    }

    @Test
    void any_batch_size_and_lookup_size_deliver_every_key_once_in_order_in_batches_of_that_size() throws Exception {
        cluster = TierCluster.start(root, 8, 2);
        List<String> stored = offload(cluster.node(0), "r-", 240);
        TierCluster.Node reader = cluster.node(1);
        java.util.SplittableRandom random = new java.util.SplittableRandom(20261129);
        for (int round = 0; round < 40; round++) {
            int batchSize = 1 + random.nextInt(40);
            int keysPerLookup = 1 + random.nextInt(300);
            List<String> keys = new ArrayList<>();
            int count = random.nextInt(260);
            for (int i = 0; i < count; i++) {
                // Mostly stored keys, repeats allowed, now and then one that was never offloaded.
                keys.add(random.nextInt(10) == 0 ? "missing-" + i : stored.get(random.nextInt(stored.size())));
            }
            Collected sink = new Collected();
            reader.reader().getPipelined(TENANT, keys, batchSize, keysPerLookup, sink);
            String what = "round " + round + ": " + count + " keys, batches of " + batchSize + ", lookups of up to " + keysPerLookup;
            assertEquals(keys.size(), sink.all.size(), what);
            for (int b = 0; b < sink.batches.size(); b++) {
                int expected = b < sink.batches.size() - 1 ? batchSize : keys.size() - b * batchSize;
                assertEquals(expected, sink.batches.get(b).size(), what + ", batch " + b);
            }
            for (int i = 0; i < keys.size(); i++) {
                TierReader.Outcome outcome = sink.all.get(i);
                assertEquals(keys.get(i), outcome.key(), what);
                if (keys.get(i).startsWith("missing-")) {
                    assertEquals(TierReader.Status.NOT_FOUND, outcome.status(), what);
                } else {
                    assertEquals(TierReader.Status.OK, outcome.status(), what + ": " + outcome);
                    assertArrayEquals(content(keys.get(i), sizeOf(keys.get(i))), bytesOf(outcome.data()), what + ": " + keys.get(i));
                }
            }
        }
    }

    @ParameterizedTest(name = "objects of {0} bytes and more, read on up to {1} threads")
    @CsvSource({"1, 1", "100000, 4"})
    void a_key_whose_lease_ran_short_is_looked_up_again_and_read_where_it_lives_now(int smallestObject, int readThreads) throws Exception {
        smallest = smallestObject;
        // A short lease, so the sink can outlast it; the allocation deadline stays long.
        cluster = TierCluster.start(TierCluster.smallLayout(root, 8), Duration.ofSeconds(60), Duration.ofMillis(400), 2);
        List<String> keys = offload(cluster.node(0), "lease-", 8);
        TierCluster.Node writer = cluster.node(0);
        TierCluster.Node reader = cluster.node(1);
        String overwritten = keys.get(6);
        byte[] newContent = content("new content of " + overwritten, 5000);

        List<TierReader.Outcome> all = new ArrayList<>();
        new TierReader(reader.tier(), readThreads).getPipelined(TENANT, keys, 4, 8, new TierReader.BatchSink() {
            @Override
            public List<ByteBuffer> destinations(List<String> batch) {
                return null;
            }

            @Override
            public void accept(List<TierReader.Outcome> outcomes) throws IOException {
                all.addAll(outcomes);
                if (all.size() == 4) {
                    // The second batch's mappings were looked up with the first; overwrite one of its keys and
                    // outlast the lease. Its old pages still hold the old bytes (quarantine keeps them until
                    // the lease is over, and nothing else is written), so a reader that trusted its stale
                    // mapping would hand back the old object with a matching checksum.
                    TierWriter.Outcome rewrite = writer.writer().offload(TENANT,
                            List.of(new TierWriter.ObjectSource(overwritten, List.of(ByteBuffer.wrap(newContent)))), true).get(0);
                    assertTrue(rewrite.ok(), rewrite.toString());
                    try {
                        Thread.sleep(500);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IOException(e);
                    }
                }
            }
        });

        assertEquals(keys.size(), all.size());
        for (int i = 0; i < keys.size(); i++) {
            TierReader.Outcome outcome = all.get(i);
            assertEquals(TierReader.Status.OK, outcome.status(), outcome.toString());
            byte[] expected = i == 6 ? newContent : content(keys.get(i), sizeOf(keys.get(i)));
            assertArrayEquals(expected, bytesOf(outcome.data()), keys.get(i));
        }
        assertNotEquals(sizeOf(overwritten), newContent.length, "the two versions differ in size too");
        assertEquals(readThreads > 1, reader.tier().ioThreadsStarted() > 0, "batches of 4 objects of 100-109 KB have helpers");
    }

    @Test
    void lookups_shrink_by_halves_to_one_batch_when_reading_them_takes_over_a_quarter_of_the_lease() {
        long leaseMs = 4000;
        assertEquals(512, TierReader.shrinkLookups(512, 64, 999_000_000L, leaseMs), "within a quarter: unchanged");
        assertEquals(256, TierReader.shrinkLookups(512, 64, 1_001_000_000L, leaseMs));
        assertEquals(56, TierReader.shrinkLookups(105, 7, 2_000_000_000L, leaseMs), "half of 105 rounds up to whole batches of 7");
        assertEquals(64, TierReader.shrinkLookups(64, 64, 5_000_000_000L, leaseMs), "never below one batch");
    }

    @Test
    void sizes_below_one_are_refused() {
        cluster = null;
        TierReader reader = new TierReader(null);
        assertThrows(IllegalArgumentException.class, () -> reader.getPipelined(TENANT, List.of("a"), 0, 8, new Collected()));
        assertThrows(IllegalArgumentException.class, () -> reader.getPipelined(TENANT, List.of("a"), 8, 0, new Collected()));
    }
}
