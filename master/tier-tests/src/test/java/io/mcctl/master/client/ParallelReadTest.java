package io.mcctl.master.client;

import static io.mcctl.testkit.TestObjects.bytesOf;
import static io.mcctl.testkit.TestObjects.content;
import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.testkit.TestIo;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A batch read on several threads ({@link TierReader#TierReader(TierNode, int)}): each key gets its own bytes and
 * outcome in key order, whichever thread read it; a buffer named twice is filled in key order; small batches stay on
 * the calling thread. A lease that lapses is tested on several threads in {@link PipelinedReadTest}.
 */
@Timeout(120)
@ParameterizedClass(name = "{0}")
@EnumSource(TestIo.class)
class ParallelReadTest {

    /** The IO the nodes move bytes through: every test here runs over POSIX and over USRBIO. */
    @Parameter
    TestIo ioKind;

    static final String TENANT = "tenant-par";

    @TempDir
    Path root;
    TierCluster cluster;

    @AfterEach
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    /** 64 buckets of 8 MiB: room for many objects of a few hundred KiB. */
    BucketLayout layout() {
        return new BucketLayout(root, 64, TierCluster.PAGE, 8 * TierCluster.MIB);
    }

    static int sizeOf(String key) {
        return 64 * 1024 + Math.floorMod(key.hashCode(), 256 * 1024);
    }

    static List<String> offload(TierCluster.Node node, String prefix, int count) {
        List<String> keys = new ArrayList<>();
        List<TierWriter.ObjectSource> objects = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            keys.add(prefix + i);
            objects.add(object(prefix + i, sizeOf(prefix + i)));
        }
        for (TierWriter.Outcome outcome : node.writer().offload(TENANT, objects, false)) {
            assertTrue(outcome.ok(), outcome.toString());
        }
        return keys;
    }

    static void corrupt(DistributedDiskDescriptor d) throws IOException {
        try (RandomAccessFile file = new RandomAccessFile(d.getFilePath(), "rw")) {
            file.seek(d.getOffset() + d.getObjectSize() / 2);
            int original = file.read();
            file.seek(d.getOffset() + d.getObjectSize() / 2);
            file.write(original ^ 0x21);
        }
    }

    @Test
    void every_key_of_a_batch_read_on_four_threads_gets_its_own_bytes_and_outcome_in_key_order() throws Exception {
        cluster = TierCluster.start(layout(), Duration.ofSeconds(60), Duration.ofSeconds(30), io.mcctl.master.server.MasterServer.Options.DEFAULT_ALLOCATION_GRACE, 1, ioKind);
        List<String> keys = offload(cluster.node(0), "p-", 48);
        String damaged = keys.get(17);
        corrupt(cluster.node(0).client().getMapping(TENANT, damaged).getDistributedDisk());
        keys.add(5, "never-offloaded");
        keys.add(30, keys.get(40)); // a key read twice in one batch
        TierCluster.Node node = cluster.addNode(false);
        TierReader reader = new TierReader(node.tier(), 4);

        List<ByteBuffer> buffers = new ArrayList<>();
        for (String key : keys) {
            buffers.add(ByteBuffer.allocateDirect(key.startsWith("p-") ? sizeOf(key) : 16));
        }
        for (List<TierReader.Outcome> read : List.of(reader.get(TENANT, keys), reader.getInto(TENANT, keys, buffers))) {
            assertEquals(keys.size(), read.size());
            for (int i = 0; i < keys.size(); i++) {
                String key = keys.get(i);
                TierReader.Outcome outcome = read.get(i);
                assertEquals(key, outcome.key(), "outcome " + i);
                if (key.equals("never-offloaded")) {
                    assertEquals(TierReader.Status.NOT_FOUND, outcome.status());
                } else if (key.equals(damaged)) {
                    assertEquals(TierReader.Status.CORRUPT, outcome.status(), outcome.toString());
                    assertNull(outcome.data());
                } else {
                    assertEquals(TierReader.Status.OK, outcome.status(), outcome.toString());
                    assertArrayEquals(content(key, sizeOf(key)), bytesOf(outcome.data()), key);
                }
            }
        }
        assertTrue(node.tier().ioThreadsStarted() > 0, "a batch of 49 objects of 64-320 KiB is read on helper threads too");
        assertEquals(2, node.metrics().checksumFailuresTotal(), "the damaged object, once per read");
    }

    @Test
    void batches_read_from_several_threads_at_once_share_the_readers_threads_and_each_gets_its_own_bytes() throws Exception {
        cluster = TierCluster.start(layout(), Duration.ofSeconds(60), Duration.ofSeconds(30), io.mcctl.master.server.MasterServer.Options.DEFAULT_ALLOCATION_GRACE, 1, ioKind);
        List<String> keys = offload(cluster.node(0), "s-", 64);
        TierCluster.Node node = cluster.addNode(false);
        TierReader reader = new TierReader(node.tier(), 3);
        ExecutorService callers = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> reads = new ArrayList<>();
            for (int c = 0; c < 4; c++) {
                int caller = c;
                reads.add(callers.submit(() -> {
                    for (int round = 0; round < 5; round++) {
                        // Each caller reads its own rotation of the keys, so batches differ in what they hold.
                        List<String> batch = new ArrayList<>(keys.subList(caller * 7 + round, keys.size()));
                        batch.addAll(keys.subList(0, caller * 7 + round));
                        List<TierReader.Outcome> read = reader.get(TENANT, batch);
                        for (int i = 0; i < batch.size(); i++) {
                            assertEquals(batch.get(i), read.get(i).key());
                            assertEquals(TierReader.Status.OK, read.get(i).status(), read.get(i).toString());
                            assertArrayEquals(content(batch.get(i), sizeOf(batch.get(i))), bytesOf(read.get(i).data()), batch.get(i));
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> read : reads) {
                read.get();
            }
        } finally {
            callers.shutdownNow();
        }
        assertEquals(4 * 5 * 64, node.metrics().readsTotal());
    }

    @Test
    void one_buffer_named_for_several_keys_is_filled_with_their_objects_in_key_order() throws Exception {
        cluster = TierCluster.start(layout(), Duration.ofSeconds(60), Duration.ofSeconds(30), io.mcctl.master.server.MasterServer.Options.DEFAULT_ALLOCATION_GRACE, 1, ioKind);
        List<String> keys = offload(cluster.node(0), "b-", 6);
        int total = 0;
        for (String key : keys) {
            total += sizeOf(key);
        }
        ByteBuffer shared = ByteBuffer.allocateDirect(total);
        List<ByteBuffer> destinations = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            destinations.add(shared);
        }
        TierCluster.Node node = cluster.addNode(false);
        List<TierReader.Outcome> read = new TierReader(node.tier(), 4).getInto(TENANT, keys, destinations);

        shared.flip();
        for (int i = 0; i < keys.size(); i++) {
            assertEquals(TierReader.Status.OK, read.get(i).status(), read.get(i).toString());
            byte[] object = new byte[sizeOf(keys.get(i))];
            shared.get(object);
            assertArrayEquals(content(keys.get(i), object.length), object, "object " + i + " follows the one before it");
        }
    }

    @Test
    void a_batch_of_small_objects_is_read_on_the_calling_thread_alone() throws Exception {
        cluster = TierCluster.start(layout(), Duration.ofSeconds(60), Duration.ofSeconds(30), io.mcctl.master.server.MasterServer.Options.DEFAULT_ALLOCATION_GRACE, 1, ioKind);
        List<TierWriter.ObjectSource> objects = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            keys.add("small-" + i);
            objects.add(object("small-" + i, 4000)); // 240 KB in all: less than one helper's share
        }
        for (TierWriter.Outcome outcome : cluster.node(0).writer().offload(TENANT, objects, false)) {
            assertTrue(outcome.ok(), outcome.toString());
        }
        TierCluster.Node node = cluster.addNode(false);
        List<TierReader.Outcome> read = new TierReader(node.tier(), 4).get(TENANT, keys);
        for (int i = 0; i < keys.size(); i++) {
            assertArrayEquals(content(keys.get(i), 4000), bytesOf(read.get(i).data()), keys.get(i));
        }
        assertEquals(0, node.tier().ioThreadsStarted());
    }

    @Test
    void the_threads_take_indexes_in_order_so_that_what_a_stop_leaves_untaken_is_the_tail() throws Exception {
        cluster = TierCluster.start(layout(), Duration.ofSeconds(60), Duration.ofSeconds(30), io.mcctl.master.server.MasterServer.Options.DEFAULT_ALLOCATION_GRACE, 1, ioKind);
        TierNode tier = cluster.node(0).tier();
        java.util.SplittableRandom random = new java.util.SplittableRandom(20261204);
        for (int round = 0; round < 200; round++) {
            int count = 1 + random.nextInt(300);
            int goOnFor = random.nextInt(count + 10); // how many asks say go on; the rest say stop
            int helpers = random.nextInt(5);
            java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.ConcurrentHashMap<Integer, Integer> taken = new java.util.concurrent.ConcurrentHashMap<>();
            int untaken = tier.shareOut(0, count, helpers, () -> asked.incrementAndGet() <= goOnFor, i -> {
                taken.merge(i, 1, Integer::sum);
                if (i % 7 == 0) {
                    Thread.yield(); // so that the threads interleave
                }
            });
            String what = "round " + round + ": " + count + " indexes, " + helpers + " helpers, " + goOnFor + " asks to go on";
            assertTrue(untaken >= 1, what + ": the caller takes its first index without asking");
            assertEquals(untaken, taken.size(), what);
            for (int i = 0; i < untaken; i++) {
                assertEquals(1, taken.get(i), what + ": index " + i + " taken once");
            }
            if (goOnFor >= count + helpers) {
                assertEquals(count, untaken, what + ": nothing said stop before the last index");
            }
        }
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> tier.shareOut(0, 50, 3, () -> true, i -> {
            if (i == 20) {
                throw new IllegalStateException("index 20 failed");
            }
        }));
        assertEquals("index 20 failed", thrown.getMessage());
    }

    @Test
    void read_threads_outside_one_to_sixteen_are_refused_in_one_line() {
        IllegalArgumentException none = assertThrows(IllegalArgumentException.class, () -> new TierReader(null, 0));
        assertEquals("read threads 0 must be from 1 to 16", none.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new TierReader(null, 17));
    }
}
