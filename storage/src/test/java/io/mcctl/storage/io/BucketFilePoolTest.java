package io.mcctl.storage.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.layout.BucketFiles;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class BucketFilePoolTest {

    private static final long BUCKET_SIZE = 1 << 20;
    private static final int OBJECT_SIZE = 4096;

    @TempDir
    Path root;

    private BucketLayout layout;
    private BucketFilePool pool;
    private BucketFileIo io;
    /** The CRC of the object written at page p of bucket b, for b < 4 and p < 16. */
    private final int[][] crcs = new int[4][16];

    @BeforeEach
    void write_objects_into_four_buckets() throws IOException {
        layout = new BucketLayout(root, 4, 4096, BUCKET_SIZE);
        BucketFiles.initialise(layout);
        try (BucketFilePool writer = new BucketFilePool(true)) {
            BucketFileIo writerIo = new BucketFileIo(new PosixBucketIo(writer, false), BUCKET_SIZE);
            for (int bucket = 0; bucket < 4; bucket++) {
                for (int page = 0; page < 16; page++) {
                    crcs[bucket][page] = writerIo.write(layout.bucketPath(bucket), (long) page * OBJECT_SIZE,
                            ByteBuffer.wrap(object(bucket, page)));
                }
            }
        }
        pool = new BucketFilePool(false);
        io = new BucketFileIo(new PosixBucketIo(pool, false), BUCKET_SIZE);
    }

    @AfterEach
    void close_the_pool() throws IOException {
        pool.close();
    }

    static byte[] object(int bucket, int page) {
        return BucketFileIoTest.bytes(OBJECT_SIZE, bucket * 100 + page);
    }

    private void readAndCheck(int bucket, int page) throws IOException {
        ByteBuffer read = io.read(layout.bucketPath(bucket), (long) page * OBJECT_SIZE, OBJECT_SIZE, crcs[bucket][page]);
        byte[] got = new byte[read.remaining()];
        read.get(got);
        assertArrayEquals(object(bucket, page), got);
    }

    @Test
    void eight_threads_reading_four_files_share_one_channel_per_file() throws Exception {
        int threads = 8;
        CyclicBarrier start = new CyclicBarrier(threads);
        Map<Path, Set<FileChannel>> seen = new ConcurrentHashMap<>();
        ExecutorService executor = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int me = t;
                futures.add(executor.submit(() -> {
                    start.await();
                    for (int i = 0; i < 400; i++) {
                        int bucket = (me + i) % 4;
                        readAndCheck(bucket, (me * 7 + i) % 16);
                        Path file = layout.bucketPath(bucket);
                        seen.computeIfAbsent(file, f -> java.util.Collections.synchronizedSet(
                                java.util.Collections.newSetFromMap(new IdentityHashMap<>()))).add(pool.channel(file));
                        assertTrue(pool.openCount() <= 4, "open channels: " + pool.openCount());
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get();
            }
        } finally {
            executor.shutdownNow();
        }
        assertEquals(4, pool.openCount());
        assertEquals(4, seen.size());
        for (Map.Entry<Path, Set<FileChannel>> e : seen.entrySet()) {
            assertEquals(1, e.getValue().size(), "channels opened for " + e.getKey());
        }
    }

    @Test
    void a_channel_closed_by_an_interrupt_is_reopened_for_other_threads() throws Exception {
        Path file = layout.bucketPath(1);
        readAndCheck(1, 0);
        FileChannel first = pool.channel(file);
        assertEquals(1, pool.openCount());

        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread interrupted = new Thread(() -> {
            Thread.currentThread().interrupt();
            try {
                readAndCheck(1, 2);
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        interrupted.start();
        interrupted.join();

        // The interrupted thread's read closed the shared channel (that is what FileChannel does) and failed.
        assertInstanceOf(ClosedByInterruptException.class, failure.get());
        assertFalse(first.isOpen());
        assertEquals(0, pool.openCount());

        // Another thread reads on as if nothing had happened, through a fresh channel.
        AtomicReference<Throwable> otherFailure = new AtomicReference<>();
        Thread other = new Thread(() -> {
            try {
                readAndCheck(1, 2);
                readAndCheck(1, 15);
            } catch (Throwable t) {
                otherFailure.set(t);
            }
        });
        other.start();
        other.join();
        assertEquals(null, otherFailure.get());
        FileChannel second = pool.channel(file);
        assertNotSame(first, second);
        assertTrue(second.isOpen());
        assertEquals(1, pool.openCount());
        readAndCheck(1, 3);
    }

    @Test
    void a_writer_interrupted_before_its_write_closes_the_channel_and_the_next_write_reopens_it() throws Exception {
        try (BucketFilePool writers = new BucketFilePool(true)) {
            BucketFileIo writerIo = new BucketFileIo(new PosixBucketIo(writers, false), BUCKET_SIZE);
            Path file = layout.bucketPath(2);
            int crc = writerIo.write(file, 0, ByteBuffer.wrap(object(9, 9)));
            FileChannel before = writers.channel(file);
            Thread interrupted = new Thread(() -> {
                Thread.currentThread().interrupt();
                try {
                    writerIo.write(file, OBJECT_SIZE, ByteBuffer.wrap(object(8, 8)));
                } catch (IOException expected) {
                    // ClosedByInterruptException
                }
            });
            interrupted.start();
            interrupted.join();
            assertFalse(before.isOpen());
            int again = writerIo.write(file, 0, ByteBuffer.wrap(object(9, 9)));
            assertEquals(crc, again);
            ByteBuffer read = writerIo.read(file, 0, OBJECT_SIZE, crc);
            assertEquals(OBJECT_SIZE, read.remaining());
        }
    }

    @Test
    void the_same_channel_is_returned_until_it_is_closed() throws IOException {
        Path file = layout.bucketPath(0);
        FileChannel a = pool.channel(file);
        assertSame(a, pool.channel(file));
        a.close();
        FileChannel b = pool.channel(file);
        assertNotSame(a, b);
        assertTrue(b.isOpen());
    }

    @Test
    void a_missing_file_is_never_created_and_leaves_nothing_open() {
        Path missing = root.resolve("bucket_77.data");
        assertThrows(BucketFileMissingException.class, () -> pool.channel(missing));
        try (BucketFilePool writers = new BucketFilePool(true)) {
            assertThrows(BucketFileMissingException.class, () -> writers.channel(missing));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        assertFalse(Files.exists(missing));
        assertEquals(0, pool.openCount());
    }

    @Test
    void verify_keeps_an_open_file_still_at_its_path_and_opens_the_file_that_replaced_it() throws IOException {
        Path file = layout.bucketPath(2);
        OpenFiles.OpenFile<?> written = pool.open(file);
        assertSame(written, pool.verify(file, written), "still the file at the path");

        Path copy = root.resolve("copy");
        Files.copy(file, copy);
        Files.move(copy, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        OpenFiles.OpenFile<?> now = pool.verify(file, written);
        assertNotSame(written, now, "another file at the path: the bytes must be written again through the new one");
        assertFalse(((java.nio.channels.FileChannel) written.handle()).isOpen(), "the channel on the old file is closed");
        assertSame(now, pool.open(file));
        assertSame(now, pool.verify(file, now));
        readAndCheck(2, 5); // the copy holds the objects

        Files.delete(file);
        BucketFileMissingException gone = assertThrows(BucketFileMissingException.class, () -> pool.verify(file, now));
        assertTrue(gone.getMessage().contains(file + " was deleted while this node had it open"), gone.getMessage());
    }

    @Test
    void a_read_that_fails_its_checksum_in_a_replaced_file_is_read_again_from_the_new_one() throws IOException {
        Path file = layout.bucketPath(1);
        readAndCheck(1, 3); // the pool holds the file open
        try (BucketFilePool writer = new BucketFilePool(true)) {
            Path fresh = root.resolve("fresh");
            Files.copy(file, fresh);
            BucketFileIo writerIo = new BucketFileIo(new PosixBucketIo(writer, false), BUCKET_SIZE);
            crcs[1][3] = writerIo.write(fresh, 3L * OBJECT_SIZE, ByteBuffer.wrap(object(3, 1)));
            Files.move(fresh, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        }
        ByteBuffer read = io.read(file, 3L * OBJECT_SIZE, OBJECT_SIZE, crcs[1][3]);
        byte[] got = new byte[read.remaining()];
        read.get(got);
        assertArrayEquals(object(3, 1), got, "read from the file now at the path, not the one the pool had open");
        assertFalse(pool.replaceIfStale(file), "the pool holds the new file now");
    }

    @Test
    void a_closed_pool_closes_its_channels_and_opens_no_more() throws IOException {
        FileChannel channel = pool.channel(layout.bucketPath(0));
        pool.close();
        assertFalse(channel.isOpen());
        assertEquals(0, pool.openCount());
        assertThrows(ClosedChannelException.class, () -> pool.channel(layout.bucketPath(1)));
    }
}
