package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * Bucket-file IO through the kernel: positional reads and writes on the shared channels of a {@link BucketFilePool}
 * (pread and pwrite), continued until done or the file ends (the JDK already repeats a call interrupted by a
 * signal). A batch runs its operations one after another. The durability of a write is the filesystem's: {@link
 * #sync} (fdatasync) makes it durable.
 *
 * <p>Thread-safe: positional IO on shared channels needs no shared position.
 */
public final class PosixBucketIo implements BucketIo {

    private final BucketFilePool pool;
    private final boolean ownsPool;

    /** @param ownsPool close {@code pool} with this */
    public PosixBucketIo(BucketFilePool pool, boolean ownsPool) {
        this.pool = pool;
        this.ownsPool = ownsPool;
    }

    @Override
    public String name() {
        return IoMode.POSIX.text();
    }

    @Override
    public void write(Path file, long offset, ByteBuffer... srcs) throws IOException {
        long position = offset;
        for (ByteBuffer part : srcs) {
            ByteBuffer src = part.duplicate();
            while (src.hasRemaining()) {
                position += writeOnce(file, src, position);
            }
        }
    }

    @Override
    public long read(Path file, long offset, ByteBuffer... dsts) throws IOException {
        long position = offset;
        for (ByteBuffer dst : dsts) {
            while (dst.hasRemaining()) {
                int n = readOnce(file, dst, position);
                if (n < 0) {
                    return position - offset;
                }
                position += n;
            }
        }
        return position - offset;
    }

    @Override
    public void execute(IoBatch batch) throws IOException {
        for (int op = 0; op < batch.size(); op++) {
            try {
                if (batch.isRead(op)) {
                    ByteBuffer[] dsts = batch.buffers(op);
                    int[] starts = positions(dsts);
                    long bytes = read(batch.file(op), batch.offset(op), dsts);
                    restore(dsts, starts);
                    batch.succeed(op, bytes);
                } else {
                    write(batch.file(op), batch.offset(op), batch.buffers(op));
                    batch.succeed(op, batch.length(op));
                }
            } catch (ClosedChannelException e) {
                throw e; // the pool is closed or this thread was interrupted: the batch as a whole stops
            } catch (IOException e) {
                batch.fail(op, e);
            }
        }
    }

    @Override
    public void sync(Path file) throws IOException {
        onOpenChannel(file, channel -> {
            channel.force(false);
            return 0;
        });
    }

    @Override
    public OpenFiles<?> files() {
        return pool;
    }

    @Override
    public void close() throws IOException {
        if (ownsPool) {
            pool.close();
        }
    }

    private static int[] positions(ByteBuffer[] buffers) {
        int[] positions = new int[buffers.length];
        for (int i = 0; i < buffers.length; i++) {
            positions[i] = buffers[i].position();
        }
        return positions;
    }

    /** The batch advances a read's buffers itself, by the bytes it records. */
    private static void restore(ByteBuffer[] buffers, int[] positions) {
        for (int i = 0; i < buffers.length; i++) {
            buffers[i].position(positions[i]);
        }
    }

    private int writeOnce(Path file, ByteBuffer src, long position) throws IOException {
        return onOpenChannel(file, channel -> channel.write(src, position));
    }

    private int readOnce(Path file, ByteBuffer dst, long position) throws IOException {
        return onOpenChannel(file, channel -> channel.read(dst, position));
    }

    /** One positional call on a channel. */
    private interface ChannelCall {
        int on(FileChannel channel) throws IOException;
    }

    /** Runs {@code call} on the pool's channel for {@code file}, again on a fresh one when another thread's interrupt closed it. */
    private int onOpenChannel(Path file, ChannelCall call) throws IOException {
        while (true) {
            FileChannel channel = pool.channel(file);
            try {
                return call.on(channel);
            } catch (ClosedChannelException e) {
                // Another thread's interrupt closed the shared channel (or a replacement did); unless it was ours, take the open one.
                if (Thread.currentThread().isInterrupted()) {
                    throw e;
                }
            }
        }
    }
}
