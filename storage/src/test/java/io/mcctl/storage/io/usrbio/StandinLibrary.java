package io.mcctl.storage.io.usrbio;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The USRBIO stand-in that the build compiles from src/test/native into target/native (it is not 3FS: it runs IOs
 * on ordinary files), and the marker that makes a directory a 3FS mount root for it.
 */
public final class StandinLibrary {

    private StandinLibrary() {
    }

    /** The stand-in with 3FS's library name. */
    public static Path path() {
        return built("libhf3fs_api_shared.so");
    }

    /** The same stand-in built without hf3fs_wait_for_ios: a library that lacks a function. */
    public static Path withoutWaitForIos() {
        return built("libhf3fs_without_wait.so");
    }

    /** The stand-in, bound for this test JVM. */
    public static Hf3fsLibrary load() throws UsrbioUnavailableException {
        return Hf3fsLibrary.load(path().toString());
    }

    /** Makes {@code dir} a 3FS mount root for the stand-in (a {@code 3fs-virt} directory in it) and returns it. */
    public static Path markMount(Path dir) throws IOException {
        Files.createDirectories(dir.resolve("3fs-virt"));
        return dir.toRealPath();
    }

    private static Path built(String name) {
        Path path = Path.of("target", "native", name).toAbsolutePath();
        if (!Files.isRegularFile(path)) {
            throw new IllegalStateException(path + " is missing: the storage module's build compiles it with gcc "
                    + "(mvn -pl storage generate-test-resources)");
        }
        return path;
    }
}
