package io.mcctl.storage.io.usrbio;

import com.sun.jna.LastErrorException;
import io.mcctl.storage.io.OpenFiles;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The USRBIO fd pool: at most one open fd per bucket file for the whole process, opened on first use and registered
 * with {@code hf3fs_reg_fd}, with the identity rules of {@link OpenFiles}. On close each fd is deregistered, then closed
 * (in that order: the library forgets a registration only while the fd is open, and a number closed while registered
 * could never be registered again). An fd replaced by the file now at its path stays open and registered until close:
 * another thread may have an IO in flight on it, and a closed fd's number could be given to another file under that IO.
 * Replacements are an operator's act, so few are ever kept. Bucket files are never created here.
 *
 * <p>Thread safety: as {@link OpenFiles}; {@code retired} is guarded by itself.
 */
public final class RegisteredFiles extends OpenFiles<Integer> {

    private final Fds fds;

    public RegisteredFiles(Hf3fsLibrary library, boolean writable) {
        this(new Fds(library, writable));
    }

    private RegisteredFiles(Fds fds) {
        super(fds);
        this.fds = fds;
    }

    /** The registered fd of {@code file}, opening and registering it on first use. */
    public int fd(Path file) throws IOException {
        return handle(file);
    }

    @Override
    public void close() throws IOException {
        IOException first = null;
        try {
            super.close();
        } catch (IOException e) {
            first = e;
        }
        List<Integer> retired;
        synchronized (fds.retired) {
            retired = new ArrayList<>(fds.retired);
            fds.retired.clear();
        }
        for (int fd : retired) {
            try {
                fds.close(fd);
            } catch (IOException e) {
                first = first == null ? e : first;
            }
        }
        if (first != null) {
            throw first;
        }
    }

    private static final class Fds implements Handles<Integer> {
        private final Hf3fsLibrary library;
        private final boolean writable;
        final List<Integer> retired = new ArrayList<>();

        Fds(Hf3fsLibrary library, boolean writable) {
            this.library = library;
            this.writable = writable;
        }

        @Override
        public Integer open(Path file) throws IOException {
            int fd;
            try {
                fd = Libc.open(file.toString(), (writable ? Libc.O_RDWR : Libc.O_RDONLY) | Libc.O_CLOEXEC);
            } catch (LastErrorException e) {
                if (e.getErrorCode() == Libc.ENOENT) {
                    throw new NoSuchFileException(file.toString());
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

        @Override
        public boolean isOpen(Integer fd) {
            return true; // only close() closes a registered fd
        }

        @Override
        public void retire(Integer fd) {
            synchronized (retired) {
                retired.add(fd);
            }
        }

        @Override
        public void close(Integer fd) throws IOException {
            library.deregFd(fd);
            try {
                Libc.close(fd);
            } catch (LastErrorException e) {
                throw new IOException("close of a registered fd: " + Libc.describe(e.getErrorCode()));
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
}
