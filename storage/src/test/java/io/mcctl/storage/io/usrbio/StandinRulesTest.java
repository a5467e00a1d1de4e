package io.mcctl.storage.io.usrbio;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The stand-in of 3FS's USRBIO library keeps the library's rules, through the Java binding: each rule a test that
 * breaks it and gets the real library's answer (or the stand-in's stricter one where the real one has none).
 */
@Timeout(60)
class StandinRulesTest {

    private static final int EINVAL = 22;
    private static final int EBADF = 9;
    private static final int EAGAIN = 11;
    private static final int EACCES = 13;
    private static final int EBUSY = 16;
    private static final int EFAULT = 14;
    private static final int EISDIR = 21;
    private static final int ENOENT = 2;

    @TempDir
    Path dir;

    Hf3fsLibrary lib;
    Path mount;
    Path file;
    Ring reads;
    Ring writes;
    final Memory iov = new Memory(Hf3fsLayout.IOV_SIZE);
    long iovAddress;
    long iovBase;
    int fd = -1;

    @BeforeEach
    void setUp() throws IOException {
        lib = StandinLibrary.load();
        mount = StandinLibrary.markMount(dir.resolve("mnt"));
        file = mount.resolve("bucket-0");
        Files.write(file, new byte[8192]);
        iov.clear();
        iovAddress = Pointer.nativeValue(iov);
        assertEquals(0, lib.iovCreate(iovAddress, mount.toString(), 64 * 1024, 16 * 1024, -1));
        iovBase = iov.getLong(Hf3fsLayout.IOV_BASE);
        reads = new Ring(lib, mount, 4, true);
        writes = new Ring(lib, mount, 4, false);
        fd = Libc.open(file.toString(), Libc.O_RDWR);
        assertTrue(lib.regFd(fd, 0) <= 0);
    }

    @AfterEach
    void tearDown() {
        if (fd >= 0) {
            lib.deregFd(fd);
            Libc.close(fd);
        }
        reads.destroy();
        writes.destroy();
        lib.iovDestroy(iovAddress);
    }

    @Test
    void a_directory_with_3fs_virt_is_a_mount_root_and_paths_under_it_are_on_3fs() throws IOException {
        Files.createDirectories(mount.resolve("kv/deeper"));
        assertEquals(mount, lib.mountPointOf(mount));
        assertEquals(mount, lib.mountPointOf(mount.resolve("kv/deeper")));
        Path plain = Files.createDirectories(dir.resolve("plain"));
        assertNull(lib.mountPointOf(plain));
        assertNull(lib.mountPointOf(dir.resolve("missing")));
        assertTrue(lib.isHf3fs(fd));
        Path outside = Files.write(plain.resolve("f"), new byte[1]);
        int plainFd = Libc.open(outside.toString(), Libc.O_RDONLY);
        try {
            assertFalse(lib.isHf3fs(plainFd));
            assertEquals(EBADF, lib.regFd(plainFd, 0), "an fd off 3FS is refused with EBADF, a positive errno");
        } finally {
            Libc.close(plainFd);
        }
    }

    @Test
    void shared_memory_and_rings_are_refused_off_a_mount() throws IOException {
        Path plain = Files.createDirectories(dir.resolve("plain"));
        try (Memory other = new Memory(Hf3fsLayout.IOV_SIZE); Memory ior = new Memory(Hf3fsLayout.IOR_SIZE)) {
            assertEquals(-ENOENT, lib.iovCreate(Pointer.nativeValue(other), plain.toString(), 4096, 0, -1));
            assertEquals(-ENOENT, lib.iorCreate(Pointer.nativeValue(ior), plain.toString(), 4, true, 0, 0, -1, 0));
            assertEquals(-EINVAL, lib.iorCreate(Pointer.nativeValue(ior), mount.toString(), 4, true, 8, 0, -1, 0),
                    "an io_depth above the entries");
        }
    }

    @Test
    void a_registered_fd_cannot_be_registered_twice_nor_its_number_after_a_close_without_deregistering() throws IOException {
        assertEquals(EINVAL, lib.regFd(fd, 0));
        int number = openAt(PINNED_FD);
        try {
            assertTrue(lib.regFd(number, 0) <= 0);
            Libc.close(number); // closed while registered
            assertEquals(number, openAt(number), "the same number, another open file");
            assertEquals(EINVAL, lib.regFd(number, 0));
        } finally {
            lib.deregFd(number);
            Libc.close(number);
        }
        openAt(number);
        try {
            assertTrue(lib.regFd(number, 0) <= 0, "deregistered while open, the number registers again");
        } finally {
            lib.deregFd(number);
            Libc.close(number);
        }
    }

