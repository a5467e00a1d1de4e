package io.mcctl.storage.perkey;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.storage.layout.KeyHasher;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class PerKeyStoreTest {

    @TempDir
    Path dir;

    private static byte[] read(PerKeyStore.Entry entry) throws IOException {
        ByteBuffer into = ByteBuffer.allocate((int) entry.size());
        try (FileChannel in = FileChannel.open(entry.file(), StandardOpenOption.READ)) {
            PerKeyStore.readChunk(in, entry, 0, into);
        }
        return into.array();
    }

    @Test
    void each_key_has_one_file_in_the_directory_of_its_hash_and_reads_back_whole() throws IOException {
        PerKeyStore store = PerKeyStore.open(dir);
        assertEquals(256, Files.list(dir).count());
        byte[] data = "hello, per-key world".getBytes();
        int crc = store.write("t", "a/b c", List.of(ByteBuffer.wrap(data)));
        Path file = store.fileOf("t", "a/b c");
        int home = KeyHasher.homeBucket("a/b c", 256);
        assertEquals(dir.resolve(String.format("%02x", home)), file.getParent());
        assertEquals("t~a%2Fb%20c", file.getFileName().toString());
        PerKeyStore.Entry entry = store.find("t", "a/b c");
        assertEquals(data.length, entry.size());
        assertEquals(crc, entry.crc32c());
        assertEquals(new String(data), new String(read(entry)));
        assertNull(store.find("other-tenant", "a/b c"), "tenants are walls");
    }

    @Test
    void a_long_key_is_named_by_a_hash_and_the_walk_still_finds_it_by_its_header() throws IOException {
        PerKeyStore store = PerKeyStore.open(dir);
        String longKey = "k".repeat(3000);
        store.write("t", longKey, List.of(ByteBuffer.wrap(new byte[] {1, 2, 3})), false);
        store.write("t", "short", List.of(ByteBuffer.wrap(new byte[] {4})), false);
        assertTrue(store.fileOf("t", longKey).getFileName().toString().matches("~[0-9a-f]{64}"));
        assertEquals(Set.of(longKey, "short"), store.list().stream().map(PerKeyStore.Entry::key).collect(Collectors.toSet()));
    }

    @Test
    void the_walk_skips_unfinished_writes_and_files_cut_short() throws IOException {
        PerKeyStore store = PerKeyStore.open(dir);
        store.write("t", "whole", List.of(ByteBuffer.wrap(new byte[100])));
        store.write("t", "cut", List.of(ByteBuffer.wrap(new byte[100])));
        Path cut = store.fileOf("t", "cut");
        try (FileChannel out = FileChannel.open(cut, StandardOpenOption.WRITE)) {
            out.truncate(Files.size(cut) - 10);
        }
        Files.write(store.fileOf("t", "whole").resolveSibling(".tmp-unfinished"), new byte[50]);
        assertEquals(List.of("whole"), store.list().stream().map(PerKeyStore.Entry::key).toList());
        assertNull(store.find("t", "cut"));
        assertTrue(store.delete("t", "whole"));
        assertNull(store.find("t", "whole"));
    }

    @Test
    void a_local_disk_that_is_a_file_is_refused() throws IOException {
        Path file = Files.writeString(dir.resolve("f"), "x");
        IOException e = assertThrows(IOException.class, () -> PerKeyStore.open(file));
        assertTrue(e.getMessage().contains("is a file, not a directory"), e.getMessage());
    }
}
