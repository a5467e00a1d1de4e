package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketFiles;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(120)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class MountValidateCommandTest {

    @TempDir
    Path dir;

    private static BucketLayout small(Path root) {
        return new BucketLayout(root, 4, 4096, 1 << 20);
    }

    /** {@code mount validate} with the small layout's settings at {@code root}, then {@code extra}. */
    private static CliRun validate(Path root, String... extra) {
        List<String> args = new ArrayList<>(List.of("mount", "validate", "--root", root.toString(), "--bucket-count", "4",
                "--page-size", "4KiB", "--bucket-size", "1MiB", "--timeout", "20s"));
        args.addAll(List.of(extra));
        return CliRun.run(args.toArray(String[]::new));
    }

    private static JsonNode json(CliRun run) throws Exception {
        return new ObjectMapper().readTree(run.out());
    }

    private static JsonNode check(JsonNode report, String name) {
        for (JsonNode check : report.get("checks")) {
            if (check.get("name").asText().equals(name)) {
                return check;
            }
        }
        throw new AssertionError("no check " + name + " in " + report);
    }

    private static String line(CliRun run, String check) {
        return run.out().lines().filter(l -> l.startsWith(check + " ")).findFirst()
                .orElseThrow(() -> new AssertionError("no " + check + " row in\n" + run.out()));
    }

    @Test
    void the_io_check_says_which_bucket_file_io_is_in_force_and_why() throws Exception {
        Path mount = dir.resolve("mnt");
        Path root = mount.resolve("root");
        BucketFiles.initialise(small(root));
        assertTrue(line(validate(root).expectOk(), "io").contains("PASS    posix: io is auto and fs_type is posix"), validate(root).out());

        Standin.markMount(mount);
        CliRun usrbio = validate(root, "--io", "usrbio", "--usrbio-library", Standin.library().toString(), "-o", "json").expectOk();
        JsonNode io = check(json(usrbio), "io");
        assertEquals("PASS", io.get("status").asText());
        assertEquals("usrbio: root " + root + " is on 3FS mount " + mount + ", library " + Standin.library() + "; a ring was made",
                io.get("detail").asText());
        assertEquals("usrbio", json(usrbio).get("summary").get("io").asText());

        CliRun refused = validate(root, "--io", "usrbio", "--usrbio-library", Standin.library("libhf3fs_without_wait.so").toString())
                .expectExit(ExitCodes.FAILED);
        assertTrue(line(refused, "io").contains("FAIL") && line(refused, "io").contains("lacks the function hf3fs_wait_for_ios"),
                refused.out());

        CliRun fallback = validate(root, "--fs-type", "hf3fs", "--usrbio-library", "hf3fs_api_shared_absent");
        assertTrue(line(fallback, "io").contains("WARN    posix: io is auto but USRBIO library libhf3fs_api_shared_absent.so is not on "
                + "the library path"), fallback.out());
    }

    @Test
    void a_laid_out_root_passes_with_a_table_and_a_summary_and_leaves_no_probe_file() throws Exception {
        Path root = dir.resolve("root");
        BucketFiles.initialise(small(root));
        CliRun run = validate(root).expectOk();
        assertTrue(run.out().startsWith("CHECK"), run.out());
        assertFalse(run.out().contains("|"), run.out());
        assertTrue(line(run, "write-probe").contains("PASS"), run.out());
        assertTrue(line(run, "layout").contains("PASS"), run.out());
        String summary = run.out().lines().reduce((a, b) -> b).orElseThrow();
        assertTrue(summary.contains("0 failed") && summary.endsWith("fit to join"), summary);
        try (Stream<Path> files = Files.list(root)) {
            assertTrue(files.noneMatch(p -> p.getFileName().toString().startsWith(".mcctl-probe-")));
        }
    }

    @Test
    void json_output_has_the_checks_with_measured_fields_and_a_summary() throws Exception {
        Path root = dir.resolve("root");
        BucketFiles.initialise(small(root));
        JsonNode report = json(validate(root, "-o", "json").expectOk());
        assertEquals(10, report.get("checks").size());
        for (JsonNode check : report.get("checks")) {
            assertTrue(check.has("name") && check.has("status") && check.has("detail"), check.toString());
        }
        JsonNode probe = check(report, "write-probe");
        assertEquals("PASS", probe.get("status").asText());
        assertEquals(4 << 20, probe.get("bytes").asInt());
        assertTrue(probe.has("write_ms") && probe.has("read_ms") && probe.has("write_mb_s") && probe.has("read_mb_s"), probe.toString());
        assertTrue(check(report, "capacity").get("total_bytes").asLong() > 0);
        assertTrue(check(report, "stat").has("latency_ms"));
        JsonNode summary = report.get("summary");
        assertEquals(0, summary.get("fail").asInt());
        assertTrue(summary.get("fit").asBoolean());
        assertEquals(root.toString(), summary.get("root").asText());
    }

    @Test
    void a_short_bucket_file_fails_naming_it() throws Exception {
        Path root = dir.resolve("root");
        BucketFiles.initialise(small(root));
        try (RandomAccessFile file = new RandomAccessFile(root.resolve("bucket_03.data").toFile(), "rw")) {
            file.setLength(8192);
        }
        CliRun run = validate(root).expectExit(ExitCodes.FAILED);
        assertTrue(line(run, "bucket-files").contains("FAIL"), run.out());
        assertTrue(line(run, "bucket-files").contains("bucket_03.data is 8192 bytes"), run.out());
        assertTrue(run.out().lines().reduce((a, b) -> b).orElseThrow().endsWith("not fit to join"), run.out());
    }

    @Test
    void a_missing_bucket_file_fails_naming_it() throws Exception {
        Path root = dir.resolve("root");
        BucketFiles.initialise(small(root));
        Files.delete(root.resolve("bucket_01.data"));
        CliRun run = validate(root).expectExit(ExitCodes.FAILED);
        assertTrue(line(run, "bucket-files").contains("1 of 4 missing: bucket_01.data"), run.out());
    }

    @Test
    void settings_that_differ_from_the_layout_file_fail_naming_both_values() throws Exception {
        Path root = dir.resolve("root");
        BucketFiles.initialise(small(root));
        CliRun run = CliRun.run("mount", "validate", "--root", root.toString(), "--bucket-count", "8", "--page-size", "4KiB",
                "--bucket-size", "1MiB", "-o", "json").expectExit(ExitCodes.FAILED);
        JsonNode layout = check(json(run), "layout");
        assertEquals("FAIL", layout.get("status").asText());
        assertTrue(layout.get("detail").asText().contains("bucket_count is 8 here but 4 in the layout"), layout.toString());
    }

    @Test
    void a_healthy_root_checked_with_only_root_is_checked_against_its_layout_record() throws Exception {
        Path root = dir.resolve("root");
        BucketFiles.initialise(small(root));
        CliRun run = CliRun.run("mount", "validate", "--root", root.toString(), "--timeout", "20s").expectOk();
        assertTrue(line(run, "layout").contains("PASS"), run.out());
        assertTrue(line(run, "bucket-files").contains("PASS"), run.out());
        assertTrue(line(run, "capacity").contains("4 x 1 MiB"), run.out());
        assertTrue(run.err().isEmpty(), run.err());
    }

    @Test
    void a_flag_that_disagrees_with_the_layout_record_overrides_it_and_says_so() throws Exception {
        Path root = dir.resolve("root");
        BucketFiles.initialise(small(root));
        CliRun run = CliRun.run("mount", "validate", "--root", root.toString(), "--bucket-count", "8", "--timeout", "20s", "-o", "json")
                .expectExit(ExitCodes.FAILED);
        assertEquals("mcctl: note: bucket_count 8 (from flag --bucket-count) overrides 4 in the layout record " + root.resolve("mooncake.layout.json"),
                run.err().strip());
        JsonNode report = json(run);
        assertTrue(check(report, "layout").get("detail").asText().contains("bucket_count is 8 here but 4 in the layout"), report.toString());
        assertTrue(check(report, "bucket-files").get("detail").asText().contains("4 of 8 missing"), report.toString());
        assertEquals(1, report.get("summary").get("layout_overrides").size());
    }

    @Test
    void a_read_only_root_fails_the_write_probe() throws Exception {
        Path root = dir.resolve("root");
        BucketFiles.initialise(small(root));
        Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            Assumptions.assumeFalse(Files.isWritable(root), "running as root: a 555 directory stays writable, so the probe cannot be refused");
            CliRun run = validate(root).expectExit(ExitCodes.FAILED);
            assertTrue(line(run, "write-probe").contains("FAIL"), run.out());
            assertTrue(line(run, "write-probe").contains("permission denied"), run.out());
        } finally {
            Files.setPosixFilePermissions(root, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    @Test
    void a_root_that_does_not_exist_fails_the_first_check_and_skips_the_rest() throws Exception {
        JsonNode report = json(validate(dir.resolve("absent"), "-o", "json").expectExit(ExitCodes.FAILED));
        JsonNode checks = report.get("checks");
        assertEquals("root", checks.get(0).get("name").asText());
        assertEquals("FAIL", checks.get(0).get("status").asText());
        for (int i = 1; i < checks.size(); i++) {
            assertEquals("SKIP", checks.get(i).get("status").asText(), checks.get(i).toString());
        }
        assertEquals(9, report.get("summary").get("skip").asInt());
    }

    @Test
    void bad_input_is_one_error_line_and_exit_two() {
        Path root = dir.resolve("root");
        for (String[] args : List.of(new String[] {"--timeout", "soon"}, new String[] {"--timeout", "0s"},
                new String[] {"--master", "no-port"})) {
            List<String> line = new ArrayList<>(List.of("mount", "validate", "--root", root.toString()));
            line.addAll(List.of(args));
            CliRun run = CliRun.run(line.toArray(String[]::new)).expectExit(ExitCodes.USAGE);
            assertEquals(1, run.err().lines().count(), run.err());
            assertTrue(run.out().isEmpty(), run.out());
        }
        CliRun run = CliRun.run("mount", "validate", "--root", root.toString(), "--page-size", "3000").expectExit(ExitCodes.USAGE);
        assertEquals(1, run.err().lines().count(), run.err());
    }

    @Nested
    class With_a_master {

        @Test
        void a_root_of_another_cluster_fails_naming_both_cluster_ids() throws Exception {
            BucketLayout masterLayout = small(dir.resolve("master-root"));
            try (MasterServer server = MasterServer.start(new MasterServer.Options(masterLayout, "posix", "127.0.0.1", 0, 0,
                    Duration.ofSeconds(60), Duration.ofSeconds(5)))) {
                String masterCluster = LayoutFile.read(masterLayout.layoutFile()).clusterId();
                Path nodeRoot = dir.resolve("node-root");
                String nodeCluster = BucketFiles.initialise(small(nodeRoot)).layout().clusterId();
                CliRun run = validate(nodeRoot, "--master", "127.0.0.1:" + server.port(), "-o", "json").expectExit(ExitCodes.FAILED);
                JsonNode layout = check(json(run), "layout");
                assertEquals("FAIL", layout.get("status").asText());
                String detail = layout.get("detail").asText();
                assertTrue(detail.contains("this node mounted another cluster"), detail);
                assertTrue(detail.contains(nodeCluster) && detail.contains(masterCluster), detail);
                assertEquals(masterCluster, layout.get("master_cluster_id").asText());
                assertEquals(nodeCluster, layout.get("cluster_id").asText());
            }
        }

        @Test
        void the_masters_own_root_passes() throws Exception {
            BucketLayout masterLayout = small(dir.resolve("master-root"));
            try (MasterServer server = MasterServer.start(new MasterServer.Options(masterLayout, "posix", "127.0.0.1", 0, 0,
                    Duration.ofSeconds(60), Duration.ofSeconds(5)))) {
                CliRun run = validate(masterLayout.root(), "--master", "127.0.0.1:" + server.port()).expectOk();
                assertTrue(line(run, "layout").contains("PASS"), run.out());
                assertTrue(line(run, "layout").contains("and the master"), run.out());
                assertTrue(line(run, "master-buckets").contains("PASS"), run.out());
            }
        }

        @Test
        void a_bucket_file_the_master_found_missing_is_named_by_the_local_check_and_the_masters() throws Exception {
            BucketLayout masterLayout = small(dir.resolve("master-root"));
            try (MasterServer server = MasterServer.start(new MasterServer.Options(masterLayout, "posix", "127.0.0.1", 0, 0,
                    Duration.ofSeconds(60), Duration.ofSeconds(5)))) {
                Files.delete(masterLayout.bucketPath(3));
                server.bucketFiles().checkAll();
                CliRun run = validate(masterLayout.root(), "--master", "127.0.0.1:" + server.port(), "-o", "json")
                        .expectExit(ExitCodes.FAILED);
                JsonNode report = json(run);
                assertTrue(check(report, "bucket-files").get("detail").asText().contains("1 of 4 missing: bucket_03.data"), report.toString());
                JsonNode seen = check(report, "master-buckets");
                assertEquals("WARN", seen.get("status").asText());
                assertTrue(seen.get("detail").asText().contains("bucket file 3 (bucket_03.data) missing"), seen.toString());
                assertEquals("3", seen.get("unusable_buckets").asText());
            }
        }
    }
}
