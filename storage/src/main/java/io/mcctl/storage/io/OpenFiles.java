package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The open bucket files of one {@link BucketIo}: at most one handle per bucket file for the whole process (a channel for
 * POSIX, a registered fd for USRBIO), opened on first use and shared by every thread. Bucket files are never created
 * here: a missing file is a {@link BucketFileMissingException}.
 *
 * <p>Each handle is remembered with the file it was opened on ({@link OpenFile#fileKey}: device and inode). A bucket
 * file deleted or replaced under an open handle leaves the handle on a file no other node can reach; {@link #verify}
 * tells a writer so before it reports its objects written, and {@link #replaceIfStale} lets a reader whose read failed
 * find the file now at the path. These rules are the same whichever IO moves the bytes; only opening, retiring and
 * closing a handle are the IO's own ({@link Handles}).
 *
 * <p>Thread safety: the map is concurrent; {@link ConcurrentHashMap#compute} makes opening a file and replacing a handle
 * (closed under us, or on a file no longer at the path) atomic per file.
 *
 * @param <H> the handle of an open file
 */
public class OpenFiles<H> implements AutoCloseable {

    /** What an IO does with its handles. */
    public interface Handles<H> {
        /** Opens {@code path}; a missing file is a {@link java.nio.file.NoSuchFileException}. */
        H open(Path path) throws IOException;

        /** False once the handle was closed under its users (a POSIX channel closed by an interrupt). */
        boolean isOpen(H handle);

        /**
         * The handle was replaced by one on the file now at its path. POSIX closes it (a thread in an IO on it gets a
         * {@link ClosedChannelException} and takes the new one); USRBIO keeps it until {@link #close}, since an IO in
         * flight on its fd number must never reach another file that number is given to.
         */
        void retire(H handle);

        /** Closes a handle when the files are closed, or one that never got into the table. */
        void close(H handle) throws IOException;
    }

    /**
     * An open bucket file: the handle and the file it was opened on, as {@link BasicFileAttributes#fileKey()} names it
     * (device and inode on Linux; null on a filesystem that names none, where only a missing file can be told).
     */
    public record OpenFile<H>(H handle, Object fileKey) {
    }

    /** Tries to open a file whose path names the same file before and after the open, before giving up. */
    private static final int OPEN_ATTEMPTS = 3;

    private final Handles<H> handles;
    private final ConcurrentMap<Path, OpenFile<H>> files = new ConcurrentHashMap<>();
    private volatile boolean closed;
    /** Handles replaced so far: a read that failed through a handle taken before a replacement is worth reading again. */
    private final java.util.concurrent.atomic.AtomicLong replacements = new java.util.concurrent.atomic.AtomicLong();

    protected OpenFiles(Handles<H> handles) {
        this.handles = handles;
    }

    /** The open file for {@code file}, opening it if needed: what a writer remembers before it writes, to {@link #verify} after. */
    public OpenFile<H> open(Path file) throws IOException {
        OpenFile<H> open = files.get(file);
        if (open != null && handles.isOpen(open.handle())) {
            return open;
        }
        return replace(file, null);
    }

    /** The open handle for {@code file}, opening it if needed. */
    public H handle(Path file) throws IOException {
        return open(file).handle();
    }

    /**
     * Whether the bytes written through {@code written} are in the bucket file at {@code file}: true when it is still
     * this table's open file there and the path still names the file it was opened on. One stat of the path.
     *
     * @return {@code written} when they are; otherwise the open file now at the path (opened here if needed), through
     *     which they must be written again
     * @throws BucketFileMissingException when no file is at the path any more (deleted under this node)
     */
    public OpenFile<H> verify(Path file, OpenFile<?> written) throws IOException {
        Object atPath = fileKeyOrMissing(file, true);
        OpenFile<H> current = files.get(file);
        if (current == written && handles.isOpen(current.handle()) && Objects.equals(atPath, current.fileKey())) {
            return current;
        }
        return replace(file, atPath);
    }

    /**
     * After a read that failed its checksum or met the end of the file: when the path now names another file than the
     * open handle's (the bucket file was replaced, and the handle holds the old one), opens the new file in its place.
     *
     * @return whether the handle was replaced, and the read is worth trying again
     */
    public boolean replaceIfStale(Path file) throws IOException {
        OpenFile<H> before = files.get(file);
        if (before == null) {
            return false;
        }
        Object atPath;
        try {
            atPath = fileKeyOrMissing(file, true);
        } catch (BucketFileMissingException e) {
            return false; // nothing to read instead: the open handle stays, and the read's own failure stands
        }
        if (handles.isOpen(before.handle()) && Objects.equals(atPath, before.fileKey())) {
            return false;
        }
        return replace(file, atPath) != before;
    }

    /**
     * The open file for {@code file}: the current one when it is open and names the file {@code atPath} (or, with
     * {@code atPath} null, whenever it is open), else a new one, the old one retired.
     */
    private OpenFile<H> replace(Path file, Object atPath) throws IOException {
        if (closed) {
            throw new ClosedChannelException();
        }
        IOException[] failure = new IOException[1];
        @SuppressWarnings("unchecked")
        OpenFile<H>[] stale = new OpenFile[1];
        OpenFile<H> open = files.compute(file, (path, current) -> {
            if (current != null && handles.isOpen(current.handle()) && (atPath == null || Objects.equals(atPath, current.fileKey()))) {
                return current;
            }
            try {
                OpenFile<H> fresh = openNamed(path);
                stale[0] = current;
                return fresh;
            } catch (IOException e) {
                failure[0] = e;
                return current != null && handles.isOpen(current.handle()) ? current : null;
            }
        });
        if (stale[0] != null) {
            replacements.incrementAndGet();
            handles.retire(stale[0].handle());
        }
        if (failure[0] != null) {
            throw failure[0];
        }
        if (closed) {
            // close() ran while this opened: it may have missed the new handle, so it is closed here.
            files.remove(file, open);
            closeQuietly(open.handle());
            throw new ClosedChannelException();
        }
        return open;
    }

    /** Opens {@code path}, knowing which file it opened: the path names the same file just before and just after the open. */
    private OpenFile<H> openNamed(Path path) throws IOException {
        for (int attempt = 1; ; attempt++) {
            Object before = fileKeyOrMissing(path, false);
            H handle;
            try {
                handle = handles.open(path);
            } catch (NoSuchFileException e) {
                throw new BucketFileMissingException(path);
            }
            Object after;
            try {
                after = fileKeyOrMissing(path, false);
            } catch (IOException e) {
                closeQuietly(handle);
                throw e;
            }
            if (Objects.equals(before, after)) {
                return new OpenFile<>(handle, after);
            }
            closeQuietly(handle);
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

    private void closeQuietly(H handle) {
        try {
            handles.close(handle);
        } catch (IOException ignored) {
            // a handle on a file that is gone, or never used: nothing of it is needed any more
        }
    }

    /** How many open handles have been replaced by the file at their path so far. */
    public long replacements() {
        return replacements.get();
    }

    /** Number of files currently open. */
    public int openCount() {
        return (int) files.values().stream().filter(open -> handles.isOpen(open.handle())).count();
    }

    /** Closes every open handle; the handles retired before are the {@link Handles}' to close. */
    @Override
    public void close() throws IOException {
        closed = true;
        IOException first = null;
        for (OpenFile<H> open : files.values()) {
            try {
                handles.close(open.handle());
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