    /**
     * A number far above the lowest free ones, which every open in this JVM takes: no other thread's file lands on it
     * between a close and the next open (a test that relied on the lowest free number coming back met another thread's
     * file there, and left the number registered for the tests after it).
     */
    private static final int PINNED_FD = 900;

    /** {@link #file} opened read-write at descriptor {@code number}. */
    private int openAt(int number) {
        int opened = Libc.open(file.toString(), Libc.O_RDWR);
        try {
            return Dup.dup2(opened, number);
        } finally {
            Libc.close(opened);
        }
    }

    /** dup2, which mcctl itself never needs. */
    private static final class Dup {
        static {
            Native.register(Dup.class, NativeLibrary.getInstance("c"));
        }

        static native int dup2(int from, int to) throws LastErrorException;
    }

    @Test
    void an_io_needs_a_registered_fd_a_pointer_inside_the_iov_a_length_and_the_rings_direction() throws IOException {
        int unregistered = Libc.open(file.toString(), Libc.O_RDWR);
        try {
            assertEquals(-EBADF, lib.prepIo(reads.ior, iovAddress, true, iovBase, unregistered, 0, 512, 1));
        } finally {
            Libc.close(unregistered);
        }
        assertEquals(-EINVAL, lib.prepIo(reads.ior, iovAddress, true, iovBase - 1, fd, 0, 512, 1), "before the iov");
        assertEquals(-EINVAL, lib.prepIo(reads.ior, iovAddress, true, iovBase + 64 * 1024 - 100, fd, 0, 512, 1), "past its end");
        assertEquals(-EINVAL, lib.prepIo(reads.ior, iovAddress, true, iovBase, fd, 0, 0, 1), "no length");
        assertEquals(-EINVAL, lib.prepIo(reads.ior, iovAddress, false, iovBase, fd, 0, 512, 1), "a write on a read ring");
        assertEquals(-EINVAL, lib.prepIo(writes.ior, iovAddress, true, iovBase, fd, 0, 512, 1), "a read on a write ring");
        int readOnly = Libc.open(file.toString(), Libc.O_RDONLY);
        try {
            assertTrue(lib.regFd(readOnly, 0) <= 0);
            assertEquals(-EACCES, lib.prepIo(writes.ior, iovAddress, false, iovBase, readOnly, 0, 512, 1), "a write on a read-only fd");
        } finally {
            lib.deregFd(readOnly);
            Libc.close(readOnly);
        }
    }

    @Test
    void results_come_through_cqes_with_their_userdata_and_the_registered_duplicate_is_accepted_too() throws IOException {
        int duplicate = Libc.open(file.toString(), Libc.O_RDWR);
        int dupRegistration;
        try {
            dupRegistration = lib.regFd(duplicate, 0);
            assertTrue(dupRegistration < 0, "a duplicate's number, negated");
            Pointer data = new Pointer(iovBase);
            data.setMemory(0, 1024, (byte) 7);
            data.setMemory(1024, 1024, (byte) 9);
            assertTrue(lib.prepIo(writes.ior, iovAddress, false, iovBase, fd, 100, 1024, 41) >= 0);
            assertTrue(lib.prepIo(writes.ior, iovAddress, false, iovBase + 1024, dupRegistration, 2000, 1024, 42) >= 0);
            assertEquals(0, lib.submitIos(writes.ior));
            long[][] done = writes.waitAll(2);
            assertEquals(2, done.length);
            assertEquals(41 + 42, done[0][1] + done[1][1], "both userdata came back");
            assertEquals(1024, done[0][0]);
            assertEquals(1024, done[1][0]);
        } finally {
            lib.deregFd(duplicate);
            Libc.close(duplicate);
        }
        byte[] bytes = Files.readAllBytes(file);
        assertEquals(7, bytes[100]);
        assertEquals(7, bytes[1123]);
        assertEquals(9, bytes[2000]);
        assertEquals(0, bytes[3024]);
    }

