package io.mcctl.storage.config;

import static io.mcctl.storage.config.StorageSettings.ALL;
import static io.mcctl.storage.config.StorageSettings.BUCKET_SIZE;
import static io.mcctl.storage.config.StorageSettings.PAGE_SIZE;
import static io.mcctl.storage.config.StorageSettings.ROOT_DIR;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class StorageSettingsTest {

    @TempDir
    Path dir;

    @Test
    void the_layout_is_built_from_the_effective_settings() {
        EffectiveConfig config = ConfigLoader.load(ALL, Map.of(ROOT_DIR, dir.toString(), PAGE_SIZE, "4KiB"),
                Map.of("MOONCAKE_DISTRIBUTED_BUCKET_COUNT", "8", "MOONCAKE_DISTRIBUTED_BUCKET_SIZE", "1MiB"), null);
        BucketLayout layout = StorageSettings.layout(config);
        assertEquals(dir.toAbsolutePath().normalize(), layout.root());
        assertEquals(8, layout.bucketCount());
        assertEquals(4096, layout.pageSize());
        assertEquals(1 << 20, layout.bucketSize());
    }

    @Test
    void the_default_layout_is_256_buckets_of_4GiB_in_64KiB_pages_under_mooncake_data() {
        BucketLayout layout = StorageSettings.layout(ConfigLoader.load(ALL, Map.of(), Map.of(), null));
        assertEquals(256, layout.bucketCount());
        assertEquals(65536, layout.pageSize());
        assertEquals(4L << 30, layout.bucketSize());
        assertEquals(Path.of("mooncake-data").toAbsolutePath(), layout.root());
    }

    @Test
    void a_bucket_size_not_a_multiple_of_the_page_size_names_both_and_their_sources() {
        EffectiveConfig config = ConfigLoader.load(ALL, Map.of(),
                Map.of("MOONCAKE_DISTRIBUTED_BUCKET_SIZE", "100KiB"), null);
        ConfigException e = assertThrows(ConfigException.class, () -> StorageSettings.layout(config));
        String message = e.getMessage();
        assertFalse(message.contains("\n"), message);
        assertTrue(message.contains("bucket_size '100KiB'"), message);
        assertTrue(message.contains("environment MOONCAKE_DISTRIBUTED_BUCKET_SIZE"), message);
        assertTrue(message.contains("multiple of page_size 64KiB"), message);
        assertTrue(message.contains("(from default)"), message);
    }

    @Test
    void a_bucket_size_smaller_than_the_page_size_from_a_flag_is_refused_naming_the_flag() {
        EffectiveConfig config = ConfigLoader.load(ALL, Map.of(PAGE_SIZE, "1MiB", BUCKET_SIZE, "512KiB"), Map.of(), null);
        ConfigException e = assertThrows(ConfigException.class, () -> StorageSettings.layout(config));
        assertTrue(e.getMessage().contains("'512KiB' from flag --bucket-size"), e.getMessage());
        assertTrue(e.getMessage().contains("page_size 1MiB (from flag --page-size)"), e.getMessage());
    }

    @Test
    void a_bucket_of_more_than_max_pages_is_refused() {
        EffectiveConfig config = ConfigLoader.load(ALL, Map.of(PAGE_SIZE, "4KiB", BUCKET_SIZE, "8TiB"), Map.of(), null);
        ConfigException e = assertThrows(ConfigException.class, () -> StorageSettings.layout(config));
        assertTrue(e.getMessage().contains("'8TiB'") && e.getMessage().contains("at most 1073741824 pages"), e.getMessage());
        ConfigLoader.load(ALL, Map.of(PAGE_SIZE, "4KiB", BUCKET_SIZE, "4TiB"), Map.of(), null);
        assertEquals(1L << 30, StorageSettings.layout(
                ConfigLoader.load(ALL, Map.of(PAGE_SIZE, "4KiB", BUCKET_SIZE, "4TiB"), Map.of(), null)).pagesPerBucket());
    }

    @Test
    void every_setting_has_its_own_key_environment_name_and_flag() {
        Set<String> names = new HashSet<>();
        for (Setting<?> s : ALL) {
            assertTrue(names.add(s.key()), s.key());
            assertTrue(names.add(s.envName()), s.envName());
            assertTrue(names.add(s.flag()), s.flag());
            assertTrue(s.envName().startsWith("MOONCAKE_DISTRIBUTED_"), s.envName());
            assertTrue(s.flag().startsWith("--"), s.flag());
            assertFalse(s.allowed().isBlank());
            assertFalse(s.description().isBlank());
        }
    }
}
