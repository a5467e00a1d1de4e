package io.mcctl.cli;

import io.mcctl.master.service.eviction.EvictionPolicy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.cli.bench.MasterProcess;
import io.mcctl.cli.stats.TopView;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.BucketStats;
import io.mcctl.master.server.MasterServer;
import io.mcctl.master.server.MasterSettings;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mcctl stats} and {@code mcctl top} against a real, evicting master on a loopback port: objects offloaded by a
 * real node in two tenants, lookups that hit and miss. top runs as a real process, piped and (with tmux) on a terminal.
 */
@Timeout(120)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class StatsTopCommandTest {

    static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path temp;

    MasterServer master;
    MasterClient client;
    TierNode node;
    String address;

    @BeforeEach
    void start_an_evicting_master_with_two_tenants() throws Exception {
        Path root = Files.createDirectories(temp.resolve("root"));
        master = MasterServer.start(MasterServer.Options.builder(new BucketLayout(root, 4, 4096, 1 << 20))
                .snapshotInterval(null).eviction(new EvictionPolicy(true, 0.9, 0.7)).build());
        address = "127.0.0.1:" + master.port();
        client = new MasterClient(address, Duration.ofSeconds(10));
        node = TierNode.connect(client, true, new ClientMetrics());
        List<TierWriter.ObjectSource> big = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            big.add(new TierWriter.ObjectSource("key-" + i, List.of(ByteBuffer.wrap(new byte[8192]))));
        }
        new TierWriter(node).offload("tenant-big", big, false).forEach(o -> assertTrue(o.ok(), o::toString));
        new TierWriter(node).offload("tenant-small", List.of(new TierWriter.ObjectSource("only", List.of(ByteBuffer.wrap(new byte[100])))), false)
                .forEach(o -> assertTrue(o.ok(), o::toString));
        // tenant-big: two hits and a miss; tenant-small: no lookups at all.
        client.batchGetMapping(List.of("key-0", "key-1", "absent"), List.of("tenant-big", "tenant-big", "tenant-big"));
    }

    @AfterEach
    void stop() throws Exception {
        node.close();
        client.close();
        master.close();
    }

    @Test
    void stats_json_has_the_tier_eviction_and_per_tenant_hit_ratios_biggest_tenant_first() throws Exception {
        JsonNode report = JSON.readTree(CliRun.run("stats", "--master", address, "-o", "json").expectOk().out());
        assertEquals(4096, report.get("page_size").asLong());
        assertEquals(4 * 256, report.get("pages_total").asLong());
        assertEquals(3 * 2 + 1, report.get("pages_allocated").asLong());
        assertEquals(7.0 / 1024, report.get("used_share").asDouble(), 1e-9);
        assertEquals(4, report.get("mappings").asLong());
        assertEquals(2, report.get("tenants").asLong());
        assertTrue(report.get("changes_refused").isNull());
        JsonNode eviction = report.get("eviction");
        assertTrue(eviction.get("enabled").asBoolean());
        assertEquals(0.9, eviction.get("high_watermark").asDouble());
        assertEquals(0.7, eviction.get("low_watermark").asDouble());
        assertEquals(0, eviction.get("evicted_keys").asLong());
        assertEquals(3, report.get("lookups_total").asLong());
        assertEquals(2, report.get("hits").asLong());
        assertEquals(2.0 / 3, report.get("hit_ratio").asDouble(), 1e-9);
        assertEquals(4, report.get("buckets").size());
        JsonNode tenants = report.get("tenant_stats");
        assertEquals("tenant-big", tenants.get(0).get("tenant").asText());
        assertEquals(3 * 8192, tenants.get(0).get("bytes").asLong());
        assertEquals(2.0 / 3, tenants.get(0).get("hit_ratio").asDouble(), 1e-9);
        assertEquals("tenant-small", tenants.get(1).get("tenant").asText());
        assertTrue(tenants.get(1).get("hit_ratio").isNull(), "no lookups is no ratio, not 0");
    }

    @Test
    void stats_names_a_bucket_whose_file_is_missing_in_text_and_json() throws Exception {
        assertTrue(CliRun.run("stats", "--master", address).expectOk().out().contains("bucket files  all 4 healthy"));
        Files.delete(master.options().layout().bucketPath(2));
        master.bucketFiles().checkAll();

        String out = CliRun.run("stats", "--master", address).expectOk().out();
        assertTrue(out.startsWith("BUCKET FILES  1 of 4 take no allocations (their files are missing or replaced): bucket 2 missing"), out);
        JsonNode report = JSON.readTree(CliRun.run("stats", "--master", address, "-o", "json").expectOk().out());
        assertEquals("missing", report.get("buckets").get(2).get("file_state").asText());
        assertEquals("healthy", report.get("buckets").get(1).get("file_state").asText());
        assertEquals(1, report.get("bucket_files").get("missing").asLong());
        assertEquals(3, report.get("bucket_files").get("healthy").asLong());
        assertEquals(0, report.get("bucket_files").get("replaced").asLong());
    }

    @Test
    void stats_text_is_one_screen_with_the_tenant_table() {
        String out = CliRun.run("stats", "--master", address).expectOk().out();
        assertTrue(out.contains("7 / 1024 used (0.7%)"), out);
        assertTrue(out.contains("on: starts above 90.0% used, stops at 70.0%"), out);
        assertTrue(out.contains("3: 2 hits, 1 misses, hit ratio 66.7%"), out);
        List<String> rows = out.lines().filter(l -> l.startsWith("tenant-")).collect(Collectors.toList());
        assertEquals(2, rows.size(), out);
        assertTrue(rows.get(0).startsWith("tenant-big ") && rows.get(0).contains("66.7%"), out);
    }

    @Test
    @Tag("process")
    void top_piped_prints_plain_snapshots_with_rates_and_stops_after_count() throws Exception {
        McctlProcess.Done done = McctlProcess.run(temp, Map.of(), "top", "--master", address, "--count", "3", "--interval", "200ms");
        assertEquals(0, done.exitCode(), done.err());
        assertFalse(done.out().contains("\u001b"), "no escape codes when stdout is not a terminal");
        assertEquals(3, done.out().lines().filter(l -> l.startsWith("mcctl top  " + address)).count(), done.out());
        assertTrue(done.out().contains("per second 0.0 page allocations, 0.0 evictions, 0.0 lookups"), done.out());
        assertTrue(done.out().contains("hit ratio  66.7% since start"), done.out());
        assertTrue(done.out().contains("by use     empty"), done.out());
    }

    @Test
    void top_refuses_an_interval_below_100ms_in_one_line() {
        CliRun run = CliRun.run("top", "--master", address, "--interval", "10ms").expectExit(ExitCodes.USAGE);
        assertEquals("mcctl: error: invalid --interval '10ms': allowed is 100ms to 1h", run.err().strip());
    }

    @Test
    void two_hundred_fifty_six_buckets_fold_into_four_rows_of_64_on_80_columns() {
        List<BucketStats> buckets = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            long used = b == 5 ? 100 : b == 6 ? 1 : 0;
            buckets.add(BucketStats.newBuilder().setBucket(b).setPagesAllocated(used).setPagesFree(100 - used).build());
        }
        TopView view = new TopView("m", "1s", false);
        List<String> lines = view.frame(new io.mcctl.cli.stats.TierStatsReport(io.mcctl.master.proto.v1.GetStatsResponse.newBuilder()
                .addAllBuckets(buckets).setPagesTotal(25600).setPagesAllocated(101).build(), 4096), 0, java.time.LocalTime.NOON, 80, 10, "");
        List<String> rows = lines.stream().filter(l -> l.matches(" *\\d+ \\|.*\\|")).collect(Collectors.toList());
        assertEquals(List.of("    0", "   64", "  128", "  192"), rows.stream().map(r -> r.substring(0, 5)).collect(Collectors.toList()));
        assertEquals(64 + 8, rows.get(0).length());
        assertEquals("@.", rows.get(0).substring(7 + 5, 7 + 7), rows.get(0));
        assertTrue(lines.contains("by use     empty 254, <10% 1, 90-100% 1"), lines::toString);
        assertTrue(lines.stream().allMatch(l -> l.length() <= 80), lines::toString);
    }

    @Test
    @Tag("process")
    void top_on_a_terminal_redraws_and_quits_on_q() throws Exception {
        assumeTrue(onPath("tmux"), "tmux is not installed");
        String socket = "mcctl-top-" + ProcessHandle.current().pid();
        String command = MasterProcess.command(McctlProcess.jvmOptions("256m"), List.of("top", "--master", address, "--interval", "200ms")).stream()
                .map(StatsTopCommandTest::shellQuote).collect(Collectors.joining(" "));
        try {
            tmux(socket, "new-session", "-d", "-s", "top", "-x", "100", "-y", "40", command + "; echo EXITED $?; sleep 60");
            String screen = awaitScreen(socket, "TENANT");
            assertTrue(screen.contains("mcctl top  " + address) && screen.contains("(q quits)"), screen);
            assertTrue(screen.contains("tenant-big"), screen);
            tmux(socket, "send-keys", "-t", "top", "q");
            String after = awaitScreen(socket, "EXITED");
            assertTrue(after.contains("EXITED 0"), after);
            assertFalse(after.contains("TENANT"), "the screen is given back as it was: " + after);
        } finally {
            new ProcessBuilder("tmux", "-L", socket, "kill-server").redirectErrorStream(true).start().waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static String awaitScreen(String socket, String text) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
        String screen = "";
        while (System.nanoTime() < deadline) {
            screen = tmux(socket, "capture-pane", "-p", "-t", "top");
            if (screen.contains(text)) {
                return screen;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("'" + text + "' never appeared on the screen:\n" + screen);
    }

    private static String tmux(String socket, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("tmux", "-L", socket));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(10, TimeUnit.SECONDS) && process.exitValue() == 0, () -> String.join(" ", command) + ": " + out);
        return out;
    }

    private static boolean onPath(String program) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (Files.isExecutable(Path.of(dir, program))) {
                return true;
            }
        }
        return false;
    }

    private static String shellQuote(String word) {
        return "'" + word.replace("'", "'\\''") + "'";
    }
}
