package io.mcctl.storage.io;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;

/**
 * Objects in bucket files, above a {@link BucketIo} (POSIX or USRBIO, the same rules for both): gather-write and read
 * of {@code size} bytes at {@code offset}, one at a time or a {@link Batch} submitted together, CRC32C computed on
 * write and checked on read. Nothing reaches past the bucket size, so a bad descriptor never grows a file. The end of
 * the file before {@code size} bytes is an {@link EOFException}; a checksum mismatch is a {@link
 * ChecksumMismatchException}, never data; a read that fails either way is tried once more when the bucket file turns
 * out to have been replaced under this process's open handle ({@link BucketIo#replaceIfStale}): the object is in the
 * new file.
 *
 * <p>Thread-safe: the IO is; a {@link Batch} belongs to one thread.
 */
public final class BucketFileIo {

    private final BucketIo io;
    private final long bucketSize;

    /** @param bucketSize no object may reach past this offset */
    public BucketFileIo(BucketIo io, long bucketSize) {
        this.io = io;
        this.bucketSize = bucketSize;
    }

    /** The IO that moves the bytes. */
    public BucketIo io() {
        return io;
    }

    public static int crc32c(ByteBuffer... parts) {
        CRC32C crc = new CRC32C();
        for (ByteBuffer part : parts) {
            crc.update(part.duplicate());
        }
        return (int) crc.getValue();
    }

    /**
     * Writes the remaining bytes of {@code parts}, one after another, starting at {@code offset}.
     * The buffers' positions are left unchanged.
     *
     * @return the CRC32C of the bytes written
     */
    public int write(Path file, long offset, ByteBuffer... parts) throws IOException {
        long size = 0;
        for (ByteBuffer part : parts) {
            size += part.remaining();
        }
        checkRange(file, offset, size);
        int crc = crc32c(parts);
        io.write(file, offset, parts);
        return crc;
    }

    /**
     * Writes the remaining bytes of {@code src} at {@code offset}, adding them to {@code crc}: one chunk of an object
     * written piece by piece. The buffer's position is left unchanged.
     */
    public void writeChunk(Path file, long offset, ByteBuffer src, Checksum crc) throws IOException {
        checkRange(file, offset, src.remaining());
        crc.update(src.duplicate());
        io.write(file, offset, src);
    }