    @Test
    void a_read_at_the_end_of_the_file_returns_a_short_count_and_past_it_zero() throws IOException {
        assertTrue(lib.prepIo(reads.ior, iovAddress, true, iovBase, fd, 8192 - 300, 1000, 1) >= 0);
        assertTrue(lib.prepIo(reads.ior, iovAddress, true, iovBase + 1000, fd, 10_000, 1000, 2) >= 0);
        assertEquals(0, lib.submitIos(reads.ior));
        long[][] done = reads.waitAll(2);
        assertEquals(300, resultOf(done, 1));
        assertEquals(0, resultOf(done, 2));
    }

    @Test
    void an_io_error_is_a_negative_errno_in_its_cqe() throws IOException {
        Path directory = Files.createDirectories(mount.resolve("not-a-file"));
        int dirFd = Libc.open(directory.toString(), Libc.O_RDONLY);
        try {
            assertTrue(lib.regFd(dirFd, 0) <= 0);
            assertTrue(lib.prepIo(reads.ior, iovAddress, true, iovBase, dirFd, 0, 512, 5) >= 0);
            assertEquals(0, lib.submitIos(reads.ior));
            assertEquals(-EISDIR, resultOf(reads.waitAll(1), 5));
        } finally {
            lib.deregFd(dirFd);
            Libc.close(dirFd);
        }
    }

    @Test
    void an_io_that_crosses_a_block_boundary_of_the_iov_fails_and_moves_nothing() throws IOException {
        new Pointer(iovBase).setMemory(0, 32 * 1024, (byte) 3);
        assertTrue(lib.prepIo(writes.ior, iovAddress, false, iovBase + 16 * 1024 - 10, fd, 0, 20, 1) >= 0);
        assertTrue(lib.prepIo(writes.ior, iovAddress, false, iovBase + 16 * 1024, fd, 100, 20, 2) >= 0);
        assertEquals(0, lib.submitIos(writes.ior));
        long[][] done = writes.waitAll(2);
        assertEquals(-EFAULT, resultOf(done, 1));
        assertEquals(20, resultOf(done, 2), "an IO that starts on the boundary is inside one block");
        byte[] bytes = Files.readAllBytes(file);
        assertEquals(0, bytes[0]);
        assertEquals(3, bytes[100]);
    }

    @Test
    void a_ring_holds_at_most_its_entries_until_they_are_reaped() {
        for (int i = 0; i < 4; i++) {
            assertEquals(i, lib.prepIo(reads.ior, iovAddress, true, iovBase + i * 512L, fd, 0, 512, i), "slot " + i);
        }
        assertEquals(-EAGAIN, lib.prepIo(reads.ior, iovAddress, true, iovBase, fd, 0, 512, 9));
        assertEquals(0, lib.submitIos(reads.ior));
        assertEquals(4, reads.waitAll(4).length);
        assertTrue(lib.prepIo(reads.ior, iovAddress, true, iovBase, fd, 0, 512, 9) >= 0, "reaped slots are free again");
        assertEquals(0, lib.submitIos(reads.ior));
        reads.waitAll(1);
    }

    @Test
    void ios_run_only_when_submitted_and_their_bytes_land_only_by_the_wait() {
        new Pointer(iovBase).setMemory(0, 512, (byte) 5);
        assertTrue(lib.prepIo(reads.ior, iovAddress, true, iovBase, fd, 0, 512, 1) >= 0);
        assertEquals(0, reads.waitFor(1, 1, System.currentTimeMillis() + 50), "prepped, not submitted: nothing completes");
        assertEquals(0, lib.submitIos(reads.ior));
        assertEquals(5, new Pointer(iovBase).getByte(0), "submitted, not waited for: the iov is not written yet");
        assertEquals(1, reads.waitAll(1).length);
        assertEquals(0, new Pointer(iovBase).getByte(0));
    }

