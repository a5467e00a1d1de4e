package io.mcctl.storage.config;

import io.mcctl.storage.io.IoMode;
import io.mcctl.storage.io.usrbio.Hf3fsLibrary;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/** The tier's own settings, with the design RFC's environment names. */
public final class StorageSettings {

    /** The root every node uses when none is configured: a local directory, so a first run needs no 3FS. */
    public static final String DEFAULT_ROOT = "./mooncake-data";

    public static final Setting<Boolean> PAGE_MODE = Setting.of("page_mode", "MOONCAKE_DISTRIBUTED_PAGE_MODE", "--page-mode",
            "true", StorageSettings::parseBoolean, String::valueOf, "true or false",
            "page mode of offloads through a node: true writes pages of the shared bucket files (DISTRIBUTED_DISK, no owner), "
                    + "false one file per key under the node's --local-disk (LOCAL_DISK, owned by the node); a node's setting, "
                    + "the master serves both");

    public static final Setting<Path> ROOT_DIR = Setting.of("root_dir", "MOONCAKE_DISTRIBUTED_ROOT_DIR", "--root",
            DEFAULT_ROOT, StorageSettings::parsePath, Path::toString, "a directory path",
            "directory that holds the bucket files, mounted at the same path on every node");

    public static final Setting<String> FS_TYPE = Setting.of("fs_type", "MOONCAKE_DISTRIBUTED_FS_TYPE", "--fs-type",
            "posix", StorageSettings::parseFsType, Function.identity(), "posix or hf3fs",
            "filesystem under the root: hf3fs (3FS) or posix (any local or shared POSIX directory)");

    public static final Setting<Integer> BUCKET_COUNT = Setting.of("bucket_count", "MOONCAKE_DISTRIBUTED_BUCKET_COUNT",
            "--bucket-count", "256", StorageSettings::parseBucketCount, String::valueOf,
            "a whole number from 1 to " + BucketLayout.MAX_BUCKET_COUNT, "number of bucket files");

    public static final Setting<Long> PAGE_SIZE = Setting.of("page_size", "MOONCAKE_DISTRIBUTED_PAGE_SIZE", "--page-size",
            "64KiB", StorageSettings::parsePageSize, SizeParser::format,
            "a power of two of at least 4KiB (" + SizeParser.ALLOWED + ")", "bytes per page, the unit of allocation");

    public static final Setting<Long> BUCKET_SIZE = Setting.of("bucket_size", "MOONCAKE_DISTRIBUTED_BUCKET_SIZE",
            "--bucket-size", "4GiB", StorageSettings::parsePositiveSize, SizeParser::format,
            "a multiple of page_size (" + SizeParser.ALLOWED + ")", "bytes per bucket file");

    public static final Setting<Boolean> HEALTH_CHECK = Setting.of("health_check", "MOONCAKE_DISTRIBUTED_HEALTH_CHECK",
            "--health-check", "false", StorageSettings::parseBoolean, String::valueOf, "true or false",
            "run the checks of mcctl mount validate before laying out the root; any FAIL stops the master");

    public static final Setting<Boolean> PREALLOCATE_BUCKETS = Setting.of("preallocate_buckets", "MOONCAKE_DISTRIBUTED_PREALLOCATE_BUCKETS",
            "--preallocate", "false", StorageSettings::parseBoolean, String::valueOf, "true or false",
            "reserve real space for every bucket file when the master starts (fallocate), so that a full filesystem shows at start, "
                    + "not as failed writes later");

    public static final Setting<IoMode> IO = Setting.of("io", "MOONCAKE_DISTRIBUTED_IO", "--io", "auto", IoMode::parse, IoMode::text,
            "auto, posix or usrbio",
            "how bucket-file bytes move: posix (positional reads and writes through the kernel), usrbio (3FS's USRBIO rings, past "
                    + "FUSE; refused at start when the library, a function of it or a 3FS mount under the root is missing), or auto "
                    + "(usrbio when fs_type is hf3fs, the root is on a 3FS mount and the library loads, else posix)");

    public static final Setting<String> USRBIO_LIBRARY = Setting.of("usrbio_library", "MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY",
            "--usrbio-library", Hf3fsLibrary.DEFAULT_NAME, StorageSettings::parseLibrary, Function.identity(),
            "a library name looked up on the library path (hf3fs_api_shared finds libhf3fs_api_shared.so) or a path to the .so",
            "3FS's USRBIO client library, which mcctl loads but does not ship");

    public static final List<Setting<?>> ALL = List.of(PAGE_MODE, ROOT_DIR, FS_TYPE, BUCKET_COUNT, PAGE_SIZE, BUCKET_SIZE, HEALTH_CHECK,
            PREALLOCATE_BUCKETS, IO, USRBIO_LIBRARY);

    private StorageSettings() {
    }

    /** Checks that only hold between settings, and builds the bucket layout. */
    public static BucketLayout layout(EffectiveConfig config) {
        long pageSize = config.get(PAGE_SIZE);
        long bucketSize = config.get(BUCKET_SIZE);
        if (bucketSize % pageSize != 0) {
            throw new ConfigException("invalid bucket_size '" + SizeParser.format(bucketSize) + "' from " + config.sourceOf(BUCKET_SIZE)
                    + ": allowed is a multiple of page_size " + SizeParser.format(pageSize) + " (from " + config.sourceOf(PAGE_SIZE) + ")");
        }
        if (bucketSize / pageSize > io.mcctl.storage.alloc.BitmapPageAllocator.MAX_PAGES) {
            throw new ConfigException("invalid bucket_size '" + SizeParser.format(bucketSize) + "' from " + config.sourceOf(BUCKET_SIZE)
                    + ": allowed is at most " + io.mcctl.storage.alloc.BitmapPageAllocator.MAX_PAGES + " pages of page_size "
                    + SizeParser.format(pageSize));
        }
        return new BucketLayout(config.get(ROOT_DIR), config.get(BUCKET_COUNT), pageSize, bucketSize);
    }

    public static boolean parseBoolean(String text) {
        return switch (text.toLowerCase(Locale.ROOT)) {
            case "true", "yes", "on", "1" -> true;
            case "false", "no", "off", "0" -> false;
            default -> throw new IllegalArgumentException("");
        };
    }

    static Path parsePath(String text) {
        if (text.isEmpty()) {
            throw new IllegalArgumentException("empty");
        }
        return Path.of(text).toAbsolutePath().normalize();
    }

    static String parseFsType(String text) {
        String lower = text.toLowerCase(Locale.ROOT);
        if (!lower.equals("posix") && !lower.equals("hf3fs")) {
            throw new IllegalArgumentException("");
        }
        return lower;
    }

    static String parseLibrary(String text) {
        if (text.isEmpty()) {
            throw new IllegalArgumentException("empty");
        }
        return text;
    }

    static int parseBucketCount(String text) {
        int count;
        try {
            count = Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("");
        }
        if (count < 1 || count > BucketLayout.MAX_BUCKET_COUNT) {
            throw new IllegalArgumentException("");
        }
        return count;
    }

    static long parsePageSize(String text) {
        long size = SizeParser.parse(text);
        if (size < BucketLayout.MIN_PAGE_SIZE || Long.bitCount(size) != 1) {
            throw new IllegalArgumentException(size + " bytes");
        }
        return size;
    }

    static long parsePositiveSize(String text) {
        long size = SizeParser.parse(text);
        if (size <= 0) {
            throw new IllegalArgumentException("");
        }
        return size;
    }
}
