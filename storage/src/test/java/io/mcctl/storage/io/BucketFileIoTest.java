package io.mcctl.storage.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.layout.BucketFiles;
import io.mcctl.storage.layout.BucketLayout;
import java.io.EOFException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.ValueSource;
import io.mcctl.storage.io.usrbio.StandinLibrary;

/** The object rules above {@link BucketIo}, over POSIX and over USRBIO (the stand-in library on a root it takes for 3FS). */
@Timeout(60)
@ParameterizedClass(name = "{0}")
@ValueSource(strings = {"posix", "usrbio"})
class BucketFileIoTest {

    private static final long BUCKET_SIZE = 1 << 20;

    @Parameter
    String kind;

    @TempDir
    Path root;

    private BucketLayout layout;
    private BucketIo bucketIo;
    private BucketFileIo io;

    @BeforeEach
    void lay_out_eight_buckets() throws IOException {
        layout = new BucketLayout(root, 8, 4096, BUCKET_SIZE);
        BucketFiles.initialise(layout);
        bucketIo = open(kind, root, true);
        io = new BucketFileIo(bucketIo, BUCKET_SIZE);
    }

    /** The IO {@code kind} names, on {@code root} (made a stand-in 3FS mount for usrbio), with small rings so that objects split. */
    static BucketIo open(String kind, Path root, boolean writable) throws IOException {
        if (kind.equals("posix")) {
            return new PosixBucketIo(new BucketFilePool(writable), true);
        }
        return new UsrbioBucketIo(StandinLibrary.load(), StandinLibrary.markMount(root), writable, BucketIoParityTest.SMALL);
    }

    @AfterEach
    void close_the_io() throws IOException {
        bucketIo.close();
    }

