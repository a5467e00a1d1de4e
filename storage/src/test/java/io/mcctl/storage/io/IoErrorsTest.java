package io.mcctl.storage.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Real file errors of the system, as the JDK throws them, rendered as "operation path: reason". */
@Timeout(10)
class IoErrorsTest {

    @TempDir
    Path dir;

    @Test
    void a_missing_file_says_so_where_the_jdk_gives_only_the_path() {
        Path missing = dir.resolve("missing");
        IOException e = assertThrows(IOException.class, () -> Files.readAllBytes(missing));
        assertEquals(missing.toString(), e.getMessage(), "the JDK's message is the bare path");
        assertEquals("read " + missing + ": No such file or directory", IoErrors.describe("read", missing, e));
    }

    @Test
    void a_file_under_a_regular_file_names_the_reason_and_the_file_the_system_refused() throws Exception {
        Path file = Files.writeString(dir.resolve("state"), "a file, not a directory");
        Path wanted = file.resolve("wal-1.log");
        IOException e = assertThrows(IOException.class, () -> FileChannel.open(wanted, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE));
        assertEquals("create " + wanted + ": Not a directory", IoErrors.describe("create", wanted, e));
        Path deeper = wanted.resolve("deeper");
        IOException dirs = assertThrows(IOException.class, () -> Files.createDirectories(deeper));
        assertEquals("create directory " + deeper + ": Not a directory (" + wanted + ")", IoErrors.describe("create directory", deeper, dirs));
    }

    @Test
    void an_existing_file_and_a_denied_one_get_the_systems_words() throws Exception {
        Path there = Files.writeString(dir.resolve("there"), "x");
        IOException exists = assertThrows(IOException.class, () -> FileChannel.open(there, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE));
        assertEquals("create " + there + ": File exists", IoErrors.describe("create", there, exists));
        // EACCES, as the JDK reports it (without a reason); root is not denied here, so the exception is the JDK's own, made here.
        IOException named = IoErrors.named("create", there, new AccessDeniedException(there.toString()));
        assertEquals("create " + there + ": Permission denied", named.getMessage());
        assertEquals("write " + there + ": No space left on device", IoErrors.describe("write", there, new IOException("No space left on device")));
    }
}
