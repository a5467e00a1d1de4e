package io.mcctl.storage.layout;

import java.nio.file.Path;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where the bucket files of a tier live and how they are cut into pages: {@code <root>/bucket_%02x.data},
 * {@code bucketCount} files of {@code bucketSize} bytes each, pages of {@code pageSize} bytes.
 * Immutable; validated on construction.
 */
public record BucketLayout(Path root, int bucketCount, long pageSize, long bucketSize) {

    public static final int MAX_BUCKET_COUNT = 65536;
    public static final long MIN_PAGE_SIZE = 4096;
    private static final Pattern BUCKET_FILE_NAME = Pattern.compile("bucket_([0-9a-f]{2,4})\\.data");

    public BucketLayout {
        root = root.toAbsolutePath().normalize();
        if (bucketCount < 1 || bucketCount > MAX_BUCKET_COUNT) {
            throw new IllegalArgumentException("bucket count " + bucketCount + " is outside 1.." + MAX_BUCKET_COUNT);
        }
        if (pageSize < MIN_PAGE_SIZE || Long.bitCount(pageSize) != 1) {
            throw new IllegalArgumentException("page size " + pageSize + " is not a power of two of at least " + MIN_PAGE_SIZE);
        }
        if (bucketSize < pageSize || bucketSize % pageSize != 0) {
            throw new IllegalArgumentException("bucket size " + bucketSize + " is not a positive multiple of page size " + pageSize);
        }
    }

    public long pagesPerBucket() {
        return bucketSize / pageSize;
    }

    /** Pages an object of {@code objectSize} bytes occupies. */
    public long pagesFor(long objectSize) {
        return (objectSize + pageSize - 1) / pageSize;
    }

    /**
     * A bucket number as an operator may give it: decimal ({@code 61}, how bucket numbers are printed everywhere),
     * hex with {@code 0x} ({@code 0x3d}), or the bucket file's name ({@code bucket_3d.data}), whose number is hex.
     * A bare number is always decimal, so no text means two buckets.
     *
     * @throws IllegalArgumentException naming the text and the forms allowed
     */
    public static int parseBucketNumber(String text) {
        String t = text.trim();
        try {
            Matcher file = BUCKET_FILE_NAME.matcher(t);
            if (file.matches() && bucketFileName(Integer.parseInt(file.group(1), 16)).equals(t)) {
                return Integer.parseInt(file.group(1), 16);
            }
            if (t.startsWith("0x") || t.startsWith("0X")) {
                return checkedBucket(Integer.parseInt(t.substring(2), 16), text);
            }
            if (!t.isEmpty() && t.chars().allMatch(c -> c >= '0' && c <= '9')) {
                return checkedBucket(Integer.parseInt(t), text);
            }
        } catch (NumberFormatException tooLarge) {
            // falls through to the error below
        }
        throw new IllegalArgumentException("'" + text + "' is not a bucket number: allowed are a decimal number (61), hex with 0x (0x3d)"
                + " or the bucket file's name (bucket_3d.data), below " + MAX_BUCKET_COUNT);
    }

    private static int checkedBucket(int bucket, String text) {
        if (bucket < 0 || bucket >= MAX_BUCKET_COUNT) {
            throw new NumberFormatException(text);
        }
        return bucket;
    }

    /** How a bucket is named to an operator: its number (decimal) and its file, e.g. {@code 61 (bucket_3d.data)}. */
    public static String describeBucket(int bucket) {
        return bucket + " (" + bucketFileName(bucket) + ")";
    }

    public static String bucketFileName(int bucket) {
        return String.format(Locale.ROOT, "bucket_%02x.data", bucket);
    }

    public Path bucketPath(int bucket) {
        if (bucket < 0 || bucket >= bucketCount) {
            throw new IllegalArgumentException("bucket " + bucket + " is outside 0.." + (bucketCount - 1));
        }
        return root.resolve(bucketFileName(bucket));
    }

    /** The bucket a path names, if it is one of this layout's bucket files. */
    public OptionalInt bucketOf(Path file) {
        Path absolute = file.toAbsolutePath().normalize();
        if (!root.equals(absolute.getParent())) {
            return OptionalInt.empty();
        }
        Matcher m = BUCKET_FILE_NAME.matcher(absolute.getFileName().toString());
        if (!m.matches()) {
            return OptionalInt.empty();
        }
        int bucket = Integer.parseInt(m.group(1), 16);
        return bucket < bucketCount && bucketFileName(bucket).equals(absolute.getFileName().toString())
                ? OptionalInt.of(bucket) : OptionalInt.empty();
    }

    public int homeBucket(String key) {
        return KeyHasher.homeBucket(key, bucketCount);
    }

    public Path layoutFile() {
        return root.resolve(LayoutFile.FILE_NAME);
    }
}
