package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.cli.bench.MasterProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The master benchmark runs end to end at small sizes and reports every figure it promises. */
@Timeout(180)
@Tag("process")
class BenchMasterCommandTest {

    @Test
    void bench_master_reports_each_phase_on_both_transports_with_the_masters_cpu_the_echo_floor_and_heap_per_mapping() throws Exception {
        CliRun run = CliRun.run("bench", "master", "--threads", "2", "--seconds", "0.5", "--warmup-seconds", "0.2", "--memory-mappings", "20000",
                "--master-heap", "256MiB", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        JsonNode phases = report.get("phases");
        assertEquals(14, phases.size());
        for (int i = 0; i < phases.size(); i++) {
            JsonNode phase = phases.get(i);
            assertEquals(i % 2 == 0 ? "unary" : "stream", phase.get("transport").asText(), phase::toString);
            assertEquals(0, phase.get("failures").asLong(), phase::toString);
            assertTrue(phase.get("keys_per_second").asLong() > 0, phase::toString);
            assertTrue(phase.get("call_p99_us").asDouble() >= phase.get("call_p50_us").asDouble(), phase::toString);
            assertTrue(phase.get("server_cpu_us_per_key").asDouble() >= 0, phase::toString); // the master is a process of its own
            assertTrue(phase.get("client_cores").asDouble() > 0, phase::toString);
            // The master's CPU split by its threads, every group there (each read at 10 ms ticks a thread, so their sum and
            // the process's own figure may differ by a few ticks in a phase this short).
            JsonNode byThread = phase.get("server_cpu_us_per_key_by_thread");
            assertEquals(List.of("transport", "log_writer", "snapshots", "collector", "compiler", "other"), fieldNames(byThread), phase::toString);
            for (String group : fieldNames(byThread)) {
                assertTrue(byThread.get(group).asDouble() >= 0, phase::toString);
            }
            assertTrue(byThread.get("transport").asDouble() > 0, "the transport loops serve the calls: " + phase);
        }
        assertEquals(64, phases.get(2).get("batch").asInt());
        assertEquals("offload cycle, packed", phases.get(4).get("phase").asText());
        assertEquals(64, phases.get(4).get("batch").asInt());
        assertEquals("mapping lookup, packed", phases.get(10).get("phase").asText());
        assertEquals(64, phases.get(10).get("batch").asInt());
        assertEquals(1, phases.get(12).get("callers").asInt());
        assertEquals(7, report.get("stream_over_unary").size());
        assertTrue(report.get("tcp_echo_p50_us").asDouble() > 0);
        assertTrue(report.get("one_caller_single_lookup_p50_over_echo_p50").asDouble() > 0);
        assertTrue(report.get("heap_bytes_per_mapping").asDouble() > 0);
        // The master it started ran as the launcher runs one, on huge pages where the kernel offers them, with the heap asked
        // for fixed and touched up front.
        String mode = HeapPages.kernelMode();
        assertEquals(mode == null ? "none" : mode, report.get("machine").get("transparent_huge_pages").asText());
        assertEquals(("always".equals(mode) || "madvise".equals(mode) ? "[\"-XX:+UseTransparentHugePages\"," : "[")
                        + "\"-Xms256m\",\"-Xmx256m\",\"-XX:+AlwaysPreTouch\"]",
                report.get("master_jvm_options").toString());
        assertEquals("0s", report.get("master_busy_poll").asText(), "off unless asked for");
    }

    @Test
    void bench_master_compares_each_phase_with_a_master_that_logs_nothing_in_the_same_run() throws Exception {
        CliRun run = CliRun.run("bench", "master", "--threads", "2", "--seconds", "0.3", "--warmup-seconds", "0.1", "--memory-mappings", "0",
                "--compare-durability", "--master-heap", "grow", "--master-busy-poll", "50us", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        JsonNode wal = report.get("phases");
        JsonNode snapshot = report.get("snapshot_durability_phases");
        JsonNode ratios = report.get("snapshot_over_wal");
        assertEquals(14, wal.size());
        assertEquals(14, snapshot.size());
        assertEquals(14, ratios.size());
        for (int i = 0; i < 14; i++) {
            assertEquals(wal.get(i).get("phase").asText(), snapshot.get(i).get("phase").asText());
            assertEquals(wal.get(i).get("transport").asText(), ratios.get(i).get("transport").asText());
            assertEquals(0, snapshot.get(i).get("failures").asLong(), snapshot.get(i)::toString);
            assertTrue(snapshot.get(i).get("server_cpu_us_per_key").asDouble() >= 0, snapshot.get(i)::toString);
            assertTrue(ratios.get(i).get("keys_per_second_ratio").asDouble() > 0, ratios.get(i)::toString);
            assertEquals(0.0, snapshot.get(i).get("server_cpu_us_per_key_by_thread").get("log_writer").asDouble(), snapshot.get(i)::toString);
        }
        // Offloads of one key a call wait for the log's fsync on the WAL master: its writer thread works, the snapshot master has none.
        assertTrue(wal.get(1).get("server_cpu_us_per_key_by_thread").get("log_writer").asDouble() > 0, wal.get(1)::toString);
        assertTrue(report.get("master").asText().contains("--durability snapshot"), report.get("master")::toString);
        assertEquals("50us", report.get("master_busy_poll").asText(), "both masters started here poll for 50 µs before they sleep");
        // --master-heap grow: the JVM's own heap, neither fixed nor touched.
        String options = report.get("master_jvm_options").toString();
        assertFalse(options.contains("-Xms") || options.contains("-Xmx") || options.contains("AlwaysPreTouch"), options);
    }

    @Test
    void bench_master_over_a_tier_its_offloads_fill_offloads_and_looks_up_without_failures_and_reports_what_the_master_evicted() throws Exception {
        CliRun run = CliRun.run("bench", "master", "--threads", "2", "--seconds", "0.5", "--warmup-seconds", "0.2", "--memory-mappings", "0",
                "--buckets", "4", "--bucket-size", "8MiB", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        assertTrue(report.get("master").asText().contains("4 x 8MiB buckets"), report.get("master")::toString);
        JsonNode phases = report.get("phases");
        for (int i = 0; i < 6; i++) {
            assertTrue(phases.get(i).get("phase").asText().startsWith("offload cycle"), phases.get(i)::toString);
            assertEquals(0, phases.get(i).get("failures").asLong(), phases.get(i)::toString);
        }
        // 512 pages, and each phase offloads far more objects of one page than that.
        assertTrue(report.get("objects_evicted").get("wal master").asLong() > 512, report.get("objects_evicted")::toString);
        // The lookups ask for the newest keys, half the tier's worth, which the evictor has left in place.
        for (int i = 6; i < phases.size(); i++) {
            assertTrue(phases.get(i).get("phase").asText().startsWith("mapping lookup"), phases.get(i)::toString);
            assertEquals(0, phases.get(i).get("failures").asLong(), phases.get(i)::toString);
        }
    }

    @Test
    void bench_master_refuses_a_tier_it_cannot_start_and_a_tier_for_a_master_it_did_not_start() {
        CliRun none = CliRun.run("bench", "master", "--buckets", "0").expectExit(ExitCodes.USAGE);
        assertTrue(none.err().contains("invalid --buckets 0: allowed is 1 to 4096"), none.err());
        CliRun odd = CliRun.run("bench", "master", "--bucket-size", "100KiB").expectExit(ExitCodes.USAGE);
        assertTrue(odd.err().contains("invalid --bucket-size 100KiB: allowed is a multiple of the 64KiB page"), odd.err());
        CliRun theirs = CliRun.run("bench", "master", "--master", "127.0.0.1:1", "--buckets", "8").expectExit(ExitCodes.USAGE);
        assertTrue(theirs.err().contains("--buckets and --bucket-size are for the master started here: leave out --master"), theirs.err());
        for (String heap : new String[] {"32MiB", "4.5", "lots", "1000000"}) {
            CliRun bad = CliRun.run("bench", "master", "--master-heap", heap).expectExit(ExitCodes.USAGE);
            assertEquals("mcctl: error: invalid --master-heap " + heap + ": allowed is 'grow' or a size of whole MiB from 64MiB, such as 4GiB",
                    bad.err().strip());
        }
        for (String poll : new String[] {"2ms", "-1us", "50"}) {
            CliRun bad = CliRun.run("bench", "master", "--master-busy-poll", poll).expectExit(ExitCodes.USAGE);
            assertEquals("mcctl: error: invalid --master-busy-poll " + poll + ": allowed is a duration from 0s (off) to 1ms, e.g. 50us",
                    bad.err().strip());
        }
        CliRun theirPoll = CliRun.run("bench", "master", "--master", "127.0.0.1:1", "--master-busy-poll", "50us").expectExit(ExitCodes.USAGE);
        assertTrue(theirPoll.err().contains("--master-busy-poll is for the master started here: leave out --master"), theirPoll.err());
        CliRun theirHeap = CliRun.run("bench", "master", "--master", "127.0.0.1:1", "--master-heap", "1GiB").expectExit(ExitCodes.USAGE);
        assertTrue(theirHeap.err().contains("--master-heap is for the master started here: leave out --master"), theirHeap.err());
    }

    @Test
    void bench_master_whose_master_cannot_start_says_why_and_leaves_no_files_behind(@TempDir Path dir) throws Exception {
        Path temp = Files.createDirectory(dir.resolve("tmp"));
        McctlProcess.Done run = benchMasterWithItsOwnTemporaryDirectory(dir, temp, "--seconds", "1", "--master-jvm-option=-XX:+NoSuchMcctlOption");
        assertEquals(ExitCodes.FAILED, run.exitCode(), run.err());
        assertTrue(run.err().contains("the master exited with 1") && run.err().contains("NoSuchMcctlOption"), run.err());
        assertEquals(1, run.err().strip().lines().count(), run.err());
        assertEquals(Set.of(), benchLeftovers(temp), "the temporary root and the master's output files are removed");
    }

    /**
     * {@code mcctl bench master} as a process whose temporary directory is {@code temp}: what is left there is its own,
     * whatever else runs on the machine meanwhile (other tests start masters, whose output files go to the temporary
     * directory too).
     */
    private static McctlProcess.Done benchMasterWithItsOwnTemporaryDirectory(Path dir, Path temp, String... args) throws Exception {
        List<String> jvmOptions = new java.util.ArrayList<>(McctlProcess.jvmOptions("256m"));
        jvmOptions.add("-Djava.io.tmpdir=" + temp);
        List<String> command = new java.util.ArrayList<>(List.of("bench", "master"));
        command.addAll(List.of(args));
        Path out = dir.resolve("out.txt");
        Path err = dir.resolve("err.txt");
        Process process = McctlProcess.clean(new ProcessBuilder(MasterProcess.command(jvmOptions, command)).directory(dir.toFile()), java.util.Map.of())
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!process.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("mcctl bench master did not finish in 60 s");
        }
        return new McctlProcess.Done(process.exitValue(), Files.readString(out), Files.readString(err));
    }

    /** What bench master creates in the temporary directory: a root for its master and the master's output files. */
    private static Set<String> benchLeftovers(Path temp) throws IOException {
        try (var entries = Files.list(temp)) {
            return entries.map(p -> p.getFileName().toString())
                    .filter(name -> name.startsWith("mcctl-bench-master") || name.startsWith("mcctl-master-out") || name.startsWith("mcctl-master-err"))
                    .collect(Collectors.toSet());
        }
    }

    @Test
    void bench_master_runs_the_phases_asked_for_in_rounds_beside_a_baseline_master_from_another_jar(@TempDir Path dir) throws Exception {
        Path jar = pathingJar(dir.resolve("baseline.jar"));
        CliRun run = CliRun.run("bench", "master", "--threads", "2", "--seconds", "0.3", "--warmup-seconds", "0.1", "--memory-mappings", "0",
                "--master-heap", "256MiB", "--phases", "lookup-64-packed,offload-64-packed", "--transport", "stream", "--rounds", "3",
                "--baseline-jar", jar.toString(), "--baseline-jvm-option=-XX:-UseTransparentHugePages", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        assertEquals(3, report.get("rounds").asInt());
        assertEquals("[\"offload-64-packed\",\"lookup-64-packed\"]", report.get("phases_run").toString(), "in the benchmark's order");
        for (String which : new String[] {"phases", "baseline_phases"}) {
            JsonNode phases = report.get(which);
            assertEquals(2, phases.size(), phases::toString);
            assertEquals("offload cycle, packed", phases.get(0).get("phase").asText());
            assertEquals("mapping lookup, packed", phases.get(1).get("phase").asText());
            for (JsonNode phase : phases) {
                assertEquals("stream", phase.get("transport").asText(), phase::toString);
                assertEquals(0, phase.get("failures").asLong(), phase::toString);
                // Each figure is the median of the rounds': the middle one of three.
                assertEquals(3, phase.get("server_cpu_us_per_key_rounds").size(), phase::toString);
                assertEquals(middle(phase.get("server_cpu_us_per_key_rounds")), phase.get("server_cpu_us_per_key").asDouble(), 0.0011, phase::toString);
                assertEquals(middle(phase.get("keys_per_second_rounds")), phase.get("keys_per_second").asDouble(), 1.0, phase::toString);
            }
        }
        JsonNode ratios = report.get("this_over_baseline");
        assertEquals(2, ratios.size());
        for (int i = 0; i < 2; i++) {
            double expected = report.get("phases").get(i).get("server_cpu_us_per_key").asDouble()
                    / report.get("baseline_phases").get(i).get("server_cpu_us_per_key").asDouble();
            assertEquals(expected, ratios.get(i).get("server_cpu_per_key_ratio").asDouble(), expected * 0.01 + 0.002, ratios.get(i)::toString);
        }
        assertEquals(jar.toString(), report.get("baseline").get("jar").asText());
        assertTrue(report.get("baseline").get("jvm_options").toString().contains("-XX:-UseTransparentHugePages"), report.get("baseline")::toString);
        assertTrue(report.get("baseline").get("jvm_options").toString().contains("-Xmx256m"), "the heap asked for is both masters'");
        assertTrue(report.get("objects_evicted").has("wal master") && report.get("objects_evicted").has("baseline master"),
                report.get("objects_evicted")::toString);
        assertFalse(report.has("stream_over_unary"), "one transport: no gain of one over the other");
        assertFalse(report.has("one_caller_single_lookup_p50_over_echo_p50"), "that phase did not run");
    }

    @Test
    void bench_master_runs_phases_of_the_batch_sizes_asked_for_offloads_first_and_smaller_batches_first() throws Exception {
        CliRun run = CliRun.run("bench", "master", "--threads", "2", "--seconds", "0.3", "--warmup-seconds", "0", "--memory-mappings", "0",
                "--master-heap", "256MiB", "--phases", "lookup-200-packed,lookup-16-packed,offload-200-packed,lookup-16-packed",
                "--transport", "stream", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        assertEquals("[\"offload-200-packed\",\"lookup-16-packed\",\"lookup-200-packed\"]", report.get("phases_run").toString(),
                "each once, in the benchmark's order");
        JsonNode phases = report.get("phases");
        assertEquals(3, phases.size(), phases::toString);
        int[] batches = {200, 16, 200};
        for (int i = 0; i < 3; i++) {
            JsonNode phase = phases.get(i);
            assertEquals(i == 0 ? "offload cycle, packed" : "mapping lookup, packed", phase.get("phase").asText(), phase::toString);
            assertEquals(batches[i], phase.get("batch").asInt(), phase::toString);
            assertEquals(0, phase.get("failures").asLong(), "every key looked up was written: " + phase);
            assertEquals(0, phase.get("keys").asLong() % batches[i], "whole batches: " + phase);
            assertTrue(phase.get("keys").asLong() > 0, phase::toString);
        }
    }

    @Test
    void bench_master_lookups_without_an_offload_phase_look_up_keys_an_unmeasured_offload_wrote() throws Exception {
        CliRun run = CliRun.run("bench", "master", "--threads", "2", "--seconds", "0.3", "--warmup-seconds", "0", "--memory-mappings", "0",
                "--master-heap", "256MiB", "--phases", "lookup-1-alone,lookup-64", "--transport", "unary", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        JsonNode phases = report.get("phases");
        assertEquals(2, phases.size(), phases::toString);
        for (JsonNode phase : phases) {
            assertEquals("unary", phase.get("transport").asText(), phase::toString);
            assertTrue(phase.get("keys").asLong() > 0, phase::toString);
            assertEquals(0, phase.get("failures").asLong(), "every key looked up was written: " + phase);
            assertFalse(phase.has("server_cpu_us_per_key_rounds"), "one round: its figures alone");
        }
        assertEquals(1, phases.get(1).get("callers").asInt());
        assertTrue(report.get("one_caller_single_lookup_p50_over_echo_p50").asDouble() > 0, run.out());
    }

    @Test
    void bench_master_runs_the_phases_asked_for_against_masters_with_plaintext_tokens_and_tls() throws Exception {
        CliRun run = CliRun.run("bench", "master", "--security", "--threads", "2", "--seconds", "0.2", "--warmup-seconds", "0",
                "--memory-mappings", "0", "--master-heap", "256MiB", "--phases", "lookup-64-packed", "--transport", "stream", "-o", "json").expectOk();
        JsonNode rows = new ObjectMapper().readTree(run.out()).get("security");
        assertEquals(3, rows.size(), rows::toString);
        String[] modes = {"plaintext", "plaintext+token", "tls+token"};
        for (int i = 0; i < 3; i++) {
            JsonNode row = rows.get(i);
            assertEquals(modes[i], row.get("security").asText(), row::toString);
            assertEquals("mapping lookup, packed", row.get("phase").asText(), row::toString);
            assertEquals(0, row.get("failures").asLong(), "every key looked up was written first: " + row);
            assertTrue(row.get("keys_per_second").asLong() > 0, row::toString);
        }
    }

    @Test
    void bench_master_whose_baseline_master_cannot_start_says_why_in_one_line_and_leaves_no_files_behind(@TempDir Path dir) throws Exception {
        Path temp = Files.createDirectory(dir.resolve("tmp"));
        Path notMcctl = dir.resolve("empty.jar");
        try (var jar = new java.util.jar.JarOutputStream(Files.newOutputStream(notMcctl), new java.util.jar.Manifest())) {
            jar.flush(); // a jar without mcctl in it
        }
        McctlProcess.Done run = benchMasterWithItsOwnTemporaryDirectory(dir, temp, "--seconds", "1", "--master-heap", "256MiB",
                "--baseline-jar", notMcctl.toString());
        assertEquals(ExitCodes.FAILED, run.exitCode(), run.err());
        assertTrue(run.err().contains("the baseline master from " + notMcctl + " did not start") && run.err().contains("io.mcctl.cli.Main"), run.err());
        assertEquals(1, run.err().strip().lines().count(), run.err());
        assertEquals(Set.of(), benchLeftovers(temp), "both masters' roots and output files are removed");
    }

    @Test
    void bench_master_refuses_rounds_phases_transports_and_baselines_it_cannot_run() {
        for (String rounds : new String[] {"0", "101"}) {
            CliRun bad = CliRun.run("bench", "master", "--rounds", rounds).expectExit(ExitCodes.USAGE);
            assertEquals("mcctl: error: invalid --rounds " + rounds + ": allowed is 1 to 100", bad.err().strip());
        }
        for (String wrong : new String[] {"lookup-65-alone", "lookup-0", "lookup-10001-packed", "offload-064", "remove-64"}) {
            CliRun phase = CliRun.run("bench", "master", "--phases", "offload-64," + wrong).expectExit(ExitCodes.USAGE);
            assertEquals("mcctl: error: invalid --phases offload-64," + wrong + ": '" + wrong + "' is no phase; allowed is a comma-separated "
                    + "list of offload-1, offload-64, offload-64-packed, lookup-1, lookup-64, lookup-64-packed, lookup-1-alone, or offload-N, "
                    + "offload-N-packed, lookup-N, lookup-N-packed for N from 1 to 10000", phase.err().strip());
        }
        CliRun transport = CliRun.run("bench", "master", "--transport", "tcp").expectExit(ExitCodes.USAGE);
        assertEquals("mcctl: error: invalid --transport tcp: allowed is unary, stream, both", transport.err().strip());
        CliRun missing = CliRun.run("bench", "master", "--baseline-jar", "/no/such/mcctl.jar").expectExit(ExitCodes.USAGE);
        assertTrue(missing.err().strip().startsWith("mcctl: error: invalid --baseline-jar /no/such/mcctl.jar: no such file"), missing.err());
        CliRun theirs = CliRun.run("bench", "master", "--master", "127.0.0.1:1", "--baseline-jvm-option=-Xss2m").expectExit(ExitCodes.USAGE);
        assertTrue(theirs.err().contains("--baseline-jar and --baseline-jvm-option start a master here: leave out --master"), theirs.err());
    }

    private static List<String> fieldNames(JsonNode object) {
        List<String> names = new java.util.ArrayList<>();
        object.fieldNames().forEachRemaining(names::add);
        return names;
    }

    /** The middle of three numbers. */
    private static double middle(JsonNode three) {
        double[] values = {three.get(0).asDouble(), three.get(1).asDouble(), three.get(2).asDouble()};
        java.util.Arrays.sort(values);
        return values[1];
    }

    /** A jar holding only a manifest whose class path is this JVM's: mcctl run from a jar file, as another build's would be. */
    private static Path pathingJar(Path jar) throws IOException {
        StringBuilder classPath = new StringBuilder();
        for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            classPath.append(Path.of(entry).toAbsolutePath().toUri()).append(' '); // a directory's URI ends in '/'
        }
        java.util.jar.Manifest manifest = new java.util.jar.Manifest();
        manifest.getMainAttributes().put(java.util.jar.Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().put(java.util.jar.Attributes.Name.CLASS_PATH, classPath.toString().strip());
        try (var out = new java.util.jar.JarOutputStream(Files.newOutputStream(jar), manifest)) {
            out.flush();
        }
        return jar;
    }

    @Test
    void bench_master_refuses_to_compare_durability_on_a_master_it_did_not_start() {
        CliRun run = CliRun.run("bench", "master", "--master", "127.0.0.1:1", "--compare-durability").expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("--compare-durability starts its own masters: leave out --master"), run.err());
    }

    @Test
    void bench_master_refuses_a_phase_too_short_to_measure() {
        CliRun run = CliRun.run("bench", "master", "--seconds", "0").expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("--seconds 0.0") && run.err().contains("0.1 to 3600"), run.err());
    }
}