    @Test
    void a_second_thread_that_preps_on_a_ring_with_ios_of_another_gets_EBUSY() throws Exception {
        assertTrue(lib.prepIo(reads.ior, iovAddress, true, iovBase, fd, 0, 512, 1) >= 0);
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            assertEquals(-EBUSY, other.submit(() -> lib.prepIo(reads.ior, iovAddress, true, iovBase + 512, fd, 0, 512, 2)).get());
            assertEquals(-EBUSY, other.submit(() -> lib.submitIos(reads.ior)).get());
            assertEquals(0, lib.submitIos(reads.ior));
            assertEquals(1, reads.waitAll(1).length);
            assertTrue(other.submit(() -> lib.prepIo(reads.ior, iovAddress, true, iovBase, fd, 0, 512, 3)).get() >= 0,
                    "once every IO is reaped, another thread may take the ring");
            assertEquals(0, (int) other.submit(() -> lib.submitIos(reads.ior)).get());
            assertEquals(1, reads.waitAll(1).length);
        } finally {
            other.shutdownNow();
        }
    }

    @Test
    void a_second_thread_that_waits_while_one_waits_gets_EBUSY() throws Exception {
        assertTrue(lib.prepIo(reads.ior, iovAddress, true, iovBase, fd, 0, 512, 1) >= 0);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            Future<Integer> first = threads.submit(() -> {
                int result;
                do { // the poller below may hold the wait for an instant before this one is inside it
                    result = reads.waitFor(1, 1, System.currentTimeMillis() + 50_000);
                } while (result == -EBUSY);
                return result;
            });
            AtomicInteger second = new AtomicInteger();
            Future<?> poller = threads.submit(() -> {
                try (Memory cqes = new Memory(Hf3fsLayout.CQE_SIZE); Memory now = new Memory(Hf3fsLayout.TIMESPEC_SIZE)) {
                    now.clear();
                    // Waits with an expired timeout until the first waiter is inside its wait.
                    int result;
                    do {
                        result = lib.waitForIos(reads.ior, Pointer.nativeValue(cqes), 1, 0, Pointer.nativeValue(now));
                    } while (result == 0);
                    second.set(result);
                }
            });
            poller.get();
            assertEquals(-EBUSY, second.get());
            assertEquals(0, lib.submitIos(reads.ior));
            assertEquals(1, first.get());
        } finally {
            threads.shutdownNow();
        }
    }

    private static long resultOf(long[][] done, long userdata) {
        for (long[] cqe : done) {
            if (cqe[1] == userdata) {
                return cqe[0];
            }
        }
        throw new AssertionError("no cqe with userdata " + userdata);
    }

    /** A ring and its cqes; {@link #waitAll} reaps exactly n completions as {result, userdata} pairs. */
    static final class Ring {
        final Hf3fsLibrary lib;
        final Memory struct = new Memory(Hf3fsLayout.IOR_SIZE);
        final Memory cqes;
        final Memory timespec = new Memory(Hf3fsLayout.TIMESPEC_SIZE);
        final long ior = Pointer.nativeValue(struct);
        final int entries;

        Ring(Hf3fsLibrary lib, Path mount, int entries, boolean forRead) {
            this.lib = lib;
            this.entries = entries;
            struct.clear();
            cqes = new Memory((long) entries * Hf3fsLayout.CQE_SIZE);
            assertEquals(0, lib.iorCreate(ior, mount.toString(), entries, forRead, 0, 0, -1, 0));
            assertEquals(forRead ? 1 : 0, struct.getByte(Hf3fsLayout.IOR_FOR_READ));
        }

        int waitFor(int cqec, int min, long deadlineMillis) {
            timespec.setLong(0, deadlineMillis / 1000);
            timespec.setLong(8, (deadlineMillis % 1000) * 1_000_000L);
            return lib.waitForIos(ior, Pointer.nativeValue(cqes), cqec, min, Pointer.nativeValue(timespec));
        }

        long[][] waitAll(int n) {
            int got = waitFor(entries, n, System.currentTimeMillis() + 30_000);
            assertEquals(n, got);
            long[][] done = new long[n][];
            for (int i = 0; i < n; i++) {
                long base = (long) i * Hf3fsLayout.CQE_SIZE;
                done[i] = new long[] {cqes.getLong(base + Hf3fsLayout.CQE_RESULT), cqes.getLong(base + Hf3fsLayout.CQE_USERDATA)};
            }
            return done;
        }

        void destroy() {
            lib.iorDestroy(ior);
        }
    }

    @Test
    void the_struct_layouts_match_the_headers_sizes() {
        assertArrayEquals(new int[] {312, 600, 24}, new int[] {Hf3fsLayout.IOV_SIZE, Hf3fsLayout.IOR_SIZE, Hf3fsLayout.CQE_SIZE});
        assertEquals(64 * 1024, iov.getLong(Hf3fsLayout.IOV_SIZE_FIELD), "the library filled size where we read it");
        assertEquals(16 * 1024, iov.getLong(Hf3fsLayout.IOV_BLOCK_SIZE));
    }
}
