package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import io.mcctl.cli.bench.MasterProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** What {@code mcctl master start}, run as its own process, tells a first-time user about the root it uses. */
@Timeout(120)
@Tag("process")
class MasterStartProcessTest {

    @TempDir
    Path dir;

    @Test
    void a_relative_root_is_logged_as_an_absolute_path_with_what_was_laid_out_and_what_backs_it() throws Exception {
        Path root = dir.resolve("tier");
        try (McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of(), "--root", "tier", "--bucket-count", "8",
                "--bucket-size", "4MiB", "--page-size", "4KiB")) {
            String log = master.log();
            assertTrue(log.contains("root " + root + " (from flag --root 'tier', relative to the current directory " + dir + ")"), log);
            assertTrue(log.contains("layout: 8 bucket files x 4 MiB = 32 MiB under " + root + ", sparse: "), log);
            assertTrue(log.contains(" of it backed by real space so far, "), log);
            assertTrue(Files.isDirectory(root));
            assertFalse(log.contains("busy_poll"), "off by default, and then not mentioned: " + log);
        }
        try (McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of("MCCTL_BUSY_POLL", "50us"), "--root", "tier",
                "--bucket-count", "8", "--bucket-size", "4MiB", "--page-size", "4KiB")) {
            String log = master.log();
            assertTrue(log.contains("busy_poll 50us (from environment MCCTL_BUSY_POLL): each transport thread polls its connections "
                    + "for 50us after its last work before it sleeps"), log);
        }
    }

    @Test
    void the_heap_is_on_transparent_huge_pages_where_the_kernel_offers_them_unless_turned_off_and_the_log_says_which() throws Exception {
        String mode = HeapPages.kernelMode();
        boolean offered = "always".equals(mode) || "madvise".equals(mode);
        try (MasterProcess master = MasterProcess.start(List.of("-Xmx256m"), Duration.ofSeconds(60), builder -> McctlProcess.prepare(
                builder.directory(dir.toFile()), Map.of()), "--root", "a", "--bucket-count", "8", "--bucket-size", "4MiB", "--page-size", "4KiB")) {
            String log = master.log();
            assertTrue(log.contains("heap: up to 256 MiB, transparent huge pages " + (offered ? "on (kernel: " + mode + ")"
                    : mode == null ? "off (this kernel has none)" : "off (kernel: " + mode + ")")), log);
        }
        // Turned off by the operator's own option, which comes after the default: where the kernel only offers them on
        // request, the heap is then on small pages.
        try (MasterProcess master = MasterProcess.start(List.of("-Xmx256m", "-XX:-UseTransparentHugePages"), Duration.ofSeconds(60),
                builder -> McctlProcess.prepare(builder.directory(dir.toFile()), Map.of()), "--root", "b", "--bucket-count", "8",
                "--bucket-size", "4MiB", "--page-size", "4KiB")) {
            String log = master.log();
            if ("madvise".equals(mode)) {
                assertTrue(log.contains("transparent huge pages off (kernel: madvise; -XX:+UseTransparentHugePages asks for them)"), log);
            } else {
                assertTrue(log.contains("heap: up to 256 MiB, transparent huge pages "), log);
            }
        }
    }

    @Test
    void a_root_that_is_a_file_is_refused_in_one_line_and_changes_nothing() throws Exception {
        Path file = Files.writeString(dir.resolve("not-a-dir"), "x");
        McctlProcess.Done start = McctlProcess.run(dir, Map.of(), "master", "start", "--root", file.toString(), "--port", "0",
                "--metrics-port", "0");
        assertEquals(ExitCodes.USAGE, start.exitCode(), start.err());
        assertEquals("mcctl: error: root " + file + " is a file, not a directory: give --root a directory (it is created when missing)",
                start.err().strip());
        assertEquals("x", Files.readString(file));

        McctlProcess.Done under = McctlProcess.run(dir, Map.of(), "master", "start", "--root", file.resolve("r").toString(), "--port", "0",
                "--metrics-port", "0");
        assertEquals(ExitCodes.USAGE, under.exitCode(), under.err());
        assertTrue(under.err().contains("cannot be created: " + file + " is a file, not a directory"), under.err());
        assertFalse(under.out().contains("serving"), under.out());
    }

    @Test
    void a_busy_poll_past_its_limit_is_refused_in_one_line_from_the_flag_and_from_the_environment_and_nothing_is_laid_out() throws Exception {
        Path root = dir.resolve("tier");
        McctlProcess.Done flag = McctlProcess.run(dir, Map.of(), "master", "start", "--root", root.toString(), "--port", "0",
                "--metrics-port", "0", "--busy-poll", "2ms");
        assertEquals(ExitCodes.USAGE, flag.exitCode(), flag.err());
        assertEquals("mcctl: error: invalid busy_poll '2ms' from flag --busy-poll: allowed is a duration from 0s (off) to 1ms, e.g. 50us",
                flag.err().strip());
        McctlProcess.Done env = McctlProcess.run(dir, Map.of("MCCTL_BUSY_POLL", "50"), "master", "start", "--root", root.toString(),
                "--port", "0", "--metrics-port", "0");
        assertEquals(ExitCodes.USAGE, env.exitCode(), env.err());
        assertTrue(env.err().strip().startsWith("mcctl: error: invalid busy_poll '50' from environment MCCTL_BUSY_POLL"), env.err());
        assertEquals(1, env.err().strip().lines().count(), env.err());
        assertFalse(Files.exists(root), "nothing laid out");
    }
}
