package io.mcctl.master.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.testkit.TestIo;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.RenewDistributedPageAllocationResponse;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A writer cannot outlive its allocation: it stops at its own deadline, renews a long write instead, and the master keeps
 * an expired allocation's pages from new objects for the grace, so even a writer that does not fence itself destroys
 * nothing committed meanwhile.
 */
@Timeout(90)
@ParameterizedClass(name = "{0}")
@EnumSource(TestIo.class)
class WriterFenceTest {

    /** The IO the nodes move bytes through: every test here runs over POSIX and over USRBIO. */
    @Parameter
    TestIo ioKind;

    static final long PAGE = TierCluster.PAGE;
    static final Duration DEADLINE = Duration.ofSeconds(1);

    @TempDir
    Path root;
    TierCluster cluster;

    @AfterEach
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void a_write_longer_than_the_deadline_renews_and_commits() throws IOException {
        cluster = TierCluster.start(TierCluster.smallLayout(root, 2), DEADLINE, Duration.ofSeconds(5), Duration.ofSeconds(1), 1, ioKind);
        TierNode node = cluster.node(0).tier();
        // 16 chunks of one page, each 150 ms apart: about 2.4 s of writing against a 1 s deadline.
        TierWriter slow = new TierWriter(node, new TierWriter.Listener() {
            @Override
            public void beforeChunk(String key, long done) {
                sleep(150);
            }
        }, (int) PAGE);
        int size = 16 * (int) PAGE;
        TierWriter.Outcome outcome = slow.offload("t", List.of(TestObjects.object("long", size)), false).get(0);
        assertTrue(outcome.ok(), outcome.toString());
        TierReader.Outcome read = cluster.node(0).reader().get("t", List.of("long")).get(0);
        assertTrue(read.ok(), read.toString());
        assertArrayEquals(TestObjects.content("long", size), TestObjects.bytesOf(read.data()));
    }

