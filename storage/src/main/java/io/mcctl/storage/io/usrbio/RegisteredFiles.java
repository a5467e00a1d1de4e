package io.mcctl.storage.io.usrbio;

import com.sun.jna.LastErrorException;
import io.mcctl.storage.io.BucketFileMissingException;
import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Path;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The USRBIO fd pool: at most one open fd per bucket file for the whole process, opened on first use and registered
 * with {@code hf3fs_reg_fd}; on close each is deregistered, then closed (in that order: the library forgets a
 * registration only while the fd is open, and a number closed while registered could never be registered again).
 * Bucket files are never created here.
 *
 * <p>Thread safety: the map is concurrent; {@link ConcurrentHashMap#computeIfAbsent} makes opening and registering a
 * file atomic per file. {@link #close} must come after the last IO.
 */
public final class RegisteredFiles implements AutoCloseable {

    private final Hf3fsLibrary library;
    private final boolean writable;
    private final ConcurrentMap<Path, Integer> fds = new ConcurrentHashMap<>();
    private volatile boolean closed;

    public RegisteredFiles(Hf3fsLibrary library, boolean writable) {
        this.library = library;
        this.writable = writable;
    }

    /** The registered fd of {@code file}, opening and registering it on first use. */
    public int fd(Path file) throws IOException {
        Integer fd = fds.get(file);
        if (fd != null) {
            return fd;
        }
        if (closed) {
            throw new ClosedChannelException();
        }
        IOException[] failure = new IOException[1];
        fd = fds.computeIfAbsent(file, path -> {
            try {
                return openAndRegister(path);
            } catch (IOException e) {
                failure[0] = e;
                return null;
            }
        });
        if (fd == null) {
            throw failure[0];
        }
        return fd;
    }

    private int openAndRegister(Path file) throws IOException {
        int fd;
        try {
            fd = Libc.open(file.toString(), (writable ? Libc.O_RDWR : Libc.O_RDONLY) | Libc.O_CLOEXEC);
        } catch (LastErrorException e) {
            if (e.getErrorCode() == Libc.ENOENT) {
                throw new BucketFileMissingException(file);
            }
            throw new IOException("cannot open " + file + ": " + Libc.describe(e.getErrorCode()));
        }
        int registered = library.regFd(fd, 0);
        if (registered > 0) {
            closeQuietly(fd);
            throw new IOException("USRBIO cannot register " + file + ": " + Libc.describe(registered)
                    + (registered == 9 ? " (the file is not on 3FS)" : ""));
        }
        return fd;
    }

    /** Number of files open and registered. */
    public int openCount() {
        return fds.size();
    }

    @Override
    public void close() throws IOException {
        closed = true;
        IOException first = null;
        for (Integer fd : fds.values()) {
            library.deregFd(fd);
            try {
                Libc.close(fd);
            } catch (LastErrorException e) {
                first = first == null ? new IOException("close of a registered fd: " + Libc.describe(e.getErrorCode())) : first;
            }
        }
        fds.clear();
        if (first != null) {
            throw first;
        }
    }

    private static void closeQuietly(int fd) {
        try {
            Libc.close(fd);
        } catch (LastErrorException ignored) {
            // nothing was registered; the fd is gone either way
        }
    }
}
