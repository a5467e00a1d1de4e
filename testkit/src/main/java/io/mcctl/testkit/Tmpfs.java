package io.mcctl.testkit;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A small tmpfs for tests whose filesystem must really fill up (a write-ahead log that gets ENOSPC). Mounting needs
 * root, as the tests have here; where it cannot be had, {@link #mount} says so and the caller skips what needs it.
 */
public final class Tmpfs {

    private Tmpfs() {
    }

    /** Mounts a tmpfs of {@code size} ({@code mount}'s syntax: 128k, 16m) at the directory {@code at}; false when it cannot. */
    public static boolean mount(Path at, String size) {
        return run("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", at.toString()) == 0;
    }

    /** Gives the tmpfs at {@code at} a new size (space back, once a test has filled it); false when that fails. */
    public static boolean resize(Path at, String size) {
        return run("mount", "-o", "remount,size=" + size, at.toString()) == 0;
    }

    /** Unmounts lazily: a log segment that recovery mapped stays mapped until the collector unmaps it. */
    public static void unmount(Path at) {
        run("umount", "-l", at.toString());
    }

    /** Writes {@code file} until its filesystem is full. */
    public static void fill(Path file) throws IOException {
        byte[] block = new byte[4096];
        try (OutputStream out = Files.newOutputStream(file)) {
            while (true) {
                out.write(block);
            }
        } catch (IOException full) {
            // ENOSPC: the filesystem is full
        }
    }

    private static int run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(30, TimeUnit.SECONDS) ? p.exitValue() : -1;
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }
}
