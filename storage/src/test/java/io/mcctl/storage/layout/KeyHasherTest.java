package io.mcctl.storage.layout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * XXH64 (seed 0) against the C library. Every expected hash below was produced by {@code xxhsum} 0.8.1
 * (the xxHash project's CLI, Debian package xxhash 0.8.1-1) as {@code printf '%s' KEY | xxhsum -H64},
 * which prints the 64-bit value as canonical big-endian hex; the home buckets are those hashes modulo
 * the bucket count, taken as unsigned 64-bit numbers (computed from the same hex).
 */
@Timeout(30)
class KeyHasherTest {

    /** 123 bytes. */
    static final String PANGRAMS = "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs. "
            + "Sphinx of black quartz, judge my vow!";
    /** Cyrillic (2-byte), CJK (3-byte) and an emoji (4-byte) in UTF-8: 24 bytes. */
    static final String MULTI_BYTE = "llm/kv/ключ/键/🔑";

    @ParameterizedTest(name = "XXH64 of \"{0}\" is {1}")
    @CsvSource(delimiter = '|', textBlock = """
            ''                                         | ef46db3751d8e999
            a                                          | d24ec4f1a98c6e5b
            abc                                        | 44bc2cf5ad770999
            Nobody inspects the spammish repetition    | fbcea83c8a378bf1
            tenant-a/layer-17/block-000042             | 3778870c764d30ef
            """)
    void xxh64_of_a_key_equals_the_c_library(String key, String expectedHex) {
        assertEquals(Long.parseUnsignedLong(expectedHex, 16), KeyHasher.xxh64(key.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void the_empty_input_hashes_to_the_reference_value() {
        assertEquals(0xEF46DB3751D8E999L, KeyHasher.xxh64(new byte[0]));
    }

    @Test
    void a_key_of_more_than_100_bytes_hashes_like_the_c_library() {
        assertEquals(123, PANGRAMS.getBytes(StandardCharsets.UTF_8).length);
        assertEquals(0x4f08c2560063fd66L, KeyHasher.xxh64(KeyHasher.keyBytes(PANGRAMS)));
    }

    @Test
    void long_inputs_of_zeros_and_of_a_repeating_alphabet_hash_like_the_c_library() {
        // head -c 100000 /dev/zero | xxhsum -H64
        assertEquals(0x2c9fd5b2f34e23dbL, KeyHasher.xxh64(new byte[100_000]));
        // 1000 bytes "abcd...zabcd..." | xxhsum -H64
        byte[] alphabet = new byte[1000];
        for (int i = 0; i < alphabet.length; i++) {
            alphabet[i] = (byte) ('a' + i % 26);
        }
        assertEquals(0x94b86db9a16d86a9L, KeyHasher.xxh64(alphabet));
    }

    @Test
    void a_key_with_multi_byte_utf8_is_hashed_as_its_utf8_bytes() {
        byte[] expectedBytes = {0x6c, 0x6c, 0x6d, 0x2f, 0x6b, 0x76, 0x2f, (byte) 0xd0, (byte) 0xba, (byte) 0xd0, (byte) 0xbb,
            (byte) 0xd1, (byte) 0x8e, (byte) 0xd1, (byte) 0x87, 0x2f, (byte) 0xe9, (byte) 0x94, (byte) 0xae, 0x2f,
            (byte) 0xf0, (byte) 0x9f, (byte) 0x94, (byte) 0x91};
        assertArrayEquals(expectedBytes, KeyHasher.keyBytes(MULTI_BYTE));
        assertEquals(0x3336aa87593d935eL, KeyHasher.xxh64(KeyHasher.keyBytes(MULTI_BYTE)));
    }

    @ParameterizedTest(name = "home bucket of \"{0}\" among {1} is {2}")
    @CsvSource(delimiter = '|', textBlock = """
            ''                              | 256   | 153
            ''                              | 1000  | 921
            ''                              | 255   | 246
            a                               | 256   | 91
            a                               | 1000  | 955
            abc                             | 256   | 153
            abc                             | 65536 | 2457
            tenant-a/layer-17/block-000042  | 256   | 239
            tenant-a/layer-17/block-000042  | 1000  | 799
            llm/kv/ключ/键/🔑               | 256   | 94
            llm/kv/ключ/键/🔑               | 1000  | 686
            """)
    void the_home_bucket_is_the_c_hash_modulo_the_bucket_count_as_unsigned(String key, int bucketCount, int expected) {
        assertEquals(expected, KeyHasher.homeBucket(key, bucketCount));
        assertEquals(expected, KeyHasher.homeBucket(KeyHasher.keyBytes(key), bucketCount));
    }

    @Test
    void a_layout_gives_the_same_home_bucket_as_the_hasher() {
        BucketLayout layout = new BucketLayout(Path.of("/tmp/unused-root"), 256, 4096, 1 << 20);
        assertEquals(239, layout.homeBucket("tenant-a/layer-17/block-000042"));
        // 0x4f08c2560063fd66 mod 256 = 0x66
        assertEquals(0x66, layout.homeBucket(PANGRAMS));
    }
}
