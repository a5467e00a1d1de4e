package io.mcctl.storage.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.io.usrbio.StandinLibrary;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The same writes, reads and batches give the same bytes and the same outcomes through POSIX and through USRBIO (on
 * the stand-in library, with small rings and iovs so that objects split on block boundaries and batches take
 * several rounds).
 */
@Timeout(60)
class BucketIoParityTest {

    /** 64 KiB of iov in 16 KiB blocks, 4 IOs per ring, 2 ring sets. */
    static final UsrbioBucketIo.Options SMALL = new UsrbioBucketIo.Options(64 << 10, 16 << 10, 4, 2, Duration.ofSeconds(20));
    static final int FILE_SIZE = 1 << 20;

    @TempDir
    Path dir;

    Path mount;
    Path bucket0;
    Path bucket1;
    final List<BucketIo> opened = new ArrayList<>();

    @BeforeEach
    void setUp() throws IOException {
        mount = StandinLibrary.markMount(dir.resolve("mnt"));
        bucket0 = mount.resolve("bucket-0");
        bucket1 = mount.resolve("bucket-1");
        for (Path bucket : List.of(bucket0, bucket1)) {
            Files.write(bucket, new byte[FILE_SIZE]);
        }
    }

    @AfterEach
    void tearDown() throws IOException {
        for (BucketIo io : opened) {
            io.close();
        }
    }

    BucketIo open(String kind) throws IOException {
        BucketIo io = kind.equals("posix") ? new PosixBucketIo(new BucketFilePool(true), true)
                : new UsrbioBucketIo(StandinLibrary.load(), mount, true, SMALL);
        opened.add(io);
        assertEquals(kind, io.name());
        return io;
    }

    static byte[] random(int size, long seed) {
        byte[] bytes = new byte[size];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    @ParameterizedTest
    @ValueSource(strings = {"posix", "usrbio"})
    void a_gather_write_lands_at_its_offset_and_a_scatter_read_returns_it(String kind) throws IOException {
        BucketIo io = open(kind);
        byte[] object = random(200_000, 1); // three rounds of a 64 KiB iov, pieces cut at 16 KiB blocks
        ByteBuffer head = ByteBuffer.wrap(object, 0, 7);
        ByteBuffer middle = ByteBuffer.allocateDirect(150_000).put(object, 7, 150_000).flip();
        ByteBuffer tail = ByteBuffer.wrap(object, 150_007, object.length - 150_007);
        io.write(bucket0, 12_345, head, middle, tail);
        assertEquals(0, head.position(), "a write leaves positions as they were");
        assertEquals(0, middle.position());
        assertEquals(150_007, tail.position());

        byte[] onDisk = Files.readAllBytes(bucket0);
        byte[] written = new byte[object.length];
        System.arraycopy(onDisk, 12_345, written, 0, object.length);
        assertArrayEquals(object, written);
        assertEquals(0, onDisk[12_344]);
        assertEquals(0, onDisk[12_345 + object.length]);

        ByteBuffer first = ByteBuffer.allocate(70_001);
        ByteBuffer second = ByteBuffer.allocateDirect(object.length - 70_001);
        assertEquals(object.length, io.read(bucket0, 12_345, first, second));
        assertEquals(first.capacity(), first.position(), "a read advances positions past what it read");
        assertEquals(second.capacity(), second.position());
        byte[] back = new byte[object.length];
        first.flip().get(back, 0, 70_001);
        second.flip().get(back, 70_001, object.length - 70_001);
        assertArrayEquals(object, back);
    }

    @ParameterizedTest
    @ValueSource(strings = {"posix", "usrbio"})
    void a_read_that_meets_the_end_of_the_file_returns_what_is_before_it(String kind) throws IOException {
        BucketIo io = open(kind);
        byte[] object = random(40_000, 2);
        io.write(bucket1, FILE_SIZE - 40_000, ByteBuffer.wrap(object));
        ByteBuffer dst = ByteBuffer.allocate(100_000);
        assertEquals(40_000, io.read(bucket1, FILE_SIZE - 40_000, dst));
        assertEquals(40_000, dst.position());
        assertArrayEquals(object, java.util.Arrays.copyOf(dst.array(), 40_000));
        ByteBuffer past = ByteBuffer.allocate(10);
        assertEquals(0, io.read(bucket1, FILE_SIZE, past));
        assertEquals(0, io.read(bucket1, FILE_SIZE + 5000, past));
        assertEquals(0, past.position());
    }

    @ParameterizedTest
    @ValueSource(strings = {"posix", "usrbio"})
    void a_batch_runs_every_operation_and_one_failure_stays_with_its_operation(String kind) throws IOException {
        BucketIo io = open(kind);
        IoBatch batch = new IoBatch();
        List<byte[]> objects = new ArrayList<>();
        for (int i = 0; i < 12; i++) { // more pieces than a ring holds: several rounds
            byte[] object = random(5_000 + 3_000 * i, 10 + i);
            objects.add(object);
            batch.write(i % 2 == 0 ? bucket0 : bucket1, 80_000L * i + 17, ByteBuffer.wrap(object));
        }
        int missing = batch.write(mount.resolve("bucket-9"), 0, ByteBuffer.wrap(new byte[10]));
        int directory = batch.read(Files.createDirectories(mount.resolve("a-directory")), 0, ByteBuffer.allocate(10));
        io.execute(batch);
        for (int i = 0; i < 12; i++) {
            assertEquals(objects.get(i).length, batch.bytesDone(i), "write " + i);
        }
        assertInstanceOf(BucketFileMissingException.class, batch.failure(missing));
        assertNotNull(batch.failure(directory), "a read of a directory fails");
        assertThrows(IOException.class, () -> batch.bytesDone(directory));

        IoBatch reads = new IoBatch();
        List<ByteBuffer> dsts = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            ByteBuffer dst = i % 3 == 0 ? ByteBuffer.allocateDirect(objects.get(i).length) : ByteBuffer.allocate(objects.get(i).length);
            dsts.add(dst);
            reads.read(i % 2 == 0 ? bucket0 : bucket1, 80_000L * i + 17, dst);
        }
        int atEnd = reads.read(bucket1, FILE_SIZE - 3, ByteBuffer.allocate(50_000));
        io.execute(reads);
        for (int i = 0; i < 12; i++) {
            assertNull(reads.failure(i));
            assertEquals(objects.get(i).length, reads.bytesDone(i));
            byte[] back = new byte[objects.get(i).length];
            dsts.get(i).flip().get(back);
            assertArrayEquals(objects.get(i), back, "read " + i);
        }
        assertEquals(3, reads.bytesDone(atEnd));
    }

