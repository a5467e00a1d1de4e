package io.mcctl.storage.config;

import static io.mcctl.storage.config.StorageSettings.ALL;
import static io.mcctl.storage.config.StorageSettings.BUCKET_COUNT;
import static io.mcctl.storage.config.StorageSettings.BUCKET_SIZE;
import static io.mcctl.storage.config.StorageSettings.FS_TYPE;
import static io.mcctl.storage.config.StorageSettings.HEALTH_CHECK;
import static io.mcctl.storage.config.StorageSettings.PAGE_MODE;
import static io.mcctl.storage.config.StorageSettings.PAGE_SIZE;
import static io.mcctl.storage.config.StorageSettings.ROOT_DIR;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(30)
class ConfigLoaderTest {

    @TempDir
    Path dir;

    private Path yaml(String name, String content) throws IOException {
        Path file = dir.resolve(name);
        Files.writeString(file, content);
        return file;
    }

    private static EffectiveConfig load(Map<Setting<?>, String> flags, Map<String, String> env, Path file) {
        return ConfigLoader.load(ALL, flags, env, file);
    }

    /** Asserts the message is one line and contains every fragment. */
    private static void assertMessage(RuntimeException e, String... fragments) {
        String message = e.getMessage();
        assertFalse(message.contains("\n") || message.contains("\r"), "one line: " + message);
        for (String fragment : fragments) {
            assertTrue(message.contains(fragment), "'" + fragment + "' missing from: " + message);
        }
    }

    @Nested
    class Precedence {

        @Test
        void a_flag_beats_the_environment_the_file_and_the_default() throws IOException {
            Path file = yaml("c.yaml", "page_size: 8KiB\n");
            EffectiveConfig config = load(Map.of(PAGE_SIZE, "16KiB"), Map.of("MOONCAKE_DISTRIBUTED_PAGE_SIZE", "32KiB"), file);
            assertEquals(16384L, config.get(PAGE_SIZE));
            EffectiveConfig.Entry entry = config.entry(PAGE_SIZE);
            assertEquals(EffectiveConfig.SourceKind.FLAG, entry.source());
            assertEquals("--page-size", entry.sourceDetail());
            assertEquals("flag --page-size", entry.describeSource());
            assertEquals("16KiB", entry.formattedValue());
        }

        @Test
        void the_environment_beats_the_file_and_the_default() throws IOException {
            Path file = yaml("c.yaml", "page_size: 8KiB\n");
            EffectiveConfig config = load(Map.of(), Map.of("MOONCAKE_DISTRIBUTED_PAGE_SIZE", "32KiB"), file);
            assertEquals(32768L, config.get(PAGE_SIZE));
            assertEquals(EffectiveConfig.SourceKind.ENVIRONMENT, config.entry(PAGE_SIZE).source());
            assertEquals("environment MOONCAKE_DISTRIBUTED_PAGE_SIZE", config.sourceOf(PAGE_SIZE));
        }

        @Test
        void the_file_beats_the_default() throws IOException {
            Path file = yaml("c.yaml", "page_size: 8KiB\n");
            EffectiveConfig config = load(Map.of(), Map.of(), file);
            assertEquals(8192L, config.get(PAGE_SIZE));
            assertEquals(EffectiveConfig.SourceKind.FILE, config.entry(PAGE_SIZE).source());
            assertEquals("file " + file, config.sourceOf(PAGE_SIZE));
            assertEquals(EffectiveConfig.SourceKind.DEFAULT, config.entry(BUCKET_SIZE).source(), "keys not in the file keep their default");
        }