    static byte[] bytes(int length, int seed) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i * 131 + seed * 7 + (i >>> 8));
        }
        return b;
    }

    static int crc32c(byte[] data) {
        CRC32C crc = new CRC32C();
        crc.update(data);
        return (int) crc.getValue();
    }

    static byte[] concat(byte[]... parts) {
        int total = Arrays.stream(parts).mapToInt(p -> p.length).sum();
        byte[] all = new byte[total];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, all, at, p.length);
            at += p.length;
        }
        return all;
    }

    static byte[] remaining(ByteBuffer buffer) {
        byte[] out = new byte[buffer.remaining()];
        buffer.duplicate().get(out);
        return out;
    }

    @Nested
    class Writing_then_reading {

        @Test
        void a_gather_of_several_buffers_reads_back_as_the_same_bytes_with_their_crc32c() throws IOException {
            Path file = layout.bucketPath(2);
            byte[] a = bytes(5000, 1);
            byte[] b = bytes(3, 2);
            byte[] c = bytes(70_000, 3);
            ByteBuffer heap = ByteBuffer.wrap(a);
            ByteBuffer tiny = ByteBuffer.wrap(concat(new byte[10], b, new byte[4]), 10, 3); // position 10, 3 bytes
            ByteBuffer direct = ByteBuffer.allocateDirect(c.length).put(c).flip();
            byte[] expected = concat(a, b, c);

            int crc = io.write(file, 8192, heap, tiny, direct);

            assertEquals(crc32c(expected), crc, "write returns the CRC32C of the bytes written");
            assertEquals(crc, BucketFileIo.crc32c(ByteBuffer.wrap(a), ByteBuffer.wrap(b), ByteBuffer.wrap(c)));
            assertEquals(0, heap.position(), "buffer positions are left unchanged");
            assertEquals(10, tiny.position());
            assertEquals(0, direct.position());

            ByteBuffer read = io.read(file, 8192, expected.length, crc);
            assertEquals(0, read.position());
            assertEquals(expected.length, read.limit());
            assertArrayEquals(expected, remaining(read));

            byte[] onDisk = Files.readAllBytes(file);
            assertArrayEquals(expected, Arrays.copyOfRange(onDisk, 8192, 8192 + expected.length));
            assertEquals(BUCKET_SIZE, onDisk.length, "writing inside the bucket does not change the file size");
        }

        @Test
        void read_into_fills_the_remaining_space_of_a_buffer() throws IOException {
            Path file = layout.bucketPath(0);
            byte[] data = bytes(4096, 9);
            int crc = io.write(file, BUCKET_SIZE - 4096, ByteBuffer.wrap(data));
            ByteBuffer dst = ByteBuffer.allocate(5000);
            dst.position(100).limit(100 + 4096);
            io.readInto(file, BUCKET_SIZE - 4096, dst, crc);
            assertEquals(100 + 4096, dst.position());
            assertArrayEquals(data, Arrays.copyOfRange(dst.array(), 100, 100 + 4096));
        }

        @Test
        void a_read_only_pool_reads_what_a_writer_wrote() throws IOException {
            Path file = layout.bucketPath(7);
            byte[] data = bytes(12_345, 4);
            int crc = io.write(file, 0, ByteBuffer.wrap(data));
            try (BucketIo readers = open(kind, root, false)) {
                assertArrayEquals(data, remaining(new BucketFileIo(readers, BUCKET_SIZE).read(file, 0, data.length, crc)));
            }
        }

        @Test
        void an_empty_object_reads_back_empty() throws IOException {
            int crc = io.write(layout.bucketPath(1), 100);
            assertEquals(crc32c(new byte[0]), crc);
            assertEquals(0, io.read(layout.bucketPath(1), 100, 0, crc).remaining());
        }
    }

    @Nested
    class Checksums {

        @Test
        void a_wrong_expected_crc_is_a_checksum_mismatch_naming_both_values() throws IOException {
            Path file = layout.bucketPath(3);
            byte[] data = bytes(1000, 5);
            int crc = io.write(file, 4096, ByteBuffer.wrap(data));
            ChecksumMismatchException e = assertThrows(ChecksumMismatchException.class,
                    () -> io.read(file, 4096, data.length, crc ^ 1));
            assertTrue(e.getMessage().contains(String.format("%08x", crc ^ 1)), e.getMessage());
            assertTrue(e.getMessage().contains(String.format("%08x", crc)), e.getMessage());
            assertTrue(e.getMessage().contains("offset 4096") && e.getMessage().contains("size 1000"), e.getMessage());
            assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
        }

        @Test
        void a_byte_corrupted_on_disk_is_a_checksum_mismatch() throws IOException {
            Path file = layout.bucketPath(4);
            byte[] data = bytes(20_000, 6);
            int crc = io.write(file, 65536, ByteBuffer.wrap(data));
            assertArrayEquals(data, remaining(io.read(file, 65536, data.length, crc)));

            try (RandomAccessFile raw = new RandomAccessFile(file.toFile(), "rw")) {
                raw.seek(65536 + 12_345);
                raw.write(data[12_345] ^ 0x10);
            }
            assertThrows(ChecksumMismatchException.class, () -> io.read(file, 65536, data.length, crc));
        }

        @Test
        void a_mismatch_in_read_into_leaves_the_buffer_position_where_it_was() throws IOException {
            Path file = layout.bucketPath(4);
            int crc = io.write(file, 0, ByteBuffer.wrap(bytes(100, 1)));
            ByteBuffer dst = ByteBuffer.allocate(200).position(50).limit(150);
            assertThrows(ChecksumMismatchException.class, () -> io.readInto(file, 0, dst, ~crc));
            assertEquals(50, dst.position());
        }
    }

    @Nested
    class Streaming {

        @Test
        void copy_to_streams_an_object_larger_than_its_chunk_and_checks_the_whole_crc() throws IOException {
            Path file = layout.bucketPath(5);
            byte[] data = bytes(70_001, 8);
            int crc = io.write(file, 8192, ByteBuffer.wrap(data));
            java.io.ByteArrayOutputStream sink = new java.io.ByteArrayOutputStream();
            io.copyTo(file, 8192, data.length, crc, java.nio.channels.Channels.newChannel(sink), ByteBuffer.allocate(4096));
            assertArrayEquals(data, sink.toByteArray());
        }

        @Test
        void copy_to_with_a_wrong_crc_has_written_the_bytes_and_then_throws_a_checksum_mismatch() throws IOException {
            Path file = layout.bucketPath(5);
            byte[] data = bytes(10_000, 2);
            int crc = io.write(file, 0, ByteBuffer.wrap(data));
            java.io.ByteArrayOutputStream sink = new java.io.ByteArrayOutputStream();
            assertThrows(ChecksumMismatchException.class,
                    () -> io.copyTo(file, 0, data.length, crc ^ 4, java.nio.channels.Channels.newChannel(sink), ByteBuffer.allocate(3000)));
            assertEquals(data.length, sink.size(), "the check comes after the bytes, which the caller must discard");
        }
    }

    @Nested
    class Ranges_and_missing_files {

        @Test
        void a_read_past_the_end_of_a_short_file_is_an_eof_naming_where_the_file_ends() throws IOException {
            Path shortFile = root.resolve("bucket_short.data");
            Files.write(shortFile, bytes(4096, 2));
            EOFException e = assertThrows(EOFException.class, () -> io.read(shortFile, 0, 8192, 0));
            assertTrue(e.getMessage().contains("ends at 4096 bytes"), e.getMessage());
            assertThrows(EOFException.class, () -> io.read(shortFile, 10_000, 10, 0));
            assertEquals(4096, Files.size(shortFile), "a read never grows a file");
        }

        @Test
        void a_range_beyond_the_bucket_size_is_rejected_before_any_io() throws IOException {
            Path file = layout.bucketPath(5);
            byte[] before = Files.readAllBytes(file);
            IllegalArgumentException write = assertThrows(IllegalArgumentException.class,
                    () -> io.write(file, BUCKET_SIZE - 10, ByteBuffer.wrap(new byte[20])));
            assertTrue(write.getMessage().contains("offset " + (BUCKET_SIZE - 10)) && write.getMessage().contains("size 20")
                    && write.getMessage().contains(String.valueOf(BUCKET_SIZE)), write.getMessage());
            assertThrows(IllegalArgumentException.class, () -> io.read(file, BUCKET_SIZE, 1, 0));
            assertThrows(IllegalArgumentException.class, () -> io.read(file, -1, 10, 0));
            assertThrows(IllegalArgumentException.class,
                    () -> io.write(file, Long.MAX_VALUE - 5, ByteBuffer.wrap(new byte[10])));
            assertArrayEquals(before, Files.readAllBytes(file), "file unchanged");
            assertEquals(0, bucketIo.openFileCount(), "no channel was even opened");

            // Even for a file that does not exist the range is the first thing checked.
            Path missing = root.resolve("bucket_20.data");
            assertThrows(IllegalArgumentException.class, () -> io.write(missing, BUCKET_SIZE, ByteBuffer.wrap(new byte[1])));
            assertFalse(Files.exists(missing));
        }

        @Test
        void an_object_ending_exactly_at_the_bucket_end_is_allowed() throws IOException {
            Path file = layout.bucketPath(5);
            byte[] data = bytes(10, 3);
            int crc = io.write(file, BUCKET_SIZE - 10, ByteBuffer.wrap(data));
            assertArrayEquals(data, remaining(io.read(file, BUCKET_SIZE - 10, 10, crc)));
            assertEquals(BUCKET_SIZE, Files.size(file));
        }

        @Test
        void a_missing_bucket_file_names_the_file_and_says_to_check_the_mount() {
            Path missing = root.resolve("not-mounted").resolve("bucket_09.data");
            BucketFileMissingException e = assertThrows(BucketFileMissingException.class, () -> io.read(missing, 0, 10, 0));
            assertEquals(missing, e.file());
            assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
            assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
            assertTrue(e.getMessage().contains("mounted at " + missing.getParent()), e.getMessage());
            assertTrue(e.getMessage().contains("mcctl mount validate"), e.getMessage());

            assertThrows(BucketFileMissingException.class, () -> io.write(missing, 0, ByteBuffer.wrap(new byte[1])));
            assertFalse(Files.exists(missing), "the pool never creates bucket files");
            assertEquals(0, bucketIo.openFileCount());
        }
    }

    @Nested
    class Batches {

        @Test
        void a_batch_writes_and_reads_many_objects_at_once_each_with_its_own_outcome() throws IOException {
            Path a = layout.bucketPath(1);
            Path b = layout.bucketPath(2);
            byte[] one = bytes(70_000, 1);
            byte[] two = bytes(4096, 2);
            CRC32C crcOne = new CRC32C();
            CRC32C crcTwo = new CRC32C();
            BucketFileIo.Batch writes = io.batch();
            writes.write(a, 0, ByteBuffer.wrap(one, 0, 50_000), crcOne);
            writes.write(a, 50_000, ByteBuffer.wrap(one, 50_000, 20_000), crcOne);
            writes.write(b, 8192, ByteBuffer.wrap(two), crcTwo);
            writes.run();
            for (int op = 0; op < writes.size(); op++) {
                assertEquals(null, writes.failure(op));
            }
            assertEquals(crc32c(one), (int) crcOne.getValue(), "the chunks' CRC32C is the object's");

            ByteBuffer intoOne = ByteBuffer.allocateDirect(one.length);
            ByteBuffer intoTwo = ByteBuffer.allocate(two.length);
            ByteBuffer wrong = ByteBuffer.allocate(two.length);
            ByteBuffer pastEnd = ByteBuffer.allocate(100);
            Path shortFile = Files.write(root.resolve("bucket_short.data"), bytes(50, 1));
            BucketFileIo.Batch reads = io.batch();
            int readOne = reads.read(a, 0, intoOne, crc32c(one));
            int readTwo = reads.read(b, 8192, intoTwo, crc32c(two));
            int readWrong = reads.read(b, 8192, wrong, crc32c(two) ^ 1);
            int readPastEnd = reads.read(shortFile, 0, pastEnd, 0);
            reads.run();
            assertEquals(null, reads.failure(readOne));
            assertEquals(null, reads.failure(readTwo));
            assertArrayEquals(one, remaining(intoOne.flip()));
            assertArrayEquals(two, remaining(intoTwo.flip()));
            assertTrue(reads.failure(readWrong) instanceof ChecksumMismatchException, String.valueOf(reads.failure(readWrong)));
            assertEquals(0, wrong.position(), "a failed read leaves its buffer where it was");
            assertTrue(reads.failure(readPastEnd) instanceof EOFException, String.valueOf(reads.failure(readPastEnd)));
            assertTrue(reads.failure(readPastEnd).getMessage().contains("ends at 50 bytes"), reads.failure(readPastEnd).getMessage());
        }

        @Test
        void a_read_of_a_bucket_file_replaced_under_the_open_handle_reads_the_new_file() throws IOException {
            Path file = layout.bucketPath(3);
            byte[] old = bytes(8192, 1);
            io.write(file, 0, ByteBuffer.wrap(old));
            // The bucket file is replaced (restored from elsewhere) while this process has it open.
            byte[] now = bytes(8192, 2);
            Path replacement = root.resolve("replacement");
            Files.write(replacement, new byte[(int) BUCKET_SIZE]);
            try (RandomAccessFile raw = new RandomAccessFile(replacement.toFile(), "rw")) {
                raw.write(now);
            }
            Files.move(replacement, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);

            ByteBuffer into = ByteBuffer.allocate(now.length);
            BucketFileIo.Batch reads = io.batch();
            reads.read(file, 0, into, crc32c(now));
            reads.run();
            assertEquals(null, reads.failure(0));
            assertArrayEquals(now, remaining(into.flip()));
        }
    }
}
