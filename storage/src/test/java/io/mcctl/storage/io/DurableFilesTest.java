package io.mcctl.storage.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class DurableFilesTest {

    @TempDir
    Path dir;

    private List<String> names() throws IOException {
        try (Stream<Path> list = Files.list(dir)) {
            return list.map(p -> p.getFileName().toString()).sorted().collect(Collectors.toList());
        }
    }

    @Test
    void write_atomically_creates_a_file_with_the_content() throws IOException {
        Path target = dir.resolve("state.json");
        DurableFiles.writeAtomically(target, "{\"a\":1}".getBytes(StandardCharsets.UTF_8));
        assertEquals("{\"a\":1}", Files.readString(target));
        assertEquals(List.of("state.json"), names(), "no temp file is left behind");
    }

    @Test
    void write_atomically_replaces_the_whole_content_of_an_existing_file() throws IOException {
        Path target = dir.resolve("state.json");
        Files.writeString(target, "an old content that is longer than the new one");
        byte[] content = {1, 2, 3, 0, (byte) 0xff};
        DurableFiles.writeAtomically(target, content);
        assertArrayEquals(content, Files.readAllBytes(target));
        DurableFiles.writeAtomically(target, new byte[0]);
        assertEquals(0, Files.size(target));
        assertEquals(List.of("state.json"), names());
    }

    @Test
    void a_target_in_a_missing_directory_fails_and_creates_nothing() throws IOException {
        Path target = dir.resolve("absent").resolve("state.json");
        assertThrows(IOException.class, () -> DurableFiles.writeAtomically(target, new byte[] {1}));
        assertEquals(List.of(), names());
    }

    @Test
    void fsync_of_a_directory_works_and_of_a_missing_one_fails() throws IOException {
        DurableFiles.fsyncDirectory(dir);
        assertThrows(IOException.class, () -> DurableFiles.fsyncDirectory(dir.resolve("absent")));
    }
}
