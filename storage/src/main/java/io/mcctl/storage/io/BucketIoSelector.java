package io.mcctl.storage.io;

import io.mcctl.storage.config.ConfigLoader;
import io.mcctl.storage.config.EffectiveConfig;
import io.mcctl.storage.config.StorageSettings;
import io.mcctl.storage.io.usrbio.Hf3fsLibrary;
import io.mcctl.storage.io.usrbio.UsrbioUnavailableException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Picks the bucket-file IO from the {@code io} setting: {@code posix}; {@code usrbio}, refused in one line naming what
 * is missing (the library, a function of it, or a 3FS mount under the root); or {@code auto}, which takes USRBIO when
 * fs_type is hf3fs, the root is on a 3FS mount and the library loads, and POSIX otherwise. Each choice carries a
 * one-line reason for the operator.
 */
public final class BucketIoSelector {

    /**
     * The IO chosen and why.
     *
     * @param mode       POSIX or USRBIO, never AUTO
     * @param reason     one line, e.g. {@code usrbio: root /mnt/3fs/kv is on 3FS mount /mnt/3fs, library /usr/lib/libhf3fs_api_shared.so}
     * @param library    the bound library for USRBIO, else null
     * @param mountPoint the root's 3FS mount for USRBIO, else null
     */
    public record Choice(IoMode mode, String reason, Hf3fsLibrary library, Path mountPoint) {

        /** Opens the chosen IO with default USRBIO sizes. */
        public BucketIo open(boolean writable) throws IOException {
            return open(writable, UsrbioBucketIo.Options.defaults());
        }

        /** @param writable open bucket files for writing too (writers), or for reading only (readers) */
        public BucketIo open(boolean writable, UsrbioBucketIo.Options options) throws IOException {
            return mode == IoMode.USRBIO ? new UsrbioBucketIo(library, mountPoint, writable, options)
                    : new PosixBucketIo(new BucketFilePool(writable), true);
        }
    }

    /**
     * What a process asks for: the {@code io} and {@code usrbio_library} settings, before the root and its filesystem
     * are known (a client learns them from the master's layout).
     *
     * @param source where the io value came from, e.g. {@code flag --io}
     */
    public record Wanted(IoMode mode, String source, String library) {

        /** POSIX, whatever the environment says: for tests and tools that name their IO themselves. */
        public static final Wanted POSIX = new Wanted(IoMode.POSIX, "default", Hf3fsLibrary.DEFAULT_NAME);

        /** The settings in force. */
        public static Wanted of(EffectiveConfig config) {
            return new Wanted(config.get(StorageSettings.IO), config.sourceOf(StorageSettings.IO), config.get(StorageSettings.USRBIO_LIBRARY));
        }

        /** The settings from this process's environment ({@code MOONCAKE_DISTRIBUTED_IO}, ...) or their defaults. */
        public static Wanted fromEnvironment() {
            return of(ConfigLoader.load(List.of(StorageSettings.IO, StorageSettings.USRBIO_LIBRARY), Map.of(), System.getenv(), null));
        }

        /** The choice for a root on a filesystem of {@code fsType}. */
        public Choice choose(String fsType, Path root) throws UsrbioUnavailableException {
            return BucketIoSelector.choose(mode, source, fsType, root, library);
        }
    }

    private BucketIoSelector() {
    }

    /** The choice for the settings in force. */
    public static Choice choose(EffectiveConfig config) throws UsrbioUnavailableException {
        return Wanted.of(config).choose(config.get(StorageSettings.FS_TYPE), config.get(StorageSettings.ROOT_DIR));
    }

    /**
     * @param modeSource where the io value came from, e.g. {@code flag --io}
     * @param library    the usrbio_library value: a name on the library path, or a path
     * @throws UsrbioUnavailableException for io usrbio when USRBIO cannot be used here, in one line
     */
    public static Choice choose(IoMode mode, String modeSource, String fsType, Path root, String library) throws UsrbioUnavailableException {
        switch (mode) {
            case POSIX:
                return posix("io is posix (" + modeSource + ")");
            case USRBIO: {
                Hf3fsLibrary loaded;
                try {
                    loaded = Hf3fsLibrary.load(library);
                } catch (UsrbioUnavailableException e) {
                    throw new UsrbioUnavailableException(e.missing(), "io is usrbio (" + modeSource + ") but " + e.getMessage());
                }
                Path mount = mountOf(root, loaded);
                if (mount == null) {
                    throw new UsrbioUnavailableException(UsrbioUnavailableException.Missing.MOUNT, "io is usrbio (" + modeSource
                            + ") but root " + root + " is not on a 3FS mount" + notOnMountDetail(root, loaded));
                }
                return usrbio(root, mount, loaded);
            }
            default: {
                if (!"hf3fs".equals(fsType)) {
                    return posix("io is auto and fs_type is " + fsType + "; USRBIO is tried only with fs_type hf3fs");
                }
                Hf3fsLibrary loaded;
                try {
                    loaded = Hf3fsLibrary.load(library);
                } catch (UsrbioUnavailableException e) {
                    return posix("io is auto but " + e.getMessage());
                }
                Path mount = mountOf(root, loaded);
                if (mount == null) {
                    return posix("io is auto but root " + root + " is not on a 3FS mount" + notOnMountDetail(root, loaded));
                }
                return usrbio(root, mount, loaded);
            }
        }
    }

    private static Choice posix(String why) {
        return new Choice(IoMode.POSIX, "posix: " + why, null, null);
    }

    private static Choice usrbio(Path root, Path mount, Hf3fsLibrary library) {
        return new Choice(IoMode.USRBIO, "usrbio: root " + root + " is on 3FS mount " + mount + ", library " + library.location(), library,
                mount);
    }

    /**
     * The 3FS mount that holds {@code root}, or null. A root not made yet (a master's first start makes it) is where its
     * nearest existing parent is.
     */
    private static Path mountOf(Path root, Hf3fsLibrary library) {
        Path existing = nearestExisting(root);
        return existing == null ? null : library.mountPointOf(existing);
    }

    private static Path nearestExisting(Path path) {
        Path at = path.toAbsolutePath();
        while (at != null && !Files.isDirectory(at)) {
            at = at.getParent();
        }
        return at;
    }

    private static String notOnMountDetail(Path root, Hf3fsLibrary library) {
        return Files.exists(root) ? " (per " + library.location() + ": no 3FS mount with a 3fs-virt directory holds it)"
                : " (it does not exist yet, and per " + library.location() + " no 3FS mount holds " + nearestExisting(root) + ")";
    }
}
