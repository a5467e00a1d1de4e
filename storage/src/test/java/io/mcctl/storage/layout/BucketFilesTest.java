package io.mcctl.storage.layout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class BucketFilesTest {

    private static final long MIB = 1 << 20;

    @TempDir
    Path root;

    private BucketLayout small() {
        return new BucketLayout(root, 8, 4096, MIB);
    }

    /** Every file under the root with its size and content digest, to prove that nothing was touched. */
    private Map<String, String> snapshot() throws IOException {
        Map<String, String> files = new TreeMap<>();
        try (Stream<Path> list = Files.list(root)) {
            for (Path p : (Iterable<Path>) list::iterator) {
                byte[] content = Files.readAllBytes(p);
                files.put(p.getFileName().toString(), content.length + ":" + Arrays.hashCode(content)
                        + ":" + Files.getLastModifiedTime(p).toMillis());
            }
        }
        return files;
    }

    private static byte[] pattern(int length, int seed) {
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) (i * 31 + seed);
        }
        return bytes;
    }

    @Nested
    class Initialising_a_fresh_root {

        @Test
        void creates_the_layout_file_and_every_bucket_file_at_full_size() throws IOException {
            BucketLayout layout = small();
            BucketFiles.InitResult result = BucketFiles.initialise(layout);
            assertEquals(8, result.created());
            assertEquals(0, result.extended());
            assertEquals(0, result.unchanged());
            for (int bucket = 0; bucket < 8; bucket++) {
                assertEquals(MIB, Files.size(root.resolve(String.format("bucket_%02x.data", bucket))));
            }
            assertTrue(Files.exists(root.resolve("mooncake.layout.json")));
            LayoutFile.Record record = LayoutFile.read(layout.layoutFile());
            assertEquals(result.layout(), record);
            assertEquals(LayoutFile.FORMAT_VERSION, record.formatVersion());
            assertEquals(8, record.bucketCount());
            assertEquals(4096, record.pageSize());
            assertEquals(MIB, record.bucketSize());
            assertFalse(record.clusterId().isBlank());
            try (Stream<Path> list = Files.list(root)) {
                assertEquals(9, list.count(), "8 bucket files and the layout file, no temp files left");
            }
        }

        @Test
        void the_default_count_of_256_buckets_gives_256_files() throws IOException {
            BucketLayout layout = new BucketLayout(root, 256, 4096, 64 * 1024);
            BucketFiles.InitResult result = BucketFiles.initialise(layout);
            assertEquals(256, result.created());
            for (int bucket = 0; bucket < 256; bucket++) {
                Path file = layout.bucketPath(bucket);
                assertEquals(64 * 1024, Files.size(file), file.toString());
            }
            try (Stream<Path> list = Files.list(root)) {
                assertEquals(257, list.count());
            }
            assertTrue(Files.exists(root.resolve("bucket_00.data")));
            assertTrue(Files.exists(root.resolve("bucket_ff.data")));
        }

        @Test
        void creates_a_missing_root_directory() throws IOException {
            BucketLayout layout = new BucketLayout(root.resolve("a").resolve("b"), 2, 4096, 8192);
            assertEquals(2, BucketFiles.initialise(layout).created());
            assertEquals(8192, Files.size(layout.bucketPath(1)));
        }
    }

    @Nested
    class Initialising_again {

        @Test
        void reports_every_file_unchanged_and_keeps_the_layout_record() throws IOException {
            BucketFiles.InitResult first = BucketFiles.initialise(small());
            Map<String, String> before = snapshot();
            BucketFiles.InitResult second = BucketFiles.initialise(small());
            assertEquals(0, second.created());
            assertEquals(0, second.extended());
            assertEquals(8, second.unchanged());
            assertEquals(first.layout(), second.layout(), "same cluster id and layout");
            assertEquals(before, snapshot());
        }

        @Test
        void extends_a_short_file_without_changing_its_existing_bytes() throws IOException {
            BucketLayout layout = small();
            Files.createDirectories(root);
            byte[] existing = pattern(10_000, 7);
            Files.write(layout.bucketPath(3), existing);

            BucketFiles.InitResult result = BucketFiles.initialise(layout);
            assertEquals(7, result.created());
            assertEquals(1, result.extended());
            assertEquals(0, result.unchanged());

            byte[] after = Files.readAllBytes(layout.bucketPath(3));
            assertEquals(MIB, after.length);
            assertArrayEquals(existing, Arrays.copyOf(after, existing.length), "the bytes that were there are kept");
            for (int i = existing.length; i < after.length; i++) {
                if (after[i] != 0) {
                    throw new AssertionError("byte " + i + " of the extension is " + after[i] + ", not zero");
                }
            }
        }

        @Test
        void never_shrinks_or_rewrites_a_longer_file() throws IOException {
            BucketLayout layout = small();
            BucketFiles.initialise(layout);
            byte[] longer = pattern((int) MIB + 12_345, 3);
            Files.write(layout.bucketPath(5), longer);

            BucketFiles.InitResult result = BucketFiles.initialise(layout);
            assertEquals(8, result.unchanged());
            assertEquals(0, result.extended());
            assertArrayEquals(longer, Files.readAllBytes(layout.bucketPath(5)));
        }

        @Test
        void recreates_a_deleted_bucket_file() throws IOException {
            BucketLayout layout = small();
            BucketFiles.initialise(layout);
            Files.delete(layout.bucketPath(6));
            BucketFiles.InitResult result = BucketFiles.initialise(layout);
            assertEquals(1, result.created());
            assertEquals(7, result.unchanged());
            assertEquals(MIB, Files.size(layout.bucketPath(6)));
        }
    }

    @Nested
    class A_layout_mismatch {

        /** Lays out the root with the small layout, runs {@code other}, and checks that nothing under the root changed. */
        private LayoutMismatchException refused(BucketLayout other) throws IOException {
            BucketFiles.initialise(small());
            Map<String, String> before = snapshot();
            LayoutMismatchException e = assertThrows(LayoutMismatchException.class, () -> BucketFiles.initialise(other));
            assertEquals(before, snapshot(), "a refused initialise created or changed files");
            assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
            assertTrue(e.getMessage().contains(root.resolve(LayoutFile.FILE_NAME).toString()), e.getMessage());
            return e;
        }

        @Test
        void of_page_size_is_refused_naming_both_values_and_touches_nothing() throws IOException {
            LayoutMismatchException e = refused(new BucketLayout(root, 8, 8192, MIB));
            assertTrue(e.getMessage().contains("page_size is 8192 here but 4096 in the layout"), e.getMessage());
        }

        @Test
        void of_bucket_count_is_refused_naming_both_values_and_creates_no_bucket_files() throws IOException {
            LayoutMismatchException e = refused(new BucketLayout(root, 16, 4096, MIB));
            assertTrue(e.getMessage().contains("bucket_count is 16 here but 8 in the layout"), e.getMessage());
            assertFalse(Files.exists(root.resolve("bucket_08.data")));
        }

        @Test
        void of_bucket_size_is_refused_naming_both_values_and_extends_nothing() throws IOException {
            LayoutMismatchException e = refused(new BucketLayout(root, 8, 4096, 2 * MIB));
            assertTrue(e.getMessage().contains("bucket_size is 2097152 here but 1048576 in the layout"), e.getMessage());
        }

        @Test
        void of_every_field_names_every_difference() throws IOException {
            LayoutMismatchException e = refused(new BucketLayout(root, 4, 65536, 4 * MIB));
            assertTrue(e.getMessage().contains("bucket_count is 4 here but 8"), e.getMessage());
            assertTrue(e.getMessage().contains("page_size is 65536 here but 4096"), e.getMessage());
            assertTrue(e.getMessage().contains("bucket_size is 4194304 here but 1048576"), e.getMessage());
        }

        @Test
        void with_another_format_version_is_refused_and_creates_no_bucket_files() throws IOException {
            Files.createDirectories(root);
            Path layoutFile = root.resolve(LayoutFile.FILE_NAME);
            Files.writeString(layoutFile, """
                    {"cluster_id": "c-1", "format_version": 2, "bucket_count": 8, "page_size": 4096, "bucket_size": 1048576}
                    """, StandardCharsets.UTF_8);
            Map<String, String> before = snapshot();
            LayoutMismatchException e = assertThrows(LayoutMismatchException.class, () -> BucketFiles.initialise(small()));
            assertTrue(e.getMessage().contains("format version 2"), e.getMessage());
            assertTrue(e.getMessage().contains("version 1"), e.getMessage());
            assertEquals(before, snapshot());
        }

        @Test
        void with_an_unreadable_layout_file_is_refused_and_creates_no_bucket_files() throws IOException {
            Files.createDirectories(root);
            Files.writeString(root.resolve(LayoutFile.FILE_NAME), "{ not json");
            Map<String, String> before = snapshot();
            LayoutMismatchException e = assertThrows(LayoutMismatchException.class, () -> BucketFiles.initialise(small()));
            assertTrue(e.getMessage().contains("cannot be read as a layout record"), e.getMessage());
            assertEquals(before, snapshot());
        }
    }
}