    /** Reads {@code size} bytes at {@code offset} and checks them against {@code expectedCrc}. */
    public ByteBuffer read(Path file, long offset, int size, int expectedCrc) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(size);
        readInto(file, offset, buffer, expectedCrc);
        buffer.flip();
        return buffer;
    }

    /** Fills the remaining space of {@code dst} from {@code offset} and checks the CRC32C of what it read. */
    public void readInto(Path file, long offset, ByteBuffer dst, int expectedCrc) throws IOException {
        Batch one = new Batch();
        one.read(file, offset, dst, expectedCrc);
        one.run();
        IOException failure = one.failure(0);
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * Streams {@code size} bytes at {@code offset} to {@code sink} through {@code chunk} (reused, so memory stays at
     * one chunk whatever the object's size), computing the CRC32C as the bytes pass. The check can only come at the
     * end: on a mismatch the bytes are already in {@code sink}, and the {@link ChecksumMismatchException} says that
     * they must be discarded.
     */
    public void copyTo(Path file, long offset, long size, int expectedCrc, WritableByteChannel sink, ByteBuffer chunk) throws IOException {
        checkRange(file, offset, size);
        CRC32C crc = new CRC32C();
        long position = offset;
        long end = offset + size;
        while (position < end) {
            chunk.clear();
            chunk.limit((int) Math.min(chunk.capacity(), end - position));
            int asked = chunk.remaining();
            long read = io.read(file, position, chunk);
            if (read < asked) {
                throw endOfFile(file, offset, size);
            }
            position += read;
            chunk.flip();
            crc.update(chunk.duplicate());
            while (chunk.hasRemaining()) {
                sink.write(chunk);
            }
        }
        int actual = (int) crc.getValue();
        if (actual != expectedCrc) {
            throw new ChecksumMismatchException(file, offset, size, expectedCrc, actual);
        }
    }

    /** A new, empty batch of this IO's objects. */
    public Batch batch() {
        return new Batch();
    }

    /**
     * Objects read and written together: each added with its range checked, all submitted at once by {@link #run} and
     * waited for once, each with its own outcome. A read fills its buffer's remaining space and, on success, leaves
     * its position past the object; on failure the position is where it was. Reusable after {@link #clear}. Not
     * thread-safe: one thread fills, runs and reads a batch.
     */
    public final class Batch {
        private final IoBatch ops = new IoBatch();
        private int[] expectedCrcs = new int[8];
        private int[] starts = new int[8];
        private IOException[] failures = new IOException[8];

        private Batch() {
        }

        /**
         * Adds a write of the remaining bytes of {@code src} at {@code offset}, adding them to {@code crc} (one chunk of
         * an object, or all of it). The buffer's position is left unchanged.
         *
         * @return its index in the batch
         * @throws IllegalArgumentException when the range does not fit in a bucket
         */
        public int write(Path file, long offset, ByteBuffer src, Checksum crc) {
            checkRange(file, offset, src.remaining());
            crc.update(src.duplicate());
            return added(ops.write(file, offset, src), 0, 0);
        }

        /**
         * Adds a read of the object at {@code offset} into the remaining space of {@code dst}, checked against {@code
         * expectedCrc}.
         *
         * @return its index in the batch
         * @throws IllegalArgumentException when the range does not fit in a bucket
         */
        public int read(Path file, long offset, ByteBuffer dst, int expectedCrc) {
            checkRange(file, offset, dst.remaining());
            return added(ops.read(file, offset, dst), expectedCrc, dst.position());
        }

        private int added(int op, int expectedCrc, int start) {
            if (op == expectedCrcs.length) {
                expectedCrcs = Arrays.copyOf(expectedCrcs, op * 2);
                starts = Arrays.copyOf(starts, op * 2);
                failures = Arrays.copyOf(failures, op * 2);
            }
            expectedCrcs[op] = expectedCrc;
            starts[op] = start;
            failures[op] = null;
            return op;
        }

        public int size() {
            return ops.size();
        }

        /**
         * Runs every object: one submission for the batch, then, for reads that failed their checksum or met the end of
         * the file in a bucket file that was replaced meanwhile, one more for those.
         *
         * @throws IOException only when the batch as a whole could not run (the IO closed, a ring that cannot be made)
         */
        public void run() throws IOException {
            long replacementsBefore = io.replacements();
            io.execute(ops);
            boolean[] failedRead = null;
            for (int op = 0; op < ops.size(); op++) {
                settle(op);
                if (failures[op] instanceof ChecksumMismatchException || failures[op] instanceof EOFException) {
                    failedRead = failedRead == null ? new boolean[ops.size()] : failedRead;
                    failedRead[op] = true;
                }
            }
            if (failedRead != null) {
                readAgainFromReplacedFiles(failedRead, io.replacements() != replacementsBefore);
            }
        }

        /** The object's failure once run, or null when it was written, or read and checked. */
        public IOException failure(int op) {
            if (op < 0 || op >= ops.size()) {
                throw new IndexOutOfBoundsException("object " + op + " of a batch of " + ops.size());
            }
            return failures[op];
        }

        /** Empties the batch for reuse. */
        public void clear() {
            Arrays.fill(failures, 0, ops.size(), null);
            ops.clear();
        }

        /** Turns operation {@code op}'s outcome into the object's: the end of the file, a checksum, or the IO's failure. */
        private void settle(int op) {
            IOException failure = ops.failure(op);
            if (failure != null || !ops.isRead(op)) {
                failures[op] = failure;
                if (failure != null && ops.isRead(op)) {
                    ops.buffers(op)[0].position(starts[op]);
                }
                return;
            }
            ByteBuffer dst = ops.buffers(op)[0];
            Path file = ops.file(op);
            long offset = ops.offset(op);
            long length = ops.length(op);
            long done = dst.position() - starts[op];
            if (done < length) {
                dst.position(starts[op]);
                failures[op] = endOfFile(file, offset, length);
                return;
            }
            CRC32C crc = new CRC32C();
            crc.update(dst.duplicate().flip().position(starts[op]));
            int actual = (int) crc.getValue();
            if (actual != expectedCrcs[op]) {
                dst.position(starts[op]);
                failures[op] = new ChecksumMismatchException(file, offset, length, expectedCrcs[op], actual);
            } else {
                failures[op] = null;
            }
        }

        /**
         * Reads {@code failedRead} again, in one more submission, where their bucket file was replaced (one stat per file),
         * here or, {@code replacedMeanwhile}, by another thread while this batch read through the handle it had taken.
         */
        private void readAgainFromReplacedFiles(boolean[] failedRead, boolean replacedMeanwhile) throws IOException {
            java.util.Map<Path, Boolean> replaced = new java.util.HashMap<>();
            IoBatch again = new IoBatch();
            int[] which = new int[ops.size()];
            for (int op = 0; op < ops.size(); op++) {
                if (!failedRead[op]) {
                    continue;
                }
                Path file = ops.file(op);
                Boolean stale = replaced.get(file);
                if (stale == null) {
                    stale = io.replaceIfStale(file) || replacedMeanwhile;
                    replaced.put(file, stale);
                }
                if (stale) {
                    which[again.read(file, ops.offset(op), ops.buffers(op))] = op;
                }
            }
            if (again.size() == 0) {
                return;
            }
            io.execute(again);
            for (int k = 0; k < again.size(); k++) {
                int op = which[k];
                ops.rerun(op, again, k);
                settle(op);
            }
        }
    }

    private EOFException endOfFile(Path file, long offset, long size) {
        String length;
        try {
            length = Files.size(file) + " bytes";
        } catch (IOException | RuntimeException e) {
            length = "an unknown length (" + e.getMessage() + ")";
        }
        return new EOFException("object at " + file + " offset " + offset + " size " + size + ": the file ends at " + length);
    }

    private void checkRange(Path file, long offset, long size) {
        if (offset < 0 || size < 0 || offset > bucketSize - size) {
            throw new IllegalArgumentException("object at " + file + " offset " + offset + " size " + size
                    + " does not fit in a bucket of " + bucketSize + " bytes");
        }
    }
}
