package io.mcctl.storage.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.config.ConfigException;
import io.mcctl.storage.config.ConfigLoader;
import io.mcctl.storage.config.EffectiveConfig;
import io.mcctl.storage.config.StorageSettings;
import io.mcctl.storage.io.usrbio.StandinLibrary;
import io.mcctl.storage.io.usrbio.UsrbioUnavailableException;
import io.mcctl.storage.io.usrbio.UsrbioUnavailableException.Missing;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class BucketIoSelectorTest {

    @TempDir
    Path dir;

    Path plain;
    Path marked;
    String standin;

    @BeforeEach
    void setUp() throws IOException {
        plain = Files.createDirectories(dir.resolve("plain")).toRealPath();
        marked = StandinLibrary.markMount(dir.resolve("3fs")).resolve("kv");
        Files.createDirectories(marked);
        standin = StandinLibrary.path().toString();
    }

    static void assertOneLine(String message) {
        assertFalse(message.contains("\n"), message);
    }

    @Test
    void auto_picks_posix_on_a_plain_directory_with_fs_type_posix() throws IOException {
        BucketIoSelector.Choice choice = BucketIoSelector.choose(config(Map.of("MOONCAKE_DISTRIBUTED_ROOT_DIR", plain.toString())));
        assertEquals(IoMode.POSIX, choice.mode());
        assertEquals("posix: io is auto and fs_type is posix; USRBIO is tried only with fs_type hf3fs", choice.reason());
        assertNull(choice.library());
    }

    @Test
    void auto_picks_usrbio_on_a_3fs_root_with_fs_type_hf3fs_and_the_library() throws IOException {
        BucketIoSelector.Choice choice = BucketIoSelector.choose(IoMode.AUTO, "default", "hf3fs", marked, standin);
        assertEquals(IoMode.USRBIO, choice.mode());
        assertEquals(marked.getParent(), choice.mountPoint());
        assertEquals("usrbio: root " + marked + " is on 3FS mount " + marked.getParent() + ", library " + standin, choice.reason());
        Path bucket = Files.write(marked.resolve("bucket-0"), new byte[4096]);
        try (BucketIo io = choice.open(true, BucketIoParityTest.SMALL)) {
            assertEquals("usrbio", io.name());
            io.write(bucket, 10, ByteBuffer.wrap(new byte[] {4, 2}));
            ByteBuffer back = ByteBuffer.allocate(2);
            assertEquals(2, io.read(bucket, 10, back));
            assertEquals(4, back.get(0));
        }
    }

    @Test
    void a_root_not_made_yet_is_on_the_mount_of_its_nearest_existing_parent() throws IOException {
        Path fresh = marked.resolve("not-yet").resolve("root");
        BucketIoSelector.Choice choice = new BucketIoSelector.Wanted(IoMode.USRBIO, "flag --io", standin).choose("hf3fs", fresh);
        assertEquals(IoMode.USRBIO, choice.mode());
        assertEquals(marked.getParent(), choice.mountPoint());
        assertFalse(Files.exists(fresh), "choosing makes nothing");
    }

    @Test
    void auto_falls_back_to_posix_off_3fs_or_without_the_library_and_says_why() throws IOException {
        BucketIoSelector.Choice offMount = BucketIoSelector.choose(IoMode.AUTO, "default", "hf3fs", plain, standin);
        assertEquals(IoMode.POSIX, offMount.mode());
        assertTrue(offMount.reason().startsWith("posix: io is auto but root " + plain + " is not on a 3FS mount"), offMount.reason());
        assertOneLine(offMount.reason());

        BucketIoSelector.Choice noLibrary = BucketIoSelector.choose(IoMode.AUTO, "default", "hf3fs", marked, "hf3fs_api_shared_absent");
        assertEquals(IoMode.POSIX, noLibrary.mode());
        assertEquals("posix: io is auto but USRBIO library libhf3fs_api_shared_absent.so is not on the library path (LD_LIBRARY_PATH, "
                + "jna.library.path or the system's): install the 3FS client library or set usrbio_library to its path", noLibrary.reason());
    }

    @Test
    void usrbio_without_the_library_fails_in_one_line_naming_it() throws IOException {
        String absent = dir.resolve("lib/libhf3fs_api_shared.so").toString();
        UsrbioUnavailableException e = assertThrows(UsrbioUnavailableException.class,
                () -> BucketIoSelector.choose(IoMode.USRBIO, "flag --io", "hf3fs", marked, absent));
        assertEquals(Missing.LIBRARY, e.missing());
        assertEquals("io is usrbio (flag --io) but USRBIO library " + absent + " cannot be loaded: no such file", e.getMessage());

        UsrbioUnavailableException byName = assertThrows(UsrbioUnavailableException.class,
                () -> BucketIoSelector.choose(IoMode.USRBIO, "flag --io", "hf3fs", marked, "hf3fs_api_shared_absent"));
        assertEquals(Missing.LIBRARY, byName.missing());
        assertTrue(byName.getMessage().contains("libhf3fs_api_shared_absent.so is not on the library path"), byName.getMessage());
        assertOneLine(byName.getMessage());
    }

    @Test
    void usrbio_with_a_file_that_is_no_library_fails_in_one_line_with_the_loaders_reason() throws IOException {
        Path notElf = Files.writeString(dir.resolve("libhf3fs_api_shared.so"), "not a library");
        UsrbioUnavailableException e = assertThrows(UsrbioUnavailableException.class,
                () -> BucketIoSelector.choose(IoMode.USRBIO, "flag --io", "hf3fs", marked, notElf.toString()));
        assertEquals(Missing.LIBRARY, e.missing());
        assertTrue(e.getMessage().startsWith("io is usrbio (flag --io) but USRBIO library " + notElf + " cannot be loaded: "), e.getMessage());
        assertOneLine(e.getMessage());
    }

    @Test
    void usrbio_with_a_library_that_lacks_a_function_fails_in_one_line_naming_it() throws IOException {
        String lacking = StandinLibrary.withoutWaitForIos().toString();
        UsrbioUnavailableException e = assertThrows(UsrbioUnavailableException.class,
                () -> BucketIoSelector.choose(IoMode.USRBIO, "environment MOONCAKE_DISTRIBUTED_IO", "hf3fs", marked, lacking));
        assertEquals(Missing.SYMBOL, e.missing());
        assertEquals("io is usrbio (environment MOONCAKE_DISTRIBUTED_IO) but USRBIO library " + lacking + " lacks the function "
                + "hf3fs_wait_for_ios: it is not 3FS's libhf3fs_api_shared.so or is too old", e.getMessage());
    }

    @Test
    void usrbio_off_3fs_fails_in_one_line_naming_the_root() throws IOException {
        UsrbioUnavailableException e = assertThrows(UsrbioUnavailableException.class,
                () -> BucketIoSelector.choose(IoMode.USRBIO, "file /etc/mcctl.yaml", "hf3fs", plain, standin));
        assertEquals(Missing.MOUNT, e.missing());
        assertEquals("io is usrbio (file /etc/mcctl.yaml) but root " + plain + " is not on a 3FS mount (per " + standin
                + ": no 3FS mount with a 3fs-virt directory holds it)", e.getMessage());
        UsrbioUnavailableException missingRoot = assertThrows(UsrbioUnavailableException.class,
                () -> BucketIoSelector.choose(IoMode.USRBIO, "flag --io", "hf3fs", dir.resolve("nowhere"), standin));
        assertTrue(missingRoot.getMessage().contains("is not on a 3FS mount (it does not exist yet, and per "), missingRoot.getMessage());
    }

    @Test
    void posix_is_posix_even_on_3fs() throws IOException {
        BucketIoSelector.Choice choice = BucketIoSelector.choose(config(Map.of("MOONCAKE_DISTRIBUTED_IO", "POSIX",
                "MOONCAKE_DISTRIBUTED_FS_TYPE", "hf3fs", "MOONCAKE_DISTRIBUTED_ROOT_DIR", marked.toString(),
                "MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY", standin)));
        assertEquals(IoMode.POSIX, choice.mode());
        assertEquals("posix: io is posix (environment MOONCAKE_DISTRIBUTED_IO)", choice.reason());
        try (BucketIo io = choice.open(false)) {
            assertEquals("posix", io.name());
        }
    }

    @Test
    void the_settings_refuse_an_unknown_io_and_an_empty_library_in_one_line() throws IOException {
        ConfigException io = assertThrows(ConfigException.class, () -> config(Map.of("MOONCAKE_DISTRIBUTED_IO", "fast")));
        assertEquals("invalid io 'fast' from environment MOONCAKE_DISTRIBUTED_IO: allowed is auto, posix or usrbio", io.getMessage());
        ConfigException library = assertThrows(ConfigException.class,
                () -> ConfigLoader.load(StorageSettings.ALL, Map.of(StorageSettings.USRBIO_LIBRARY, " "), Map.of(), null));
        assertTrue(library.getMessage().startsWith("invalid usrbio_library ' ' from flag --usrbio-library (empty): allowed is"),
                library.getMessage());
        EffectiveConfig defaults = config(Map.of());
        assertEquals(IoMode.AUTO, defaults.get(StorageSettings.IO));
        assertEquals("hf3fs_api_shared", defaults.get(StorageSettings.USRBIO_LIBRARY));
    }

    private static EffectiveConfig config(Map<String, String> env) {
        return ConfigLoader.load(StorageSettings.ALL, Map.of(), env, null);
    }
}
