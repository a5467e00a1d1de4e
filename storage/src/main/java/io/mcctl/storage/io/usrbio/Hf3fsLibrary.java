package io.mcctl.storage.io.usrbio;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

/**
 * 3FS's USRBIO library ({@code libhf3fs_api_shared.so}), bound by JNA direct mapping: each call is one JNI
 * transition with primitive arguments, no reflection or argument boxing. The library is looked up by name on
 * the library path, or loaded from a path (the {@code usrbio_library} setting); mcctl never ships it.
 *
 * <p>A process binds one library: {@link #load} of a second, different one is refused. {@link #probe} only
 * checks that a library loads and has every function, without binding it.
 *
 * <p>Thread safety: the bound functions are the library's; see its rules (a ring has one prepping and one waiting
 * thread). {@link #load} is synchronized on this class, which guards {@code bound}.
 */
public final class Hf3fsLibrary {

    /** The library's name, as {@code -l} would take it: {@code libhf3fs_api_shared.so} on the library path. */
    public static final String DEFAULT_NAME = "hf3fs_api_shared";

    /** Every function mcctl calls, checked before anything is bound. */
    public static final List<String> REQUIRED_FUNCTIONS = List.of("hf3fs_iovcreate", "hf3fs_iovdestroy", "hf3fs_iorcreate4",
            "hf3fs_iordestroy", "hf3fs_reg_fd", "hf3fs_dereg_fd", "hf3fs_prep_io", "hf3fs_submit_ios", "hf3fs_wait_for_ios",
            "hf3fs_is_hf3fs", "hf3fs_extract_mount_point");

    private static Hf3fsLibrary bound;

    private final String spec;
    private final String location;

    private Hf3fsLibrary(String spec, String location) {
        this.spec = spec;
        this.location = location;
    }

    /**
     * Loads and binds the library named or located by {@code nameOrPath} (a value with a {@code /} is a path),
     * or returns the one already bound for the same value.
     *
     * @throws UsrbioUnavailableException (LIBRARY or SYMBOL) with one line naming the library and what is missing
     */
    public static synchronized Hf3fsLibrary load(String nameOrPath) throws UsrbioUnavailableException {
        if (bound != null) {
            if (bound.spec.equals(nameOrPath)) {
                return bound;
            }
            probe(nameOrPath); // a library that does not load or lacks a function says so first
            throw new UsrbioUnavailableException(UsrbioUnavailableException.Missing.LIBRARY, "USRBIO library " + nameOrPath
                    + " cannot be loaded: this process already uses " + bound.location + " (one USRBIO library per process)");
        }
        NativeLibrary library = probe(nameOrPath);
        if (Native.POINTER_SIZE != 8) {
            throw new UsrbioUnavailableException(UsrbioUnavailableException.Missing.LIBRARY,
                    "USRBIO needs a 64-bit JVM; this one has " + Native.POINTER_SIZE * 8 + "-bit pointers");
        }
        Native.register(Hf3fsNative.class, library);
        File file = library.getFile();
        bound = new Hf3fsLibrary(nameOrPath, file != null ? file.getPath() : nameOrPath);
        return bound;
    }

    /**
     * Opens the library and checks that it has every {@link #REQUIRED_FUNCTIONS function}, binding nothing.
     *
     * @throws UsrbioUnavailableException LIBRARY when it does not load, SYMBOL naming the first function it lacks
     */
    public static NativeLibrary probe(String nameOrPath) throws UsrbioUnavailableException {
        NativeLibrary library;
        try {
            library = NativeLibrary.getInstance(nameOrPath);
        } catch (UnsatisfiedLinkError e) {
            throw new UsrbioUnavailableException(UsrbioUnavailableException.Missing.LIBRARY, nameOrPath.contains("/")
                    ? "USRBIO library " + nameOrPath + " cannot be loaded: " + dlopenReason(e, nameOrPath)
                    : "USRBIO library lib" + nameOrPath + ".so is not on the library path (LD_LIBRARY_PATH, jna.library.path or the "
                            + "system's): install the 3FS client library or set usrbio_library to its path");
        }
        for (String function : REQUIRED_FUNCTIONS) {
            try {
                library.getFunction(function);
            } catch (UnsatisfiedLinkError e) {
                File file = library.getFile();
                throw new UsrbioUnavailableException(UsrbioUnavailableException.Missing.SYMBOL, "USRBIO library "
                        + (file != null ? file.getPath() : nameOrPath) + " lacks the function " + function
                        + ": it is not 3FS's libhf3fs_api_shared.so or is too old");
            }
        }
        return library;
    }

