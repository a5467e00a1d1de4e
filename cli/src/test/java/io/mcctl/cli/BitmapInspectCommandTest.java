package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mcctl bitmap inspect} against a real master in this JVM (4 buckets of 256 pages of 4 KiB) holding known
 * allocations, then against the snapshot and state directory it leaves. The expected bitmaps are rebuilt here from
 * the places the master handed out.
 */
@Timeout(120)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class BitmapInspectCommandTest {

    static final ObjectMapper JSON = new ObjectMapper();
    static final long PAGE = 4096;
    static final List<Long> SIZES = List.of(400 * 1024L, 3 * PAGE, PAGE, 5 * PAGE - 100, 2 * PAGE, 7 * PAGE, PAGE + 1);

    @TempDir
    Path root;

    BucketLayout layout;
    MasterServer master;
    String target;
    /** The master's bitmaps as this test expects them. */
    BitmapPageAllocator[] expected;

    @BeforeEach
    void startMasterWithKnownAllocations() throws Exception {
        layout = new BucketLayout(root, 4, PAGE, 256 * PAGE);
        master = MasterServer.start(new MasterServer.Options(layout, "posix", "127.0.0.1", 0, 0, Duration.ofSeconds(60), Duration.ofSeconds(5)));
        target = "127.0.0.1:" + master.port();
        expected = new BitmapPageAllocator[layout.bucketCount()];
        for (int b = 0; b < expected.length; b++) {
            expected[b] = new BitmapPageAllocator(layout.pagesPerBucket());
        }
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < SIZES.size(); i++) {
            keys.add("obj-" + i);
        }
        List<String> tenants = Collections.nCopies(keys.size(), "default");
        try (MasterClient client = new MasterClient(target)) {
            BatchAllocateDistributedPageResponse allocated = client.batchAllocate(keys, tenants, SIZES, false);
            List<DistributedDiskDescriptor> written = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                AllocationResult result = allocated.getResults(i);
                assertEquals(ErrorCode.OK, result.getStatus().getError(), result.getStatus().getMessage());
                DistributedDiskDescriptor d = result.getDistributedDisk();
                int bucket = layout.bucketOf(Path.of(d.getFilePath())).orElseThrow();
                expected[bucket].markAllocated(d.getOffset() / PAGE, layout.pagesFor(d.getObjectSize()));
                written.add(d);
            }
            // All but the last are committed; the last stays in flight and still holds its pages.
            int committed = keys.size() - 1;
            for (KeyError e : client.notifySuccess(keys.subList(0, committed), tenants.subList(0, committed), written.subList(0, committed))
                    .getResultsList()) {
                assertEquals(ErrorCode.OK, e.getError(), e.getMessage());
            }
        }
    }

    @AfterEach
    void stopMaster() {
        if (master != null) {
            master.close();
        }
    }

    /** The bucket holding the big object: the fullest. */
    int fullestBucket() {
        int best = 0;
        for (int b = 1; b < expected.length; b++) {
            if (expected[b].allocatedCount() > expected[best].allocatedCount()) {
                best = b;
            }
        }
        return best;
    }

    JsonNode inspect(String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("bitmap", "inspect"));
        all.addAll(List.of(args));
        all.addAll(List.of("-o", "json"));
        return JSON.readTree(CliRun.run(all.toArray(String[]::new)).expectOk().out());
    }

    void assertMatchesExpected(JsonNode report, int bucket) {
        BitmapPageAllocator want = expected[bucket];
        assertEquals(bucket, report.get("bucket").asInt());
        assertEquals(256, report.get("capacity_pages").asLong());
        assertEquals(want.allocatedCount(), report.get("used_pages").asLong());
        assertEquals(256 - want.allocatedCount(), report.get("free_pages").asLong());
        assertEquals(want.allocatedCount(), report.get("counter").asLong());
        assertTrue(report.get("counter_matches").asBoolean());
        assertEquals(want.largestFreeRun(), report.get("largest_free_run").asLong());
        List<String> extents = new ArrayList<>();
        want.forEachFreeRun((first, length) -> extents.add(first + "~" + length));
        List<String> got = new ArrayList<>();
        report.get("extents").forEach(e -> got.add(e.asText()));
        assertEquals(extents, got);
        long[] fit = {-1};
        want.forEachFreeRun((first, length) -> {
            if (fit[0] < 0 && length >= 8) {
                fit[0] = first;
            }
        });
        assertEquals(fit[0] >= 0, report.get("can_alloc").get("fits").asBoolean());
        assertEquals(fit[0], report.get("can_alloc").get("first_page").asLong(-1));
    }

    /** Everything but where the report came from and the allocator's hint, which only a live master has. */
    static JsonNode bitmapFields(JsonNode report) {
        com.fasterxml.jackson.databind.node.ObjectNode copy = report.deepCopy();
        Stream.of("source", "target", "hint", "claims", "invalid_claims", "overlapping_claims").forEach(copy::remove);
        return copy;
    }

    @Test
    void live_bucket_report_matches_the_allocations_and_saved_state_gives_the_same_numbers() throws Exception {
        int bucket = fullestBucket();
        String[] detail = {"--bucket", String.valueOf(bucket), "--extents", "--can-alloc", "8"};
        JsonNode live = inspect(Stream.concat(Stream.of("--master", target), Stream.of(detail)).toArray(String[]::new));
        assertEquals("master", live.get("source").asText());
        assertFalse(live.get("hint").isNull(), "a live master has a hint");
        assertMatchesExpected(live, bucket);
        assertEquals(64, live.get("regions").size());
        assertEquals(1, live.get("region_map").size());
        assertEquals(64, live.get("region_map").get(0).asText().length());

        Path snapshot = master.snapshot().path();
        master.close();
        master = null;

        JsonNode fromDir = inspect(Stream.concat(Stream.of("--state-dir", root.resolve("master").toString()), Stream.of(detail)).toArray(String[]::new));
        assertEquals("state_dir", fromDir.get("source").asText());
        assertTrue(fromDir.get("hint").isNull());
        assertEquals(bitmapFields(live), bitmapFields(fromDir));

        JsonNode fromSnapshot = inspect(Stream.concat(Stream.of("--snapshot", snapshot.toString()), Stream.of(detail)).toArray(String[]::new));
        assertEquals("snapshot", fromSnapshot.get("source").asText());
        assertEquals(bitmapFields(live), bitmapFields(fromSnapshot));
        assertEquals(SIZES.size(), fromSnapshot.get("claims").asLong());
        assertEquals(0, fromSnapshot.get("overlapping_claims").asLong());
    }

    @Test
    void inspecting_a_state_dir_leaves_it_unchanged() throws Exception {
        master.close();
        master = null;
        Path dir = root.resolve("master");
        List<String> before = listing(dir);
        inspect("--state-dir", dir.toString());
        assertEquals(before, listing(dir));
    }

    static List<String> listing(Path dir) throws Exception {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(f -> {
                try {
                    return f.getFileName() + " " + Files.size(f) + " " + Files.getLastModifiedTime(f);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }).sorted().toList();
        }
    }

    @Test
    void the_cluster_summary_lists_the_fullest_bucket_first() throws Exception {
        JsonNode summary = inspect("--master", target, "--can-alloc", "200");
        long used = 0;
        for (BitmapPageAllocator b : expected) {
            used += b.allocatedCount();
        }
        assertEquals(4, summary.get("buckets").asInt());
        assertEquals(1024, summary.get("total_pages").asLong());
        assertEquals(used, summary.get("used_pages").asLong());
        assertEquals(1024 - used, summary.get("free_pages").asLong());
        assertEquals(fullestBucket(), summary.get("fullest").get(0).get("bucket").asInt());
        assertEquals(expected[fullestBucket()].allocatedCount(), summary.get("fullest").get(0).get("used_pages").asLong());
        assertEquals(0, summary.get("counter_mismatches").asLong());
        long largest = Stream.of(expected).mapToLong(BitmapPageAllocator::largestFreeRun).max().orElseThrow();
        assertEquals(largest, summary.get("largest_free_run").asLong());
        assertTrue(summary.get("can_alloc").get("fits").asBoolean());

        master.close();
        master = null;
        JsonNode offline = inspect("--state-dir", root.resolve("master").toString(), "--can-alloc", "200");
        assertEquals(summary.get("fullest"), offline.get("fullest"));
        assertEquals(summary.get("used_pages"), offline.get("used_pages"));
    }

    @Test
    void the_text_report_shows_the_region_map_and_histogram() {
        int bucket = fullestBucket();
        String out = CliRun.run("bitmap", "inspect", "--master", target, "--bucket", String.valueOf(bucket), "--regions", "4").expectOk().out();
        assertTrue(out.contains("region map: 4 regions of 64 pages"), out);
        assertTrue(out.contains("RUN_PAGES"), out);
        assertTrue(out.contains("counter") && out.contains("match"), out);
        String summary = CliRun.run("bitmap", "inspect", "--master", target).expectOk().out();
        assertTrue(summary.contains("fullest buckets:"), summary);
        assertTrue(summary.contains("most fragmented buckets:"), summary);
    }

    @Test
    void a_bucket_is_given_in_decimal_in_hex_with_0x_or_by_its_file_name_and_printed_with_its_file() throws Exception {
        int bucket = fullestBucket();
        JsonNode decimal = inspect("--master", target, "--bucket", String.valueOf(bucket));
        assertEquals(decimal, inspect("--master", target, "--bucket", String.format("0x%x", bucket)));
        assertEquals(decimal, inspect("--master", target, "--bucket", BucketLayout.bucketFileName(bucket)));
        String out = CliRun.run("bitmap", "inspect", "--master", target, "--bucket", String.valueOf(bucket)).expectOk().out();
        assertTrue(out.lines().anyMatch(line -> line.matches("bucket\\s+" + bucket + " \\(" + BucketLayout.bucketFileName(bucket).replace(".", "\\.") + "\\)")), out);
    }

    @Test
    void bad_input_gives_one_error_line_and_exit_2() {
        String dir = root.resolve("master").toString();
        List<String[]> bad = List.of(
                new String[] {"bitmap", "inspect", "--master", target, "--bucket", "4"},
                new String[] {"bitmap", "inspect", "--master", target, "--bucket", "-1"},
                new String[] {"bitmap", "inspect", "--master", target, "--bucket", "3d"},
                new String[] {"bitmap", "inspect", "--master", target, "--bucket", "bucket_04.data"},
                new String[] {"bitmap", "inspect", "--master", target, "--bucket", "0", "--can-alloc", "0"},
                new String[] {"bitmap", "inspect", "--master", target, "--regions", "0"},
                new String[] {"bitmap", "inspect", "--master", target, "--extents"},
                new String[] {"bitmap", "inspect", "--master", target, "--state-dir", dir},
                new String[] {"bitmap", "inspect", "--state-dir", dir, "--snapshot", dir},
                new String[] {"bitmap", "inspect", "--state-dir", dir, "--bucket", "9"});
        for (String[] args : bad) {
            CliRun run = CliRun.run(args).expectExit(ExitCodes.USAGE);
            assertEquals(1, run.err().lines().count(), String.join(" ", args) + " printed:\n" + run.err());
            assertTrue(run.err().startsWith("mcctl: error: "), run.err());
        }
    }

    @Test
    void an_unreachable_master_exits_4() {
        master.close();
        master = null;
        CliRun.run("bitmap", "inspect", "--master", target, "--timeout", "2s").expectExit(ExitCodes.UNAVAILABLE);
    }
}
