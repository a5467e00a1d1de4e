package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The fd pool: at most one open channel per bucket file for the whole process, opened on first use and
 * shared by every thread (positional reads and writes need no shared position). Bucket files are never
 * created here: a missing file is a {@link BucketFileMissingException}.
 *
 * <p>Each channel is remembered with the file it was opened on ({@link OpenFile#fileKey}: device and inode). A bucket
 * file deleted or replaced under an open channel leaves the channel on a file no other node can reach; {@link #verify}
 * tells a writer so before it reports its objects written, and {@link #replaceIfStale} lets a reader whose read failed
 * find the file now at the path. A replaced channel is closed: a thread still in a read or write on it gets a
 * {@link ClosedChannelException} and takes the new one, and a writer that wrote through it finds it replaced.
 *
 * <p>Thread safety: the map is concurrent; {@link ConcurrentHashMap#compute} makes opening a file and
 * replacing a channel (closed under us by an interrupt, or on a file no longer at the path) atomic per file.
 */
public final class BucketFilePool implements AutoCloseable {

    /**
     * An open bucket file: the channel and the file it was opened on, as {@link BasicFileAttributes#fileKey()} names it
     * (device and inode on Linux; null on a filesystem that names none, where only a missing file can be told).
     */
    public record OpenFile(FileChannel channel, Object fileKey) {
    }

    /** Tries to open a file whose path names the same file before and after the open, before giving up. */
    private static final int OPEN_ATTEMPTS = 3;

    private final boolean writable;
    private final ConcurrentMap<Path, OpenFile> files = new ConcurrentHashMap<>();
    private volatile boolean closed;

    /** @param writable open files for reading and writing (writers) or for reading only (readers) */
    public BucketFilePool(boolean writable) {
        this.writable = writable;
    }

    /** The open channel for {@code file}, opening it if needed. */
    public FileChannel channel(Path file) throws IOException {
        return open(file).channel();
    }

    /** The open file for {@code file}, opening it if needed: what a writer remembers before it writes, to {@link #verify} after. */
    public OpenFile open(Path file) throws IOException {
        OpenFile open = files.get(file);
        if (open != null && open.channel().isOpen()) {
            return open;
        }
        return replace(file, null);
    }

    /** Replaces a channel that was found closed (or opens the first one). */
    FileChannel reopen(Path file) throws IOException {
        return replace(file, null).channel();
    }

    /**
     * Whether the bytes written through {@code written} are in the bucket file at {@code file}: true when it is still
     * this pool's open file there and the path still names the file it was opened on. One stat of the path.
     *
     * @return {@code written} when they are; otherwise the open file now at the path (opened here if needed), through
     *     which they must be written again
     * @throws BucketFileMissingException when no file is at the path any more (deleted under this node)
     */
    public OpenFile verify(Path file, OpenFile written) throws IOException {
        Object atPath = fileKeyOrMissing(file, true);
        if (files.get(file) == written && written.channel().isOpen() && Objects.equals(atPath, written.fileKey())) {
            return written;
        }
        return replace(file, atPath);
    }

    /**
     * After a read that failed its checksum or met the end of the file: when the path now names another file than the
     * open channel's (the bucket file was replaced, and the channel holds the old one), opens the new file in its place.
     *
     * @return whether the channel was replaced, and the read is worth trying again
     */
    public boolean replaceIfStale(Path file) throws IOException {
        OpenFile before = files.get(file);
        if (before == null) {
            return false;
        }
        Object atPath;
        try {
            atPath = fileKeyOrMissing(file, true);
        } catch (BucketFileMissingException e) {
            return false; // nothing to read instead: the open channel stays, and the read's own failure stands
        }
        if (before.channel().isOpen() && Objects.equals(atPath, before.fileKey())) {
            return false;
        }
        return replace(file, atPath) != before;
    }

    /**
     * The open file for {@code file}: the current one when it is open and names the file {@code atPath} (or, with
     * {@code atPath} null, whenever it is open), else a new one, the old one closed.
     */
    private OpenFile replace(Path file, Object atPath) throws IOException {
        if (closed) {
            throw new ClosedChannelException();
        }
        IOException[] failure = new IOException[1];
        OpenFile[] stale = new OpenFile[1];
        OpenFile open = files.compute(file, (path, current) -> {
            if (current != null && current.channel().isOpen() && (atPath == null || Objects.equals(atPath, current.fileKey()))) {
                return current;
            }
            try {
                OpenFile fresh = openNamed(path);
                stale[0] = current;
                return fresh;
            } catch (IOException e) {
                failure[0] = e;
                return current != null && current.channel().isOpen() ? current : null;
            }
        });
        if (stale[0] != null) {
            closeQuietly(stale[0].channel());
        }
        if (failure[0] != null) {
            throw failure[0];
        }
        return open;
    }

    /** Opens {@code path}, knowing which file it opened: the path names the same file just before and just after the open. */
    private OpenFile openNamed(Path path) throws IOException {
        for (int attempt = 1; ; attempt++) {
            Object before = fileKeyOrMissing(path, false);
            FileChannel channel;
            try {
                channel = writable
                        ? FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)
                        : FileChannel.open(path, StandardOpenOption.READ);
            } catch (NoSuchFileException e) {
                throw new BucketFileMissingException(path);
            }
            Object after;
            try {
                after = fileKeyOrMissing(path, false);
            } catch (IOException e) {
                closeQuietly(channel);
                throw e;
            }
            if (Objects.equals(before, after)) {
                return new OpenFile(channel, after);
            }
            closeQuietly(channel);
            if (attempt == OPEN_ATTEMPTS) {
                throw new IOException("bucket file " + path + " was replaced " + OPEN_ATTEMPTS
                        + " times while it was being opened: something keeps recreating it; nothing was read or written");
            }
        }
    }

    /** {@code path}'s file key; a missing file is a {@link BucketFileMissingException}, {@code deleted}: it was open here. */
    private static Object fileKeyOrMissing(Path path, boolean deleted) throws IOException {
        try {
            return Files.readAttributes(path, BasicFileAttributes.class).fileKey();
        } catch (NoSuchFileException e) {
            throw deleted ? BucketFileMissingException.deleted(path) : new BucketFileMissingException(path);
        }
    }

    private static void closeQuietly(FileChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // a channel on a file that is gone: nothing of it is needed any more
        }
    }

    /** Number of files currently open. */
    public int openCount() {
        return (int) files.values().stream().filter(open -> open.channel().isOpen()).count();
    }

    @Override
    public void close() throws IOException {
        closed = true;
        IOException first = null;
        for (OpenFile open : files.values()) {
            try {
                open.channel().close();
            } catch (IOException e) {
                first = first == null ? e : first;
            }
        }
        files.clear();
        if (first != null) {
            throw first;
        }
    }
}