    @Test
    void a_writer_held_up_past_its_deadline_writes_nothing_and_says_its_allocation_expired() throws IOException {
        cluster = TierCluster.start(TierCluster.smallLayout(root, 2), DEADLINE, Duration.ofSeconds(5), Duration.ofSeconds(5), 1, ioKind);
        TierNode node = cluster.node(0).tier();
        List<String> allocatedKeys = new ArrayList<>();
        TierWriter stalled = new TierWriter(node, new TierWriter.Listener() {
            @Override
            public void allocated(List<String> keys) {
                allocatedKeys.addAll(keys);
                sleep(DEADLINE.toMillis() + 300); // as a process stopped after its allocate
            }
        });
        TierWriter.Outcome outcome = stalled.offload("t", List.of(TestObjects.object("stalled", 8 * (int) PAGE)), false).get(0);
        assertEquals(List.of("stalled"), allocatedKeys);
        assertFalse(outcome.ok());
        assertTrue(outcome.message().contains("allocation expired"), outcome.message());
        DistributedDiskDescriptor place = outcome.descriptor();
        byte[] onDisk = readRaw(Path.of(place.getFilePath()), place.getOffset(), (int) place.getObjectSize());
        assertArrayEquals(new byte[onDisk.length], onDisk, "not one byte was written after the deadline");
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, assertMiss(cluster.node(0).client(), "stalled"));
    }

    @Test
    void renewing_a_wrong_descriptor_or_an_expired_allocation_is_refused() throws Exception {
        cluster = TierCluster.start(TierCluster.smallLayout(root, 2), DEADLINE, Duration.ofSeconds(5), Duration.ofSeconds(1), 1, ioKind);
        MasterClient client = cluster.node(0).client();
        DistributedDiskDescriptor place = client.allocate("t", "k", 2 * PAGE, false).getDistributedDisk();
        DistributedDiskDescriptor wrong = place.toBuilder().setOffset(place.getOffset() + PAGE).build();
        RenewDistributedPageAllocationResponse refused = client.renew(List.of("k"), List.of("t"), List.of(wrong));
        assertEquals(ErrorCode.INVALID_PARAMS, refused.getResults(0).getError(), refused.toString());
        assertTrue(TierCluster.await(Duration.ofSeconds(20), () -> client.stats().getInFlightAllocations() == 0),
                "it still expires at its deadline");
        RenewDistributedPageAllocationResponse late = client.renew(List.of("k"), List.of("t"), List.of(place));
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, late.getResults(0).getError(), late.toString());
        assertEquals(0, client.stats().getInFlightAllocations());
    }

    @Test
    void a_foreign_writer_that_does_not_fence_itself_destroys_no_object_committed_meanwhile() throws Exception {
        cluster = TierCluster.start(TierCluster.smallLayout(root, 1), DEADLINE, Duration.ofSeconds(5), Duration.ofSeconds(6), 1, ioKind);
        MasterClient client = cluster.node(0).client();
        TierWriter writer = cluster.node(0).writer();
        // The foreign writer's allocation, then committed objects on every other page of the only bucket.
        DistributedDiskDescriptor foreign = client.allocate("t", "foreign", 16 * PAGE, false).getDistributedDisk();
        Map<String, byte[]> committed = new TreeMap<>();
        offloadAll(writer, committed, "before-", 15);
        assertEquals(0, client.stats().getBuckets(0).getPagesFree(), "the bucket is full");
        assertTrue(TierCluster.await(Duration.ofSeconds(20), () -> client.stats().getInFlightAllocations() == 0),
                "the foreign allocation expired");
        // Other writers go on across the deadline: none of them may be given the expired pages.
        List<TierWriter.Outcome> during = writer.offload("t", List.of(TestObjects.object("during", 16 * (int) PAGE)), false);
        assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, during.get(0).code(), during.toString());
        // Late, and unfenced: the foreign writer's pwrite lands where its expired descriptor says.
        byte[] garbage = new byte[(int) foreign.getObjectSize()];
        Arrays.fill(garbage, (byte) 0x5a);
        try (FileChannel file = FileChannel.open(Path.of(foreign.getFilePath()), StandardOpenOption.WRITE)) {
            file.write(ByteBuffer.wrap(garbage), foreign.getOffset());
        }
        assertReadBack(committed);
        // After the grace the pages serve new objects again.
        assertTrue(TierCluster.await(Duration.ofSeconds(30), () -> client.stats().getBuckets(0).getPagesFree() == 16));
        offloadAll(writer, committed, "after-", 1);
        assertReadBack(committed);
    }

    private void offloadAll(TierWriter writer, Map<String, byte[]> committed, String prefix, int count) {
        List<TierWriter.ObjectSource> objects = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            objects.add(TestObjects.object(prefix + i, 16 * (int) PAGE));
        }
        for (TierWriter.Outcome outcome : writer.offload("t", objects, false)) {
            assertTrue(outcome.ok(), outcome.toString());
            committed.put(outcome.key(), TestObjects.content(outcome.key(), 16 * (int) PAGE));
        }
    }

    private void assertReadBack(Map<String, byte[]> committed) {
        List<String> keys = new ArrayList<>(committed.keySet());
        List<TierReader.Outcome> read = cluster.node(0).reader().get("t", keys);
        for (int i = 0; i < keys.size(); i++) {
            assertTrue(read.get(i).ok(), read.get(i).toString());
            assertArrayEquals(committed.get(keys.get(i)), TestObjects.bytesOf(read.get(i).data()), keys.get(i));
        }
    }

    private static ErrorCode assertMiss(MasterClient client, String key) {
        try {
            client.getMapping("t", key);
            return ErrorCode.OK;
        } catch (MasterException e) {
            return e.code();
        }
    }

    private static byte[] readRaw(Path file, long offset, int size) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(size);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            while (buffer.hasRemaining() && channel.read(buffer, offset + buffer.position()) >= 0) {
                // a sparse bucket file reads back zeros
            }
        }
        return buffer.array();
    }
}
