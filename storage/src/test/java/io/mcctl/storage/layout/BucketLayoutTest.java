package io.mcctl.storage.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.OptionalInt;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(30)
class BucketLayoutTest {

    @TempDir
    Path root;

    private BucketLayout eightBuckets() {
        return new BucketLayout(root, 8, 4096, 1 << 20);
    }

    @Nested
    class Names_and_paths {

        @Test
        void bucket_file_names_are_two_lowercase_hex_digits_or_more() {
            assertEquals("bucket_0a.data", BucketLayout.bucketFileName(0x0a));
            assertEquals("bucket_00.data", BucketLayout.bucketFileName(0));
            assertEquals("bucket_ff.data", BucketLayout.bucketFileName(255));
            assertEquals("bucket_100.data", BucketLayout.bucketFileName(256));
            assertEquals("bucket_ffff.data", BucketLayout.bucketFileName(65535));
        }

        @Test
        void a_bucket_number_is_decimal_or_hex_with_0x_or_the_file_name() {
            assertEquals(61, BucketLayout.parseBucketNumber("61"));
            assertEquals(61, BucketLayout.parseBucketNumber("0x3d"));
            assertEquals(61, BucketLayout.parseBucketNumber("bucket_3d.data"));
            assertEquals(10, BucketLayout.parseBucketNumber("10"), "a bare number is decimal, even one that reads as hex");
            assertEquals(16, BucketLayout.parseBucketNumber("bucket_10.data"));
            assertEquals(65535, BucketLayout.parseBucketNumber("0xffff"));
            assertEquals("61 (bucket_3d.data)", BucketLayout.describeBucket(61));
        }

        @ParameterizedTest
        @ValueSource(strings = {"", "3d", "-1", "0x", "0x10000", "65536", "99999999999", "bucket_3D.data", "bucket_003d.data", "bucket_3d"})
        void other_bucket_numbers_are_refused_with_the_forms_allowed(String text) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BucketLayout.parseBucketNumber(text));
            assertTrue(e.getMessage().contains("'" + text + "' is not a bucket number: allowed are a decimal number (61)"), e.getMessage());
        }

        @Test
        void bucket_path_is_the_file_name_under_the_root() {
            BucketLayout layout = eightBuckets();
            assertEquals(root.toAbsolutePath().normalize().resolve("bucket_07.data"), layout.bucketPath(7));
            assertEquals(root.resolve(LayoutFile.FILE_NAME), layout.layoutFile());
        }

        @Test
        void bucket_path_outside_the_bucket_range_is_rejected() {
            BucketLayout layout = eightBuckets();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> layout.bucketPath(8));
            assertTrue(e.getMessage().contains("bucket 8") && e.getMessage().contains("0..7"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> layout.bucketPath(-1));
        }

        @Test
        void the_root_is_made_absolute_and_normal() {
            BucketLayout layout = new BucketLayout(Path.of("some", "..", "relative-root"), 1, 4096, 4096);
            assertTrue(layout.root().isAbsolute());
            assertEquals(Path.of("relative-root").toAbsolutePath().normalize(), layout.root());
        }

        @Test
        void pages_per_bucket_and_pages_for_an_object_round_up() {
            BucketLayout layout = eightBuckets();
            assertEquals(256, layout.pagesPerBucket());
            assertEquals(0, layout.pagesFor(0));
            assertEquals(1, layout.pagesFor(1));
            assertEquals(1, layout.pagesFor(4096));
            assertEquals(2, layout.pagesFor(4097));
        }
    }

    @Nested
    class Bucket_of_a_path {

        @Test
        void accepts_its_own_bucket_files() {
            BucketLayout layout = eightBuckets();
            for (int bucket = 0; bucket < 8; bucket++) {
                assertEquals(OptionalInt.of(bucket), layout.bucketOf(layout.bucketPath(bucket)));
            }
            assertEquals(OptionalInt.of(3), layout.bucketOf(root.resolve("sub").resolve("..").resolve("bucket_03.data")));
        }

        @Test
        void accepts_three_and_four_digit_names_of_a_large_layout() {
            BucketLayout layout = new BucketLayout(root, 65536, 4096, 4096);
            assertEquals(OptionalInt.of(256), layout.bucketOf(root.resolve("bucket_100.data")));
            assertEquals(OptionalInt.of(65535), layout.bucketOf(root.resolve("bucket_ffff.data")));
        }

        @Test
        void rejects_files_in_another_directory(@TempDir Path elsewhere) {
            BucketLayout layout = eightBuckets();
            assertEquals(OptionalInt.empty(), layout.bucketOf(elsewhere.resolve("bucket_03.data")));
            assertEquals(OptionalInt.empty(), layout.bucketOf(root.resolve("sub").resolve("bucket_03.data")));
        }

        @ParameterizedTest
        @ValueSource(strings = {"bucket_0A.data", "bucket_a.data", "bucket_003.data", "bucket_0003.data", "bucket_03.dat", "bucket_03.data.tmp",
            "Bucket_03.data", "bucket_-1.data", "mooncake.layout.json", "bucket_.data", "bucket_00003.data"})
        void rejects_names_that_are_not_bucket_file_names(String name) {
            assertEquals(OptionalInt.empty(), eightBuckets().bucketOf(root.resolve(name)));
        }

        @Test
        void rejects_buckets_beyond_the_bucket_count() {
            BucketLayout layout = eightBuckets();
            assertEquals(OptionalInt.empty(), layout.bucketOf(root.resolve("bucket_08.data")));
            assertEquals(OptionalInt.empty(), layout.bucketOf(root.resolve("bucket_ff.data")));
            assertEquals(OptionalInt.empty(), layout.bucketOf(root.resolve("bucket_100.data")));
        }
    }

    @Nested
    class Validation {

        @ParameterizedTest
        @ValueSource(longs = {3000, 6144, 12288, 65537})
        void a_page_size_that_is_not_a_power_of_two_is_rejected(long pageSize) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new BucketLayout(root, 8, pageSize, pageSize * 1024));
            assertTrue(e.getMessage().contains("page size " + pageSize), e.getMessage());
            assertTrue(e.getMessage().contains("power of two"), e.getMessage());
        }

        @ParameterizedTest
        @ValueSource(longs = {0, 1, 512, 2048, -4096})
        void a_page_size_under_4096_is_rejected(long pageSize) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new BucketLayout(root, 8, pageSize, 1 << 20));
            assertTrue(e.getMessage().contains("4096"), e.getMessage());
        }

        @Test
        void a_bucket_size_that_is_not_a_multiple_of_the_page_size_is_rejected() {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new BucketLayout(root, 8, 4096, 4096 * 10 + 1));
            assertTrue(e.getMessage().contains("40961") && e.getMessage().contains("4096"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> new BucketLayout(root, 8, 8192, 4096));
            assertThrows(IllegalArgumentException.class, () -> new BucketLayout(root, 8, 4096, 0));
        }

        @ParameterizedTest
        @ValueSource(ints = {0, -1, 65537})
        void a_bucket_count_outside_1_to_65536_is_rejected(int count) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new BucketLayout(root, count, 4096, 4096));
            assertTrue(e.getMessage().contains("bucket count " + count) && e.getMessage().contains("1..65536"), e.getMessage());
        }

        @Test
        void the_extreme_valid_values_are_accepted() {
            assertEquals(65536, new BucketLayout(root, 65536, 4096, 4096).bucketCount());
            assertEquals(1, new BucketLayout(root, 1, 1L << 30, 1L << 30).pagesPerBucket());
        }
    }
}
