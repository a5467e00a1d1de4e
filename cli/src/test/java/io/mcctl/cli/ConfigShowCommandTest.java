package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class ConfigShowCommandTest {

    @TempDir
    Path dir;

    private static JsonNode setting(JsonNode report, String key) {
        for (JsonNode entry : report.get("settings")) {
            if (entry.get("key").asText().equals(key)) {
                return entry;
            }
        }
        throw new AssertionError("no setting " + key + " in " + report);
    }

    private static JsonNode json(CliRun run) throws Exception {
        return new ObjectMapper().readTree(run.out());
    }

    @Test
    void the_bucket_file_io_in_force_is_shown_with_its_reason_and_a_refused_usrbio_is_the_error_a_start_gives() throws Exception {
        CliRun defaults = CliRun.run("config", "show").expectOk();
        assertEquals("io in force: posix: io is auto and fs_type is posix; USRBIO is tried only with fs_type hf3fs",
                defaults.out().lines().reduce((a, b) -> b).orElseThrow());
        assertEquals("posix", json(CliRun.run("config", "show", "-o", "json").expectOk()).get("io").get("mode").asText());

        Path mount = Standin.markMount(dir.resolve("mnt"));
        Path root = mount.resolve("root");
        JsonNode usrbio = json(CliRun.run("config", "show", "--root", root.toString(), "--fs-type", "hf3fs", "--usrbio-library",
                Standin.library().toString(), "-o", "json").expectOk());
        assertEquals("usrbio", usrbio.get("io").get("mode").asText());
        assertEquals("usrbio: root " + root + " is on 3FS mount " + mount + ", library " + Standin.library(), usrbio.get("io").get("reason").asText());

        Path absent = dir.resolve("lib").resolve("libhf3fs_api_shared.so");
        CliRun refused = CliRun.run("config", "show", "--io", "usrbio", "--usrbio-library", absent.toString()).expectExit(ExitCodes.USAGE);
        assertEquals("mcctl: error: io is usrbio (flag --io) but USRBIO library " + absent + " cannot be loaded: no such file",
                refused.err().strip());
    }

    @Test
    void defaults_are_the_design_values_with_a_local_root() throws Exception {
        JsonNode report = json(CliRun.run("config", "show", "-o", "json").expectOk());
        assertEquals(65536, setting(report, "page_size").get("value").asLong());
        assertEquals(4294967296L, setting(report, "bucket_size").get("value").asLong());
        assertEquals(256, setting(report, "bucket_count").get("value").asInt());
        assertTrue(setting(report, "page_mode").get("value").asBoolean());
        JsonNode root = setting(report, "root_dir");
        assertEquals("default", root.get("source").asText());
        assertTrue(Path.of(root.get("value").asText()).isAbsolute());
        assertTrue(root.get("value").asText().endsWith("mooncake-data"));
        assertEquals("MOONCAKE_DISTRIBUTED_PAGE_SIZE", setting(report, "page_size").get("env").asText());
    }

    @Test
    void flag_beats_environment_beats_file_beats_default() throws Exception {
        Path file = dir.resolve("mcctl.yaml");
        Files.writeString(file, "page_size: 16KiB\nbucket_size: 1GiB\nbucket_count: 16\nfs_type: hf3fs\n");
        Map<String, String> env = new HashMap<>();
        env.put("MCCTL_CONFIG", file.toString());
        env.put("MOONCAKE_DISTRIBUTED_PAGE_SIZE", "32KiB");
        env.put("MOONCAKE_DISTRIBUTED_BUCKET_SIZE", "2GiB");
        JsonNode report = json(CliRun.run(env, "config", "show", "-o", "json", "--bucket-size", "8GiB").expectOk());
        assertEquals(8L << 30, setting(report, "bucket_size").get("value").asLong());
        assertEquals("flag", setting(report, "bucket_size").get("source").asText());
        assertEquals(32768, setting(report, "page_size").get("value").asLong());
        assertEquals("environment", setting(report, "page_size").get("source").asText());
        assertEquals(16, setting(report, "bucket_count").get("value").asInt());
        assertEquals("file", setting(report, "bucket_count").get("source").asText());
        assertEquals(file.toString(), setting(report, "bucket_count").get("source_detail").asText());
        assertEquals("default", setting(report, "health_check").get("source").asText());
    }

    @Test
    void text_form_shows_each_value_with_its_source() {
        CliRun run = CliRun.run(Map.of("MOONCAKE_DISTRIBUTED_BUCKET_COUNT", "64"), "config", "show").expectOk();
        String line = run.out().lines().filter(l -> l.startsWith("bucket_count")).findFirst().orElseThrow();
        assertTrue(line.contains("64"), line);
        assertTrue(line.contains("environment MOONCAKE_DISTRIBUTED_BUCKET_COUNT"), line);
    }

    @Test
    void the_allocation_grace_defaults_to_ten_seconds_and_must_be_positive() throws Exception {
        assertEquals("10s", setting(json(CliRun.run("config", "show", "-o", "json").expectOk()), "allocation_grace").get("value").asText());
        assertEquals("2s", setting(json(CliRun.run(Map.of("MCCTL_ALLOCATION_GRACE", "2s"), "config", "show", "-o", "json").expectOk()),
                "allocation_grace").get("value").asText());
        for (String bad : new String[] {"0s", "-1s", "soon"}) {
            CliRun run = CliRun.run("config", "show", "--allocation-grace", bad).expectExit(ExitCodes.USAGE);
            assertEquals(1, run.err().lines().count(), run.err());
            assertTrue(run.err().contains("allocation_grace") && run.err().contains("positive duration"), run.err());
        }
    }

    @Test
    void an_invalid_value_names_setting_value_source_and_what_is_allowed() {
        CliRun run = CliRun.run(Map.of("MOONCAKE_DISTRIBUTED_BUCKET_COUNT", "70000"), "config", "show")
                .expectExit(ExitCodes.USAGE);
        assertEquals(1, run.err().lines().count(), run.err());
        String line = run.err().strip();
        assertTrue(line.contains("bucket_count"), line);
        assertTrue(line.contains("70000"), line);
        assertTrue(line.contains("environment MOONCAKE_DISTRIBUTED_BUCKET_COUNT"), line);
        assertTrue(line.contains("1 to 65536"), line);
        assertEquals("", run.out());
    }

    @Test
    void bucket_size_must_be_a_multiple_of_page_size() {
        CliRun run = CliRun.run("config", "show", "--page-size", "64KiB", "--bucket-size", "100000").expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("bucket_size"), run.err());
        assertTrue(run.err().contains("multiple of page_size 64KiB"), run.err());
        assertTrue(run.err().contains("flag --bucket-size"), run.err());
    }

    @Test
    void an_unknown_key_in_the_file_is_refused() throws Exception {
        Path file = dir.resolve("bad.yaml");
        Files.writeString(file, "pagesize: 64KiB\n");
        CliRun run = CliRun.run("config", "show", "--config", file.toString()).expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("unknown setting pagesize"), run.err());
        assertTrue(run.err().contains("page_size"), run.err());
    }

    @Test
    void a_missing_config_file_is_refused() {
        CliRun run = CliRun.run("config", "show", "--config", dir.resolve("nope.yaml").toString()).expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("does not exist"), run.err());
    }
}
