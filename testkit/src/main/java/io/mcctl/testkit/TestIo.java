package io.mcctl.testkit;

import io.mcctl.storage.io.BucketIoSelector;
import io.mcctl.storage.io.IoMode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The bucket-file IO a test's nodes use, for tests that run over both: POSIX, or USRBIO through the stand-in library
 * that the storage module's build compiles from its test sources (it is not 3FS: it runs the IOs with pread and
 * pwrite), on a root it takes for a 3FS mount.
 */
public enum TestIo {
    POSIX,
    USRBIO;

    /** The stand-in library, as the storage module's build leaves it (in the checkout that holds the running module). */
    public static Path standinLibrary() {
        Path checkout = Path.of("").toAbsolutePath();
        while (checkout.getParent() != null && !Files.isRegularFile(checkout.resolve("storage").resolve("pom.xml"))) {
            checkout = checkout.getParent(); // modules sit at different depths: master/tier-tests, snapshot-tools
        }
        Path path = checkout.resolve("storage").resolve("target").resolve("native").resolve("libhf3fs_api_shared.so");
        if (!Files.isRegularFile(path)) {
            throw new IllegalStateException(path + " is missing: the storage module's build compiles it (mvn -pl storage -am verify)");
        }
        return path;
    }

    /** The {@code io} setting of this kind's nodes. */
    public BucketIoSelector.Wanted wanted() {
        return this == POSIX ? BucketIoSelector.Wanted.POSIX
                : new BucketIoSelector.Wanted(IoMode.USRBIO, "test", standinLibrary().toString());
    }

    /** Makes {@code root} fit for this kind: for USRBIO, the top of a 3FS mount to the stand-in (a {@code 3fs-virt} directory in it). */
    public void prepare(Path root) throws IOException {
        if (this == USRBIO) {
            Files.createDirectories(root.resolve("3fs-virt"));
        }
    }
}
