package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Reads and writes of bucket files to run together ({@link BucketIo#execute}), each with its outcome once run: the
 * bytes done, or its own {@link IOException}. A read fills its buffers' remaining space and advances their
 * positions; a write leaves them unchanged. Reusable: {@link #clear} keeps the arrays. Not thread-safe: one thread
 * fills, runs and reads a batch.
 */
public final class IoBatch {

    private int size;
    private boolean[] reads = new boolean[8];
    private Path[] files = new Path[8];
    private long[] offsets = new long[8];
    private ByteBuffer[][] buffers = new ByteBuffer[8][];
    private long[] lengths = new long[8];
    private long[] done = new long[8];
    private IOException[] failures = new IOException[8];

    /** Adds a read of {@code file} at {@code offset} into the remaining space of {@code dsts}; returns its index. */
    public int read(Path file, long offset, ByteBuffer... dsts) {
        for (ByteBuffer dst : dsts) {
            if (dst.isReadOnly()) {
                throw new IllegalArgumentException("a read into a read-only buffer: " + file + " offset " + offset);
            }
        }
        return add(true, file, offset, dsts);
    }

    /** Adds a write of the remaining bytes of {@code srcs} to {@code file} at {@code offset}; returns its index. */
    public int write(Path file, long offset, ByteBuffer... srcs) {
        return add(false, file, offset, srcs);
    }

    private int add(boolean read, Path file, long offset, ByteBuffer[] parts) {
        if (offset < 0) {
            throw new IllegalArgumentException("negative offset " + offset + " in " + file);
        }
        long length = 0;
        for (ByteBuffer part : parts) {
            length += part.remaining();
        }
        if (size == reads.length) {
            int capacity = size * 2;
            reads = Arrays.copyOf(reads, capacity);
            files = Arrays.copyOf(files, capacity);
            offsets = Arrays.copyOf(offsets, capacity);
            buffers = Arrays.copyOf(buffers, capacity);
            lengths = Arrays.copyOf(lengths, capacity);
            done = Arrays.copyOf(done, capacity);
            failures = Arrays.copyOf(failures, capacity);
        }
        reads[size] = read;
        files[size] = file;
        offsets[size] = offset;
        buffers[size] = parts;
        lengths[size] = length;
        done[size] = 0;
        failures[size] = null;
        return size++;
    }

    /** Empties the batch for reuse. */
    public void clear() {
        Arrays.fill(files, 0, size, null);
        Arrays.fill(buffers, 0, size, null);
        Arrays.fill(failures, 0, size, null);
        size = 0;
    }

    public int size() {
        return size;
    }

    public boolean isRead(int op) {
        return reads[check(op)];
    }

    public Path file(int op) {
        return files[check(op)];
    }

    public long offset(int op) {
        return offsets[check(op)];
    }

    /** The bytes the operation asks for: the buffers' remaining bytes when it was added. */
    public long length(int op) {
        return lengths[check(op)];
    }

    ByteBuffer[] buffers(int op) {
        return buffers[check(op)];
    }

    /**
     * The bytes done by a run operation: for a read, fewer than {@link #length} only where the file ends.
     *
     * @throws IOException the operation's own failure
     */
    public long bytesDone(int op) throws IOException {
        if (failures[check(op)] != null) {
            throw failures[op];
        }
        return done[op];
    }

    /** The operation's failure, or null when it succeeded. */
    public IOException failure(int op) {
        return failures[check(op)];
    }

    /** Records a success; a read's buffers are advanced past the bytes read. */
    void succeed(int op, long bytes) {
        done[op] = bytes;
        failures[op] = null;
        if (reads[op]) {
            long left = bytes;
            for (ByteBuffer dst : buffers[op]) {
                int step = (int) Math.min(left, dst.remaining());
                dst.position(dst.position() + step);
                left -= step;
            }
        }
    }

    /** Takes operation {@code k}'s outcome in {@code other}, a second run of this batch's operation {@code op} on the same buffers. */
    void rerun(int op, IoBatch other, int k) {
        done[check(op)] = other.done[other.check(k)];
        failures[op] = other.failures[k];
    }

    void fail(int op, IOException failure) {
        done[op] = 0;
        failures[op] = failure;
    }

    private int check(int op) {
        if (op < 0 || op >= size) {
            throw new IndexOutOfBoundsException("operation " + op + " of a batch of " + size);
        }
        return op;
    }
}