    /** The first line of the loader's own reason, without JNA's search-path report. */
    private static String dlopenReason(UnsatisfiedLinkError e, String path) {
        if (!new File(path).exists()) {
            return "no such file";
        }
        String message = e.getMessage() == null ? "" : e.getMessage();
        for (String line : message.split("\n")) {
            String trimmed = line.trim();
            if (!trimmed.isEmpty() && !trimmed.startsWith("Unable to load library")) {
                return trimmed;
            }
        }
        return message.lines().findFirst().orElse("unknown reason");
    }

    /** The name or path this library was loaded by. */
    public String spec() {
        return spec;
    }

    /** The file the library was loaded from. */
    public String location() {
        return location;
    }

    /**
     * The 3FS mount that holds {@code path} (which must exist), or null when it is not on 3FS. The library decides
     * (the real one from the mount table and the mount's {@code 3fs-virt} directory).
     */
    public Path mountPointOf(Path path) {
        try (Memory out = new Memory(Hf3fsLayout.MOUNT_POINT_MAX)) {
            int length = Hf3fsNative.hf3fs_extract_mount_point(Pointer.nativeValue(out), Hf3fsLayout.MOUNT_POINT_MAX, path.toString());
            if (length <= 1 || length > Hf3fsLayout.MOUNT_POINT_MAX) {
                return null;
            }
            return Path.of(new String(out.getByteArray(0, length - 1), StandardCharsets.UTF_8));
        }
    }

    /** Whether {@code fd} is a file on 3FS. */
    public boolean isHf3fs(int fd) {
        return Hf3fsNative.hf3fs_is_hf3fs(fd) != 0;
    }

    /** {@code hf3fs_iovcreate}: 0 or -errno. */
    public int iovCreate(long iov, String mountPoint, long size, long blockSize, int numa) {
        return Hf3fsNative.hf3fs_iovcreate(iov, mountPoint, size, blockSize, numa);
    }

    public void iovDestroy(long iov) {
        Hf3fsNative.hf3fs_iovdestroy(iov);
    }

    /** {@code hf3fs_iorcreate4}: 0 or -errno. */
    public int iorCreate(long ior, String mountPoint, int entries, boolean forRead, int ioDepth, int timeout, int numa, long flags) {
        return Hf3fsNative.hf3fs_iorcreate4(ior, mountPoint, entries, forRead ? (byte) 1 : (byte) 0, ioDepth, timeout, numa, flags);
    }

    public void iorDestroy(long ior) {
        Hf3fsNative.hf3fs_iordestroy(ior);
    }

    /** {@code hf3fs_reg_fd}: at most 0 when registered, else a (positive) errno. */
    public int regFd(int fd, long flags) {
        return Hf3fsNative.hf3fs_reg_fd(fd, flags);
    }

    public void deregFd(int fd) {
        Hf3fsNative.hf3fs_dereg_fd(fd);
    }

    /** {@code hf3fs_prep_io}: the IO's index in the ring, or -errno. */
    public int prepIo(long ior, long iov, boolean read, long ptr, int fd, long offset, long length, long userdata) {
        return Hf3fsNative.hf3fs_prep_io(ior, iov, read ? (byte) 1 : (byte) 0, ptr, fd, offset, length, userdata);
    }

    /** {@code hf3fs_submit_ios}: 0 or -errno. */
    public int submitIos(long ior) {
        return Hf3fsNative.hf3fs_submit_ios(ior);
    }

    /** {@code hf3fs_wait_for_ios}: the number of cqes filled, or -errno; {@code absTimeout} 0 waits without end. */
    public int waitForIos(long ior, long cqes, int cqec, int minResults, long absTimeout) {
        return Hf3fsNative.hf3fs_wait_for_ios(ior, cqes, cqec, minResults, absTimeout);
    }

    /** The functions, bound to the loaded library by {@link Native#register}. Pointers are passed as addresses. */
    static final class Hf3fsNative {

        private Hf3fsNative() {
        }

        static native int hf3fs_iovcreate(long iov, String mountPoint, long size, long blockSize, int numa);

        static native void hf3fs_iovdestroy(long iov);

        static native int hf3fs_iorcreate4(long ior, String mountPoint, int entries, byte forRead, int ioDepth, int timeout, int numa,
                                           long flags);

        static native void hf3fs_iordestroy(long ior);

        static native int hf3fs_reg_fd(int fd, long flags);

        static native void hf3fs_dereg_fd(int fd);

        static native int hf3fs_prep_io(long ior, long iov, byte read, long ptr, int fd, long offset, long length, long userdata);

        static native int hf3fs_submit_ios(long ior);

        static native int hf3fs_wait_for_ios(long ior, long cqes, int cqec, int minResults, long absTimeout);

        /** C {@code bool}: only the low byte of the return register is defined. */
        static native byte hf3fs_is_hf3fs(int fd);

        static native int hf3fs_extract_mount_point(long out, int size, String path);
    }
}
