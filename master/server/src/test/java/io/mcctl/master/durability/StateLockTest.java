package io.mcctl.master.durability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class StateLockTest {

    @TempDir
    Path dir;

    @Test
    void a_lock_file_left_by_a_dead_master_does_not_block_a_start() throws Exception {
        Path stateDir = Files.createDirectories(dir.resolve("master"));
        Files.writeString(stateDir.resolve(StateLock.FILE_NAME), "pid=999999\nhost=gone\nsince=2020-01-01T00:00:00Z\naddress=127.0.0.1:1\n");
        try (StateLock lock = StateLock.acquire(stateDir)) {
            String written = Files.readString(stateDir.resolve(StateLock.FILE_NAME));
            assertTrue(written.startsWith("pid=" + ProcessHandle.current().pid() + "\n"), written);
            assertTrue(!written.contains("999999") && !written.contains("address="), "the old holder's note is replaced: " + written);
        }
        assertEquals(Optional.empty(), StateLock.probe(stateDir), "released at close; the file stays");
        assertTrue(Files.exists(stateDir.resolve(StateLock.FILE_NAME)));
    }

    @Test
    void a_live_holder_is_named_and_a_refused_acquire_changes_nothing() throws Exception {
        Path stateDir = dir.resolve("master");
        try (StateLock lock = StateLock.acquire(stateDir)) {
            lock.serving("127.0.0.1:50123");
            Path file = stateDir.resolve(StateLock.FILE_NAME);
            Files.setLastModifiedTime(file, FileTime.fromMillis(1_000_000_000_000L));
            byte[] before = Files.readAllBytes(file);

            // Another spelling of the same directory.
            StateInUseException refused = assertThrows(StateInUseException.class, () -> StateLock.acquire(dir.resolve(".").resolve("master")));
            assertTrue(refused.getMessage().matches("state " + java.util.regex.Pattern.quote(stateDir.toRealPath().toString())
                    + " is held by pid " + ProcessHandle.current().pid() + " on host \\S+ since \\d{4}-\\d\\d-\\d\\dT\\S+Z, serving 127\\.0\\.0\\.1:50123"),
                    refused.getMessage());
            assertEquals(FileTime.fromMillis(1_000_000_000_000L), Files.getLastModifiedTime(file));
            assertTrue(java.util.Arrays.equals(before, Files.readAllBytes(file)));

            StateLock.Holder probed = StateLock.probe(stateDir).orElseThrow();
            assertEquals("127.0.0.1:50123", probed.address());
            // The probe closed its descriptor of the file without dropping this process's lock.
            assertThrows(StateInUseException.class, () -> StateLock.acquire(stateDir));
        }
        try (StateLock again = StateLock.acquire(stateDir)) {
            assertEquals(String.valueOf(ProcessHandle.current().pid()), again.holder().pid());
        }
    }

    @Test
    void probing_a_directory_without_a_lock_file_creates_nothing() throws Exception {
        Path stateDir = Files.createDirectories(dir.resolve("master"));
        assertEquals(Optional.empty(), StateLock.probe(stateDir));
        assertEquals(Optional.empty(), StateLock.probe(dir.resolve("missing")));
        assertTrue(Files.notExists(stateDir.resolve(StateLock.FILE_NAME)) && Files.notExists(dir.resolve("missing")));
    }
    @Test
    void a_probe_names_another_process_that_holds_the_directory_shared_as_a_high_availability_master_does() throws Exception {
        Path stateDir = Files.createDirectories(dir.resolve("master"));
        Path file = stateDir.resolve(StateLock.FILE_NAME);
        Files.writeString(file, "pid=4242\nhost=standby-1\nsince=2026-01-01T00:00:00Z\naddress=10.0.0.2:50051\nleader_epoch=7\n");
        Files.setLastModifiedTime(file, FileTime.fromMillis(1_000_000_000_000L));
        // A real other process holding the kernel's (fcntl) lock shared, as every --ha master does for its life.
        Process holder = new ProcessBuilder("/usr/bin/python3", "-c", "import fcntl, sys\n"
                + "f = open(sys.argv[1], 'rb')\nfcntl.lockf(f, fcntl.LOCK_SH)\nprint('locked', flush=True)\nsys.stdin.read()\n", file.toString())
                .redirectErrorStream(true).start();
        try {
            String line = new java.io.BufferedReader(new java.io.InputStreamReader(holder.getInputStream())).readLine();
            assertEquals("locked", line);
            StateLock.Holder probed = StateLock.probe(stateDir).orElseThrow(() -> new AssertionError("a shared holder was not seen"));
            assertEquals("10.0.0.2:50051", probed.address());
            assertEquals("4242", probed.pid());
            assertEquals(FileTime.fromMillis(1_000_000_000_000L), Files.getLastModifiedTime(file), "the probe changed the file");
        } finally {
            holder.destroyForcibly().waitFor();
        }
        assertEquals(Optional.empty(), StateLock.probe(stateDir), "free once the holder is gone");
    }
}
