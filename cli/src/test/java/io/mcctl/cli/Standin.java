package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The USRBIO stand-in the storage module's build compiles from its test sources (it is not 3FS: it runs the IOs with
 * pread and pwrite), for tests that run a command over USRBIO as well as POSIX.
 */
final class Standin {

    private Standin() {
    }

    /** The stand-in library {@code name} (libhf3fs_api_shared.so, or libhf3fs_without_wait.so that lacks a function). */
    static Path library(String name) {
        Path path = Path.of("..", "storage", "target", "native", name).toAbsolutePath().normalize();
        assertTrue(Files.isRegularFile(path), path + " is missing: the storage module's build compiles it");
        return path;
    }

    static Path library() {
        return library("libhf3fs_api_shared.so");
    }

    /** Makes {@code dir} the top of a 3FS mount to the stand-in (a {@code 3fs-virt} directory in it). */
    static Path markMount(Path dir) throws IOException {
        Files.createDirectories(dir.resolve("3fs-virt"));
        return dir;
    }

    /** The flags that make a command move bytes through {@code io} (posix or usrbio over the stand-in). */
    static List<String> ioFlags(String io) {
        return io.equals("posix") ? List.of("--io", "posix") : List.of("--io", "usrbio", "--usrbio-library", library().toString());
    }
}
