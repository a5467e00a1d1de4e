package io.mcctl.master.node;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.io.BucketFileIo;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A node's DRAM segment: bytes across its direct buffers, and an index that never answers bytes that changed. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class DramSegmentTest {

    private static final long MiB = 1 << 20;

    private static byte[] bytes(int size, long seed) {
        byte[] data = new byte[size];
        new Random(seed).nextBytes(data);
        return data;
    }

    /** What a writer does: claim the range, copy the bytes in, index them under the epoch it began in. */
    private static boolean put(DramSegment segment, long epoch, String key, long offset, byte[] data) {
        segment.claim("t", key, offset, data.length);
        segment.copyIn(offset, ByteBuffer.wrap(data));
        return segment.index(epoch, "t", key, offset, data.length, BucketFileIo.crc32c(ByteBuffer.wrap(data)));
    }

    private static byte[] array(ByteBuffer buffer) {
        byte[] out = new byte[buffer.remaining()];
        buffer.duplicate().get(out);
        return out;
    }

    @Test
    void an_object_that_crosses_a_buffer_boundary_reads_back_byte_exact() throws Exception {
        DramSegment segment = DramSegment.allocate(3 * MiB, MiB);
        byte[] data = bytes(1_200_000, 1); // from inside the first buffer, through the whole second, into the third
        assertTrue(put(segment, segment.epoch(), "k", MiB - 100, data));
        DramSegment.Read read = segment.read("t", "k");
        assertNull(read.miss());
        assertArrayEquals(data, array(read.data()));

        ByteBuffer streamed = ByteBuffer.allocate(data.length);
        segment.claim("t", "s", 0, data.length);
        var channel = segment.writer(0);
        for (int at = 0; at < data.length; at += 70_000) {
            int n = Math.min(70_000, data.length - at);
            assertEquals(n, channel.write(ByteBuffer.wrap(data, at, n)));
        }
        segment.copyOut(0, streamed);
        assertArrayEquals(data, streamed.array());
    }

    @Test
    void writing_a_range_drops_every_object_it_overlaps_and_no_other() {
        DramSegment segment = DramSegment.allocate(2 * MiB, MiB);
        long epoch = segment.epoch();
        put(segment, epoch, "left", 0, bytes(1000, 1));        // [0, 1000): untouched
        put(segment, epoch, "straddle", 1000, bytes(1000, 2)); // [1000, 2000): the new range starts inside it
        put(segment, epoch, "inside", 2500, bytes(100, 3));    // [2500, 2600): wholly inside
        put(segment, epoch, "tail", 2900, bytes(500, 4));      // [2900, 3400): the new range ends inside it
        put(segment, epoch, "right", 3400, bytes(500, 5));     // [3400, 3900): untouched
        put(segment, epoch, "new", 1500, bytes(1500, 6));      // [1500, 3000)
        assertEquals(List.of("left", "new", "right"), segment.entries().stream().map(DramSegment.Entry::key).toList());
        assertNotNull(segment.read("t", "left").data());
        assertTrue(segment.read("t", "straddle").miss().contains("not in this node's segment"));
        assertEquals(1500 + 1000 + 500, segment.usage()[1]);
    }

    @Test
    void a_new_registration_forgets_everything_and_a_write_begun_before_it_is_not_indexed() {
        DramSegment segment = DramSegment.allocate(MiB, MiB);
        long before = segment.epoch();
        put(segment, before, "old", 0, bytes(100, 1));
        long after = segment.reset();
        assertNull(segment.find("t", "old"));
        assertFalse(put(segment, before, "late", 200, bytes(100, 2)), "began under the earlier registration");
        assertNull(segment.find("t", "late"));
        assertTrue(put(segment, after, "fresh", 200, bytes(100, 3)));
        assertEquals(1, segment.usage()[0]);
    }

    @Test
    void bytes_changed_under_an_entry_are_a_miss_and_the_entry_goes() {
        DramSegment segment = DramSegment.allocate(MiB, MiB);
        put(segment, segment.epoch(), "k", 4096, bytes(5000, 1));
        segment.copyIn(4096 + 10, ByteBuffer.wrap(new byte[] {1, 2, 3})); // a stray write that did not claim the range
        DramSegment.Read read = segment.read("t", "k");
        assertNull(read.data());
        assertTrue(read.miss().contains("no longer match their CRC32C"), read.miss());
        assertNull(segment.find("t", "k"));
    }

    @Test
    void a_reader_racing_a_writer_of_the_same_range_gets_whole_objects_or_misses() throws Exception {
        DramSegment segment = DramSegment.allocate(2 * MiB, MiB);
        byte[][] versions = {bytes(300_000, 1), bytes(300_000, 2)};
        long offset = MiB - 150_000; // across the buffer boundary
        put(segment, segment.epoch(), "k", offset, versions[0]);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        java.util.concurrent.atomic.AtomicInteger readsBegun = new java.util.concurrent.atomic.AtomicInteger();
        Thread writer = new Thread(() -> {
            for (int i = 1; i <= 400; i++) {
                // Overwrite only once a read has begun since the last write, so reads and writes of the range overlap.
                int seen = readsBegun.get();
                for (int spin = 0; spin < 1_000_000 && readsBegun.get() == seen; spin++) {
                    Thread.onSpinWait();
                }
                put(segment, segment.epoch(), "k", offset, versions[i % 2]);
            }
        });
        writer.start();
        int reads = 0;
        while (writer.isAlive()) {
            reads++;
            readsBegun.incrementAndGet();
            DramSegment.Read read = segment.read("t", "k");
            if (read.data() != null) {
                byte[] got = array(read.data());
                if (!java.util.Arrays.equals(got, versions[0]) && !java.util.Arrays.equals(got, versions[1])) {
                    failure.set(new AssertionError("read " + reads + " handed out bytes of neither version"));
                    break;
                }
            }
        }
        writer.join();
        assertNull(failure.get());
        assertArrayEquals(versions[0], array(segment.read("t", "k").data()), "the last version, once the writer is done");
    }

    @Test
    void sizes_it_cannot_have_are_refused_with_the_reason() {
        assertTrue(DramSegment.problemWith(0).contains("at least 1MiB"));
        assertTrue(DramSegment.problemWith(MiB - 1).contains("at least 1MiB"));
        String tooLarge = DramSegment.problemWith(Long.MAX_VALUE / 2);
        assertTrue(tooLarge.contains("-XX:MaxDirectMemorySize"), tooLarge);
        assertThrows(DramSegment.AllocationException.class, () -> DramSegment.allocate(Long.MAX_VALUE / 2));
        assertNull(DramSegment.problemWith(MiB));
        assertNotNull(DramSegment.allocate(MiB));
        assertEquals("range 1048000+1000 is outside this node's segment of 1048576 bytes", DramSegment.allocate(MiB).checkRange(1_048_000, 1000));
    }
}
