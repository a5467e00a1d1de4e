package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The POSIX fd pool: at most one open channel per bucket file for the whole process, opened on first use and shared by
 * every thread (positional reads and writes need no shared position), with the identity rules of {@link OpenFiles}. A
 * replaced channel is closed at once: a thread still in a read or write on it gets a {@link ClosedChannelException} and
 * takes the new one, and a writer that wrote through it finds it replaced. A channel closed by another thread's
 * interrupt is opened again for the others.
 *
 * <p>Thread-safe, as {@link OpenFiles}.
 */
public final class BucketFilePool extends OpenFiles<FileChannel> {

    /** @param writable open files for reading and writing (writers) or for reading only (readers) */
    public BucketFilePool(boolean writable) {
        super(new Channels(writable));
    }

    /** The open channel for {@code file}, opening it if needed. */
    public FileChannel channel(Path file) throws IOException {
        return handle(file);
    }

    private record Channels(boolean writable) implements Handles<FileChannel> {
        @Override
        public FileChannel open(Path path) throws IOException {
            return writable ? FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)
                    : FileChannel.open(path, StandardOpenOption.READ);
        }

        @Override
        public boolean isOpen(FileChannel channel) {
            return channel.isOpen();
        }

        @Override
        public void retire(FileChannel channel) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // a channel on a file that is gone: nothing of it is needed any more
            }
        }

        @Override
        public void close(FileChannel channel) throws IOException {
            channel.close();
        }
    }
}