        @Test
        void with_nothing_given_every_setting_has_its_default() {
            EffectiveConfig config = load(Map.of(), Map.of(), null);
            assertEquals(true, config.get(PAGE_MODE));
            assertEquals(Path.of("./mooncake-data").toAbsolutePath().normalize(), config.get(ROOT_DIR));
            assertEquals("posix", config.get(FS_TYPE));
            assertEquals(256, config.get(BUCKET_COUNT));
            assertEquals(65536L, config.get(PAGE_SIZE));
            assertEquals(4L << 30, config.get(BUCKET_SIZE));
            assertEquals(false, config.get(HEALTH_CHECK));
            for (EffectiveConfig.Entry entry : config.entries()) {
                assertEquals(EffectiveConfig.SourceKind.DEFAULT, entry.source(), entry.setting().key());
                assertEquals("default", entry.describeSource());
            }
            assertEquals(ALL.size(), config.entries().size());
            assertEquals("64KiB", config.entry(PAGE_SIZE).formattedValue());
            assertEquals("4GiB", config.entry(BUCKET_SIZE).formattedValue());
        }

        @Test
        void the_default_root_is_mooncake_data_made_absolute() {
            Path root = load(Map.of(), Map.of(), null).get(ROOT_DIR);
            assertTrue(root.isAbsolute());
            assertEquals(Path.of("").toAbsolutePath().resolve("mooncake-data"), root);
        }

        @Test
        void each_setting_takes_its_own_source() throws IOException {
            Path file = yaml("c.yaml", "bucket_count: 64\nfs_type: hf3fs\nroot_dir: /mnt/3fs/kv\n");
            Map<String, String> env = Map.of("MOONCAKE_DISTRIBUTED_BUCKET_SIZE", "1GiB", "MOONCAKE_DISTRIBUTED_FS_TYPE", "POSIX");
            EffectiveConfig config = load(Map.of(HEALTH_CHECK, "yes"), env, file);
            assertEquals("flag --health-check", config.sourceOf(HEALTH_CHECK));
            assertEquals(true, config.get(HEALTH_CHECK));
            assertEquals("environment MOONCAKE_DISTRIBUTED_BUCKET_SIZE", config.sourceOf(BUCKET_SIZE));
            assertEquals(1L << 30, config.get(BUCKET_SIZE));
            assertEquals("environment MOONCAKE_DISTRIBUTED_FS_TYPE", config.sourceOf(FS_TYPE));
            assertEquals("posix", config.get(FS_TYPE));
            assertEquals("file " + file, config.sourceOf(BUCKET_COUNT));
            assertEquals(64, config.get(BUCKET_COUNT));
            assertEquals(Path.of("/mnt/3fs/kv"), config.get(ROOT_DIR));
            assertEquals("default", config.sourceOf(PAGE_SIZE));
            assertEquals("default", config.sourceOf(PAGE_MODE));
        }

        @Test
        void entries_come_in_the_order_the_settings_were_given() {
            List<EffectiveConfig.Entry> entries = load(Map.of(), Map.of(), null).entries();
            for (int i = 0; i < ALL.size(); i++) {
                assertEquals(ALL.get(i), entries.get(i).setting());
            }
        }

