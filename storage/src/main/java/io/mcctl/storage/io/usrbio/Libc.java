package io.mcctl.storage.io.usrbio;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;

/**
 * The few C library calls USRBIO needs: registered files are opened and closed by fd (a {@link
 * java.nio.channels.FileChannel} hides its fd, and an interrupt would close it under a registration).
 */
public final class Libc {

    public static final int O_RDONLY = 0;
    public static final int O_RDWR = 2;
    /** Same value on x86-64 and aarch64 Linux. */
    public static final int O_CLOEXEC = 0x80000;
    public static final int ENOENT = 2;

    static {
        Native.register(Libc.class, NativeLibrary.getInstance("c"));
    }

    private Libc() {
    }

    /** Opens without O_CREAT: the mode argument of the variadic open is never read, so it is not passed. */
    public static native int open(String path, int flags) throws LastErrorException;

    public static native int close(int fd) throws LastErrorException;

    public static native int fsync(int fd) throws LastErrorException;

    private static native String strerror(int errno);

    /** The C library's text for {@code errno}, with its number: {@code Is a directory (errno 21)}. */
    public static String describe(int errno) {
        return strerror(errno) + " (errno " + errno + ")";
    }
}
