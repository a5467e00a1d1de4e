package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The IO, fsck and restart benchmarks run end to end at small sizes and report every figure they promise. */
@Timeout(180)
class BenchCommandsTest {

    @Test
    void bench_io_times_the_same_writes_and_reads_through_both_ios_and_gives_their_ratios(@TempDir Path dir) throws Exception {
        Path mount = Standin.markMount(dir.resolve("mnt"));
        CliRun run = CliRun.run("bench", "io", "--io", "both", "--usrbio-library", Standin.library().toString(), "--root",
                mount.resolve("bench").toString(), "--total", "4MiB", "--object-sizes", "64KiB,2MiB", "--rounds", "1", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        assertEquals(2, report.get("cases").size(), run.out());
        for (JsonNode c : report.get("cases")) {
            for (String io : new String[] {"posix", "usrbio"}) {
                assertTrue(c.get(io).get("write_gib_per_s").asDouble() > 0 && c.get(io).get("read_gib_per_s").asDouble() > 0, run.out());
                assertTrue(c.get(io).has("write_cpu_s_per_gib") && c.get(io).has("read_cpu_s_per_gib"), run.out()); // 0 below the clock's tick
            }
            assertTrue(c.get("usrbio_over_posix_read").asDouble() > 0 && c.has("usrbio_over_posix_write_cpu"), run.out());
        }
        CliRun offMount = CliRun.run("bench", "io", "--io", "usrbio", "--usrbio-library", Standin.library().toString(), "--total", "4MiB")
                .expectExit(ExitCodes.USAGE);
        assertTrue(offMount.err().contains("is not on a 3FS mount"), offMount.err());
        assertEquals(ExitCodes.USAGE, CliRun.run("bench", "io", "--io", "fast").exitCode());
    }

    @Test
    void bench_io_compares_the_tier_with_a_plain_read_of_the_same_bytes() throws Exception {
        CliRun run = CliRun.run("bench", "io", "--total", "8MiB", "--rounds", "1", "--keys-per-lookup", "100", "--read-threads", "3",
                "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        assertEquals(100, report.get("keys_per_lookup").asInt());
        assertEquals(3, report.get("read_threads").asInt());
        JsonNode cases = report.get("cases");
        assertEquals(2, cases.size());
        assertEquals(65536, cases.get(0).get("object_size").asLong());
        assertEquals(128, cases.get(0).get("objects").asInt());
        assertEquals(2 << 20, cases.get(1).get("object_size").asLong());
        for (JsonNode c : cases) {
            assertTrue(c.get("posix").get("read_gib_per_s").asDouble() > 0, c::toString); // POSIX unless --io says otherwise
            assertTrue(c.get("posix").get("write_gib_per_s").asDouble() > 0, c::toString);
            assertTrue(c.get("plain_read_gib_per_s").asDouble() > 0, c::toString);
            assertTrue(c.has("fio_gib_per_s") && !c.has("usrbio"), c::toString);
        }
    }

    @Test
    void bench_fsck_times_a_live_and_an_offline_check_of_a_clean_state() throws Exception {
        CliRun run = CliRun.run("bench", "fsck", "--mappings", "1000", "--runs", "1", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        assertEquals(1000, report.get("mappings").asLong());
        assertTrue(report.get("live_fsck_millis").asDouble() > 0, run.out());
        assertTrue(report.get("offline_fsck_millis").asDouble() > 0, run.out());
        assertTrue(report.get("lookup_p99_ratio").asDouble() > 0, run.out());
    }

    @Test
    @Tag("process")
    @Timeout(180)
    void bench_restart_runs_real_master_processes_through_a_kill_and_a_restart() throws Exception {
        CliRun run = CliRun.run("bench", "restart", "--mappings", "1000", "--wal-records", "1024", "--keys", "5120", "--rounds", "1",
                "--snapshots", "1", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        assertEquals(512, report.get("snapshot_mappings").asLong(), run.out()); // 8 callers x one batch of 64
        assertEquals(512 + 512, report.get("restart_mappings").asLong(), run.out());
        assertTrue(report.get("restart_millis_to_serving").asLong() > 0, run.out());
        assertTrue(report.get("offload_keys_per_s_wal").asLong() > 0, run.out());
        assertTrue(report.get("offload_keys_per_s_snapshot").asLong() > 0, run.out());
    }

    @Test
    void bench_io_refuses_keys_per_lookup_outside_what_the_master_takes() {
        CliRun run = CliRun.run("bench", "io", "--keys-per-lookup", "0").expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("--keys-per-lookup 0") && run.err().contains("1 to 10000"), run.err());
        CliRun threads = CliRun.run("bench", "io", "--read-threads", "17").expectExit(ExitCodes.USAGE);
        assertEquals("mcctl: error: invalid --read-threads 17: allowed is 1 to 16", threads.err().strip());
    }
}