        @Test
        void a_setting_that_was_not_loaded_is_an_error_naming_it() {
            EffectiveConfig config = ConfigLoader.load(List.of(PAGE_SIZE), Map.of(), Map.of(), null);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> config.get(BUCKET_COUNT));
            assertTrue(e.getMessage().contains("bucket_count"), e.getMessage());
        }
    }

    @Nested
    class The_config_file {

        @Test
        void mcctl_config_names_the_file_when_no_config_flag_is_given() throws IOException {
            Path file = yaml("from-env.yaml", "bucket_count: 16\n");
            EffectiveConfig config = load(Map.of(), Map.of("MCCTL_CONFIG", file.toString()), null);
            assertEquals(16, config.get(BUCKET_COUNT));
            assertEquals("file " + file, config.sourceOf(BUCKET_COUNT));
        }

        @Test
        void an_explicit_config_file_wins_over_mcctl_config() throws IOException {
            Path fromEnv = yaml("from-env.yaml", "bucket_count: 16\n");
            Path explicit = yaml("explicit.yaml", "bucket_count: 32\n");
            EffectiveConfig config = load(Map.of(), Map.of("MCCTL_CONFIG", fromEnv.toString()), explicit);
            assertEquals(32, config.get(BUCKET_COUNT));
            assertEquals("file " + explicit, config.sourceOf(BUCKET_COUNT));
        }

        @Test
        void a_blank_mcctl_config_means_no_file() {
            EffectiveConfig config = load(Map.of(), Map.of("MCCTL_CONFIG", "  "), null);
            assertEquals("default", config.sourceOf(BUCKET_COUNT));
        }

        @Test
        void an_empty_file_sets_nothing() throws IOException {
            EffectiveConfig config = load(Map.of(), Map.of(), yaml("empty.yaml", ""));
            assertEquals("default", config.sourceOf(PAGE_SIZE));
        }

        @Test
        void a_missing_file_is_an_error_naming_it() {
            Path missing = dir.resolve("nope.yaml");
            ConfigException e = assertThrows(ConfigException.class, () -> load(Map.of(), Map.of(), missing));
            assertMessage(e, missing.toString(), "does not exist");
        }

        @Test
        void a_missing_file_named_by_mcctl_config_says_so() {
            Path missing = dir.resolve("nope.yaml");
            ConfigException e = assertThrows(ConfigException.class,
                    () -> load(Map.of(), Map.of("MCCTL_CONFIG", missing.toString()), null));
            assertMessage(e, missing.toString(), "does not exist", "named by MCCTL_CONFIG");
        }

        @Test
        void an_unknown_key_is_an_error_listing_the_allowed_keys() throws IOException {
            Path file = yaml("typo.yaml", "pagesize: 64KiB\nbucket_count: 8\n");
            ConfigException e = assertThrows(ConfigException.class, () -> load(Map.of(), Map.of(), file));
            assertMessage(e, "unknown setting pagesize", file.toString(),
                    "allowed keys are page_mode, root_dir, fs_type, bucket_count, page_size, bucket_size, health_check");
        }

        @Test
        void several_unknown_keys_are_all_named() throws IOException {
            Path file = yaml("typos.yaml", "pagesize: 64KiB\nbucketcount: 8\n");
            ConfigException e = assertThrows(ConfigException.class, () -> load(Map.of(), Map.of(), file));
            assertMessage(e, "unknown settings pagesize, bucketcount");
        }

        @Test
        void malformed_yaml_is_a_one_line_error_naming_the_file() throws IOException {
            Path file = yaml("broken.yaml", "page_size: [64KiB\nbucket_count: {\n");
            ConfigException e = assertThrows(ConfigException.class, () -> load(Map.of(), Map.of(), file));
            assertMessage(e, file.toString(), "not valid YAML");
        }

        @Test
        void a_yaml_syntax_error_names_file_line_and_column() throws IOException {
            Path file = yaml("syntax.yaml", "bucket_count: 8\npage_size: 64KiB\n  bad: [\n");
            ConfigException e = assertThrows(ConfigException.class, () -> load(Map.of(), Map.of(), file));
            assertMessage(e, file + ":3:", "not valid YAML");
        }

        @Test
        void a_setting_given_twice_is_refused_naming_it_and_its_line() throws IOException {
            Path file = yaml("twice.yaml", "bucket_count: 8\npage_size: 64KiB\nbucket_count: 16\n");
            ConfigException e = assertThrows(ConfigException.class, () -> load(Map.of(), Map.of(), file));
            assertMessage(e, file + ":3:", "given twice", "bucket_count");
        }

        @Test
        void a_file_that_is_not_a_map_is_refused() throws IOException {
            Path file = yaml("list.yaml", "- page_size\n- 64KiB\n");
            ConfigException e = assertThrows(ConfigException.class, () -> load(Map.of(), Map.of(), file));
            assertMessage(e, file.toString(), "must be a map");
        }

        @Test
        void a_nested_value_is_refused_naming_the_key() throws IOException {
            Path file = yaml("nested.yaml", "page_size:\n  value: 64KiB\n");
            ConfigException e = assertThrows(ConfigException.class, () -> load(Map.of(), Map.of(), file));
            assertMessage(e, "page_size", file.toString(), "single value");
        }

        @Test
        void an_invalid_value_in_the_file_names_the_file_as_its_source() throws IOException {
            Path file = yaml("bad.yaml", "bucket_count: 0\n");
            ConfigException e = assertThrows(ConfigException.class, () -> load(Map.of(), Map.of(), file));
            assertMessage(e, "bucket_count", "'0'", "file " + file, "1 to 65536");
        }
    }

    @Nested
    class Sizes {

        @ParameterizedTest(name = "bucket_size \"{0}\" is {1} bytes")
        @CsvSource({"64KiB, 65536", "4GiB, 4294967296", "4G, 4294967296", "65536, 65536", "1T, 1099511627776"})
        void sizes_with_and_without_binary_units_parse_from_every_source(String text, long bytes) throws IOException {
            assertEquals(bytes, load(Map.of(BUCKET_SIZE, text), Map.of(), null).get(BUCKET_SIZE));
            assertEquals(bytes, load(Map.of(), Map.of("MOONCAKE_DISTRIBUTED_BUCKET_SIZE", text), null).get(BUCKET_SIZE));
            assertEquals(bytes, load(Map.of(), Map.of(), yaml("sizes.yaml", "bucket_size: " + text + "\n")).get(BUCKET_SIZE));
        }
    }

    @Nested
    class Invalid_values {

        @ParameterizedTest
        @ValueSource(strings = {"3000", "2048", "0", "12KiB", "-4096", "abc"})
        void a_bad_page_size_names_key_value_source_and_what_is_allowed(String value) {
            ConfigException e = assertThrows(ConfigException.class,
                    () -> load(Map.of(), Map.of("MOONCAKE_DISTRIBUTED_PAGE_SIZE", value), null));
            assertMessage(e, "page_size", "'" + value + "'", "environment MOONCAKE_DISTRIBUTED_PAGE_SIZE", "power of two",
                    "at least 4KiB");
        }

        @ParameterizedTest
        @ValueSource(strings = {"0", "65537", "abc", "-1", "2.5", ""})
        void a_bad_bucket_count_names_key_value_source_and_what_is_allowed(String value) {
            ConfigException e = assertThrows(ConfigException.class, () -> load(Map.of(BUCKET_COUNT, value), Map.of(), null));
            assertMessage(e, "bucket_count", "'" + value + "'", "flag --bucket-count", "a whole number from 1 to 65536");
        }

        @Test
        void a_decimal_unit_is_refused_as_ambiguous() {
            ConfigException e = assertThrows(ConfigException.class,
                    () -> load(Map.of(), Map.of("MOONCAKE_DISTRIBUTED_BUCKET_SIZE", "10GB"), null));
            assertMessage(e, "bucket_size", "'10GB'", "environment MOONCAKE_DISTRIBUTED_BUCKET_SIZE", "ambiguous", "GiB");
        }

        @Test
        void a_bad_boolean_or_fs_type_lists_the_allowed_words() {
            ConfigException mode = assertThrows(ConfigException.class, () -> load(Map.of(PAGE_MODE, "maybe"), Map.of(), null));
            assertMessage(mode, "page_mode", "'maybe'", "flag --page-mode", "true or false");
            ConfigException fs = assertThrows(ConfigException.class,
                    () -> load(Map.of(), Map.of("MOONCAKE_DISTRIBUTED_FS_TYPE", "ext4"), null));
            assertMessage(fs, "fs_type", "'ext4'", "environment MOONCAKE_DISTRIBUTED_FS_TYPE", "posix or hf3fs");
        }

        @Test
        void a_bad_value_in_a_lower_precedence_source_is_not_looked_at() {
            Map<String, String> env = new HashMap<>();
            env.put("MOONCAKE_DISTRIBUTED_PAGE_SIZE", "3000");
            EffectiveConfig config = load(Map.of(PAGE_SIZE, "4KiB"), env, null);
            assertEquals(4096L, config.get(PAGE_SIZE));
        }

        @Test
        void values_are_trimmed_before_parsing() {
            EffectiveConfig config = load(Map.of(PAGE_SIZE, " 16KiB "), Map.of("MOONCAKE_DISTRIBUTED_BUCKET_COUNT", " 12 "), null);
            assertEquals(16384L, config.get(PAGE_SIZE));
            assertEquals(12, config.get(BUCKET_COUNT));
        }
    }
}