    @ParameterizedTest
    @ValueSource(strings = {"posix", "usrbio"})
    void threads_that_share_the_io_each_get_their_own_bytes(String kind) throws Exception {
        BucketIo io = open(kind);
        ExecutorService threads = Executors.newFixedThreadPool(4); // more threads than ring sets: they take turns
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                int thread = t;
                done.add(threads.submit(() -> {
                    for (int round = 0; round < 20; round++) {
                        byte[] object = random(30_000, thread * 1000L + round);
                        long offset = 250_000L * thread;
                        io.write(bucket0, offset, ByteBuffer.wrap(object));
                        ByteBuffer back = ByteBuffer.allocate(object.length);
                        assertEquals(object.length, io.read(bucket0, offset, back));
                        assertArrayEquals(object, back.array());
                    }
                    return null;
                }));
            }
            for (Future<?> future : done) {
                future.get();
            }
        } finally {
            threads.shutdownNow();
        }
        io.sync(bucket0);
        if (io instanceof UsrbioBucketIo usrbio) {
            assertTrue(usrbio.ringCount() <= SMALL.maxRings(), "ring sets are reused, never more than the limit");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"posix", "usrbio"})
    void a_missing_bucket_file_is_never_created(String kind) throws IOException {
        BucketIo io = open(kind);
        Path absent = mount.resolve("bucket-7");
        assertThrows(BucketFileMissingException.class, () -> io.write(absent, 0, ByteBuffer.wrap(new byte[1])));
        assertThrows(BucketFileMissingException.class, () -> io.read(absent, 0, ByteBuffer.allocate(1)));
        assertTrue(Files.notExists(absent));
    }

    @Test
    void usrbio_keeps_one_registered_fd_per_file_and_releases_them_on_close() throws IOException {
        UsrbioBucketIo io = (UsrbioBucketIo) open("usrbio");
        for (int i = 0; i < 5; i++) {
            io.write(bucket0, i * 10, ByteBuffer.wrap(new byte[] {1}));
            io.read(bucket1, i * 10, ByteBuffer.allocate(1));
        }
        assertEquals(2, io.openFileCount());
        io.close();
        assertEquals(0, io.openFileCount());
        opened.remove(io);
        // Deregistered before closed: the same fd numbers register again in a new instance.
        try (UsrbioBucketIo again = new UsrbioBucketIo(StandinLibrary.load(), mount, true, SMALL)) {
            again.write(bucket0, 0, ByteBuffer.wrap(new byte[] {2}));
            assertEquals(2, Files.readAllBytes(bucket0)[0]);
        }
    }

    @Test
    void usrbio_reports_a_failed_io_with_the_errno_text_of_its_completion() throws IOException {
        // A reader opens read-only, so a directory opens and registers, and its read fails in the library.
        try (BucketIo io = new UsrbioBucketIo(StandinLibrary.load(), mount, false, SMALL)) {
            Path directory = Files.createDirectories(mount.resolve("dir"));
            IOException e = assertThrows(IOException.class, () -> io.read(directory, 0, ByteBuffer.allocate(4)));
            assertTrue(e.getMessage().contains("Is a directory (errno 21)"), e.getMessage());
            assertTrue(e.getMessage().contains("read of 4 bytes at offset 0 of " + directory), e.getMessage());
        }
    }
}
