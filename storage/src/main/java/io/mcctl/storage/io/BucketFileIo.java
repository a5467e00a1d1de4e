package io.mcctl.storage.io;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * Objects in bucket files: positional gather-write and read of {@code size} bytes at {@code offset},
 * CRC32C computed on write and checked on read. Short reads and writes are continued until done (the
 * JDK already repeats a call interrupted by a signal, EINTR); the end of the file before {@code size}
 * bytes is an {@link EOFException}; a checksum mismatch is a {@link ChecksumMismatchException}, never data.
 *
 * <p>Thread-safe: positional IO on shared channels from {@link BucketFilePool}.
 */
public final class BucketFileIo {

    private final BucketFilePool pool;
    private final long bucketSize;

    /** @param bucketSize no object may reach past this offset, so a bad descriptor never grows a file */
    public BucketFileIo(BucketFilePool pool, long bucketSize) {
        this.pool = pool;
        this.bucketSize = bucketSize;
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
        CRC32C crc = new CRC32C();
        long position = offset;
        for (ByteBuffer part : parts) {
            ByteBuffer src = part.duplicate();
            crc.update(src.duplicate());
            while (src.hasRemaining()) {
                position += writeOnce(file, src, position);
            }
        }
        return (int) crc.getValue();
    }

    /**
     * Writes the remaining bytes of {@code src} at {@code offset}, adding them to {@code crc}: one chunk of an object
     * written piece by piece. The buffer's position is left unchanged.
     */
    public void writeChunk(Path file, long offset, ByteBuffer src, java.util.zip.Checksum crc) throws IOException {
        checkRange(file, offset, src.remaining());
        crc.update(src.duplicate());
        ByteBuffer chunk = src.duplicate();
        long position = offset;
        while (chunk.hasRemaining()) {
            position += writeOnce(file, chunk, position);
        }
    }

    /** Reads {@code size} bytes at {@code offset} and checks them against {@code expectedCrc}. */
    public ByteBuffer read(Path file, long offset, int size, int expectedCrc) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(size);
        readInto(file, offset, buffer, expectedCrc);
        buffer.flip();
        return buffer;
    }

    /**
     * Fills the remaining space of {@code dst} from {@code offset} and checks the CRC32C of what it read. A read that
     * fails its checksum or meets the end of the file is tried once more when the bucket file turns out to have been
     * replaced under this process's open channel ({@link BucketFilePool#replaceIfStale}): the object is in the new file.
     */
    public void readInto(Path file, long offset, ByteBuffer dst, int expectedCrc) throws IOException {
        int start = dst.position();
        try {
            readIntoOnce(file, offset, dst, expectedCrc);
        } catch (ChecksumMismatchException | EOFException e) {
            if (!pool.replaceIfStale(file)) {
                throw e;
            }
            dst.position(start);
            readIntoOnce(file, offset, dst, expectedCrc);
        }
    }

    private void readIntoOnce(Path file, long offset, ByteBuffer dst, int expectedCrc) throws IOException {
        int start = dst.position();
        int size = dst.remaining();
        checkRange(file, offset, size);
        fill(file, dst, offset, offset, size);
        CRC32C crc = new CRC32C();
        crc.update(dst.duplicate().flip().position(start));
        int actual = (int) crc.getValue();
        if (actual != expectedCrc) {
            dst.position(start);
            throw new ChecksumMismatchException(file, offset, size, expectedCrc, actual);
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
            position = fill(file, chunk, position, offset, size);
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

    /**
     * Fills {@code dst} from {@code position} of the object at {@code offset} of {@code size} bytes, and returns the
     * position after the bytes read; the file ending first is an {@link EOFException}.
     */
    private long fill(Path file, ByteBuffer dst, long position, long offset, long size) throws IOException {
        while (dst.hasRemaining()) {
            int n = readOnce(file, dst, position);
            if (n < 0) {
                throw new EOFException("object at " + file + " offset " + offset + " size " + size + ": the file ends at "
                        + pool.channel(file).size() + " bytes");
            }
            position += n;
        }
        return position;
    }

    private void checkRange(Path file, long offset, long size) {
        if (offset < 0 || size < 0 || offset > bucketSize - size) {
            throw new IllegalArgumentException("object at " + file + " offset " + offset + " size " + size
                    + " does not fit in a bucket of " + bucketSize + " bytes");
        }
    }

    private int writeOnce(Path file, ByteBuffer src, long position) throws IOException {
        while (true) {
            FileChannel channel = pool.channel(file);
            try {
                return channel.write(src, position);
            } catch (ClosedChannelException e) {
                // Another thread's interrupt closed the shared channel; unless it was ours, open it again.
                if (Thread.currentThread().isInterrupted()) {
                    throw e;
                }
            }
        }
    }

    private int readOnce(Path file, ByteBuffer dst, long position) throws IOException {
        while (true) {
            FileChannel channel = pool.channel(file);
            try {
                return channel.read(dst, position);
            } catch (ClosedChannelException e) {
                if (Thread.currentThread().isInterrupted()) {
                    throw e;
                }
            }
        }
    }
}
