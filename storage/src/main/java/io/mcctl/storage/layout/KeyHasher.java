package io.mcctl.storage.layout;

import java.nio.charset.StandardCharsets;
import net.openhft.hashing.LongHashFunction;

/**
 * Home bucket of a key: XXH64 of the raw key bytes (no tenant prefix) with seed 0, modulo the bucket
 * count, read as an unsigned 64-bit number. Every writer, reader and master computes it the same way,
 * bit for bit equal to the C library's {@code XXH64(key, len, 0) % bucket_count}.
 */
public final class KeyHasher {

    private static final LongHashFunction XXH64_SEED_0 = LongHashFunction.xx(0);

    private KeyHasher() {
    }

    /** XXH64 with seed 0 of {@code bytes}. */
    public static long xxh64(byte[] bytes) {
        return XXH64_SEED_0.hashBytes(bytes);
    }

    /** The bytes a key is hashed (and stored) as: its UTF-8 encoding. */
    public static byte[] keyBytes(String key) {
        return key.getBytes(StandardCharsets.UTF_8);
    }

    public static int homeBucket(byte[] rawKey, int bucketCount) {
        return (int) Long.remainderUnsigned(xxh64(rawKey), bucketCount);
    }

    public static int homeBucket(String key, int bucketCount) {
        return homeBucket(keyBytes(key), bucketCount);
    }
}
