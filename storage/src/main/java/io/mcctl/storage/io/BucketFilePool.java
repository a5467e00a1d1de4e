package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The fd pool: at most one open channel per bucket file for the whole process, opened on first use and
 * shared by every thread (positional reads and writes need no shared position). Bucket files are never
 * created here: a missing file is a {@link BucketFileMissingException}.
 *
 * <p>Thread safety: the map is concurrent; {@link ConcurrentHashMap#compute} makes opening a file and
 * replacing a channel closed under us (an interrupted thread closes a {@link FileChannel}) atomic per file.
 */
public final class BucketFilePool implements AutoCloseable {

    private final boolean writable;
    private final ConcurrentMap<Path, FileChannel> channels = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /** @param writable open files for reading and writing (writers) or for reading only (readers) */
    public BucketFilePool(boolean writable) {
        this.writable = writable;
    }

    /** The open channel for {@code file}, opening it if needed. */
    public FileChannel channel(Path file) throws IOException {
        FileChannel channel = channels.get(file);
        if (channel != null && channel.isOpen()) {
            return channel;
        }
        return reopen(file);
    }

    /** Replaces a channel that was found closed (or opens the first one). */
    FileChannel reopen(Path file) throws IOException {
        if (closed) {
            throw new ClosedChannelException();
        }
        IOException[] failure = new IOException[1];
        FileChannel channel = channels.compute(file, (path, current) -> {
            if (current != null && current.isOpen()) {
                return current;
            }
            try {
                return writable
                        ? FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)
                        : FileChannel.open(path, StandardOpenOption.READ);
            } catch (NoSuchFileException e) {
                failure[0] = new BucketFileMissingException(path);
                return null;
            } catch (IOException e) {
                failure[0] = e;
                return null;
            }
        });
        if (channel == null) {
            throw failure[0];
        }
        return channel;
    }

    /** Number of files currently open. */
    public int openCount() {
        return (int) channels.values().stream().filter(FileChannel::isOpen).count();
    }

    @Override
    public void close() throws IOException {
        closed = true;
        IOException first = null;
        for (FileChannel channel : channels.values()) {
            try {
                channel.close();
            } catch (IOException e) {
                first = first == null ? e : first;
            }
        }
        channels.clear();
        if (first != null) {
            throw first;
        }
    }
}
