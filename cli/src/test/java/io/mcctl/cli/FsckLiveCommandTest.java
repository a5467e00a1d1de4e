package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.layout.BucketLayout;
import java.io.RandomAccessFile;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mcctl fsck --master} against a real master on a loopback port over a temp root, with objects offloaded through
 * a real node; damage is injected into the live master's allocators the way each test needs.
 */
@Timeout(60)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class FsckLiveCommandTest {

    static final long PAGE = 4096;
    static final long BUCKET = 4 << 20; // two 512-page regions: objects stay in the first, farPage() is in the second
    static final int BUCKETS = 4;
    static final int OBJECTS = 12;
    static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path temp;

    Path root;
    BucketLayout layout;
    MasterServer master;
    MasterClient client;
    TierNode node;
    String address;

    @BeforeEach
    void start_a_master_and_offload_objects() throws Exception {
        root = temp.resolve("root");
        Files.createDirectories(root);
        layout = new BucketLayout(root, BUCKETS, PAGE, BUCKET);
        master = MasterServer.start(MasterServer.Options.builder(layout).build());
        address = "127.0.0.1:" + master.port();
        client = new MasterClient(address, Duration.ofSeconds(10));
        node = TierNode.connect(client, true, new ClientMetrics());
        List<TierWriter.ObjectSource> objects = new ArrayList<>();
        for (int i = 0; i < OBJECTS; i++) {
            objects.add(new TierWriter.ObjectSource("key-" + i, List.of(ByteBuffer.wrap(bytes(i)))));
        }
        new TierWriter(node).offload("tenant-a", objects, false).forEach(o -> assertTrue(o.ok(), o::toString));
    }

    @AfterEach
    void stop() throws Exception {
        node.close();
        client.close();
        master.close();
    }

    static byte[] bytes(int i) {
        return ("object " + i + " ").repeat(500 + 300 * i).getBytes(StandardCharsets.UTF_8);
    }

    CliRun fsck(String... args) {
        List<String> all = new ArrayList<>(List.of("fsck", "--master", address));
        all.addAll(List.of(args));
        return CliRun.run(all.toArray(new String[0]));
    }

    DistributedDiskDescriptor mapping(String key) {
        return client.getMapping("tenant-a", key).getDistributedDisk();
    }

    int bucketOf(DistributedDiskDescriptor d) {
        return layout.bucketOf(Path.of(d.getFilePath())).orElseThrow();
    }

    /** The last page of a bucket: no object of this test reaches it, so no allocation has stamped its region. */
    long farPage() {
        return BUCKET / PAGE - 4;
    }

    @Test
    void a_clean_master_exits_0_and_says_how_long_it_held_a_lock() {
        CliRun run = fsck().expectExit(0);
        assertEquals(1, run.out().lines().count(), run.out());
        assertTrue(run.out().startsWith("fsck clean: 0 errors, 0 warnings; checked " + OBJECTS + " mappings"), run.out());
        assertTrue(run.out().contains("held no lock longer than"), run.out());
    }

    @Test
    void json_reports_the_masters_page_totals() throws Exception {
        JsonNode json = JSON.readTree(fsck("-o", "json").expectExit(0).out());
        assertEquals(OBJECTS, json.get("checked").get("mappings").asLong());
        assertEquals(0, json.get("master").get("leaked_pages").asLong());
        assertEquals(60_000, json.get("master").get("min_age_ms").asLong(), "the default minimum age is the allocation deadline");
        assertFalse(json.get("master").get("repair").asBoolean());
    }

    @Test
    void a_leak_is_reported_with_exit_4_then_repaired_with_exit_1_then_clean() throws Exception {
        master.pages().allocator(1).markAllocated(farPage(), 2);

        CliRun dry = fsck().expectExit(4);
        assertTrue(dry.out().contains("error: " + layout.bucketPath(1) + " at byte " + farPage() * PAGE + ": pages " + farPage() + ".."
                + (farPage() + 1) + " of bucket 1 allocated but claimed by nothing (leaked)"), dry.out());
        assertTrue(master.pages().allocator(1).isAllocated(farPage()), "a dry run changes nothing");

        CliRun repair = fsck("--repair").expectExit(1);
        assertTrue(repair.out().contains("corrected: " + layout.bucketPath(1)), repair.out());
        assertTrue(repair.out().contains("(leaked); freed"), repair.out());
        assertFalse(master.pages().allocator(1).isAllocated(farPage()));

        fsck().expectExit(0);
    }

    @Test
    void unclaimed_pages_beside_a_fresh_allocation_are_young_until_min_age_passes() throws Exception {
        DistributedDiskDescriptor d = mapping("key-0");
        long page = d.getOffset() / PAGE + 50; // the same 512-page region as a moment-old allocation
        master.pages().allocator(bucketOf(d)).markAllocated(page, 1);

        CliRun young = fsck("--repair").expectExit(0);
        assertTrue(young.out().contains("warning: ") && young.out().contains("not counted as leaked"), young.out());
        assertTrue(master.pages().allocator(bucketOf(d)).isAllocated(page), "young pages are never freed");

        CliRun repair = fsck("--repair", "--min-age", "0s").expectExit(1);
        assertTrue(repair.out().contains("(leaked); freed"), repair.out());
    }

    @Test
    void a_false_free_names_its_key_and_repair_protects_the_data_from_later_offloads() throws Exception {
        DistributedDiskDescriptor victim = mapping("key-7");
        BitmapPageAllocator allocator = master.pages().allocator(bucketOf(victim));
        allocator.free(victim.getOffset() / PAGE, 1);

        CliRun dry = fsck("-o", "json").expectExit(4);
        JsonNode error = JSON.readTree(dry.out()).get("errors").get(0);
        assertEquals("false_free", error.get("check").asText(), dry.out());
        assertEquals("key-7", error.get("key").asText());
        assertEquals(victim.getOffset(), error.get("offset").asLong());

        fsck("--repair").expectExit(1);
        assertTrue(allocator.isAllocated(victim.getOffset() / PAGE));
        fsck().expectExit(0);

        // Later offloads land elsewhere: the victim's bytes are intact.
        List<TierWriter.ObjectSource> more = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            more.add(new TierWriter.ObjectSource("later-" + i, List.of(ByteBuffer.wrap(new byte[(int) PAGE]))));
        }
        new TierWriter(node).offload("tenant-a", more, false).forEach(o -> assertTrue(o.ok(), o::toString));
        TierReader.Outcome read = new TierReader(node).get("tenant-a", List.of("key-7")).get(0);
        assertTrue(read.ok(), read::toString);
        byte[] got = new byte[read.data().remaining()];
        read.data().duplicate().get(got);
        assertArrayEquals(bytes(7), got);
    }

    @Test
    void an_overlap_names_both_keys_and_repair_leaves_it_with_exit_4() throws Exception {
        DistributedDiskDescriptor first = mapping("key-3");
        int bucket = bucketOf(first);
        BitmapPageAllocator allocator = master.pages().allocator(bucket);
        long pages = (first.getObjectSize() + PAGE - 1) / PAGE;
        allocator.free(first.getOffset() / PAGE, pages);
        // Hand the freed pages to a new allocation, as a false free would in time.
        long offset = -1;
        for (int i = 0; offset != first.getOffset(); i++) {
            String key = "intruder-" + i;
            if (layout.homeBucket(key) != bucket) {
                continue;
            }
            offset = client.allocate("tenant-a", key, first.getObjectSize(), false).getDistributedDisk().getOffset();
            assertTrue(i < 10_000, "never reached the freed pages");
        }

        CliRun run = fsck("--repair").expectExit(4);
        String overlap = run.out().lines().filter(l -> l.contains("claimed twice")).findFirst().orElse("");
        assertTrue(overlap.contains("key-3") && overlap.contains("intruder-"), run.out());
        assertTrue(overlap.contains("never repaired"), run.out());
    }

    @Test
    void deep_reads_every_object_from_a_fresh_snapshot_and_names_a_corrupt_one() throws Exception {
        JsonNode clean = JSON.readTree(fsck("--deep", "-o", "json").expectExit(0).out());
        assertEquals(OBJECTS, clean.get("checked").get("objects_read").asLong());

        DistributedDiskDescriptor victim = mapping("key-4");
        try (RandomAccessFile raf = new RandomAccessFile(victim.getFilePath(), "rw")) {
            raf.seek(victim.getOffset() + 10);
            int b = raf.read();
            raf.seek(victim.getOffset() + 10);
            raf.write(b ^ 0x55);
        }
        CliRun run = fsck("--deep").expectExit(4);
        assertTrue(run.out().contains("object key-4 of tenant tenant-a") && run.out().contains("fails its checksum"), run.out());
    }

    @Test
    void a_short_bucket_file_is_seen_from_this_node() throws Exception {
        try (RandomAccessFile raf = new RandomAccessFile(layout.bucketPath(2).toFile(), "rw")) {
            raf.setLength(BUCKET / 2);
        }
        CliRun run = fsck().expectExit(4);
        assertTrue(run.out().contains("bucket file 2 is " + BUCKET / 2 + " bytes, shorter than the bucket size"), run.out());
    }

    @Test
    @Tag("process")
    void a_real_process_checks_the_master_named_by_the_environment() throws Exception {
        master.pages().allocator(0).markAllocated(farPage(), 1);
        McctlProcess.Done done = McctlProcess.run(temp, Map.of(ClientOptions.MASTER_ENV, address), "fsck", "--master", "--repair", "-o", "json");
        assertEquals(1, done.exitCode(), done.err());
        assertEquals(1, JSON.readTree(done.out()).get("master").get("repaired_leaked_pages").asLong(), done.out());
    }

    @Test
    void an_unreachable_master_is_an_operational_error_in_one_line() throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        CliRun run = CliRun.run("fsck", "--master", "127.0.0.1:" + port, "--timeout", "2s").expectExit(8);
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().contains("127.0.0.1:" + port), run.err());
    }

    @Test
    void live_only_and_offline_only_options_are_refused_without_changing_anything() {
        master.pages().allocator(1).markAllocated(farPage(), 1);
        CliRun both = CliRun.run("fsck", "--master", address, "--state-dir", root.resolve("master").toString(), "--repair").expectExit(8);
        assertTrue(both.err().contains("not several"), both.err());
        CliRun rootWithMaster = fsck("--root", root.toString(), "--repair").expectExit(8);
        assertTrue(rootWithMaster.err().contains("--root applies offline"), rootWithMaster.err());
        CliRun badAge = fsck("--min-age", "soon", "--repair").expectExit(8);
        assertTrue(badAge.err().contains("invalid --min-age 'soon'"), badAge.err());
        assertTrue(master.pages().allocator(1).isAllocated(farPage()), "nothing was repaired");
        CliRun offlineRepair = CliRun.run("fsck", "--state-dir", root.resolve("master").toString(), "--repair").expectExit(8);
        assertTrue(offlineRepair.err().contains("--repair needs --master"), offlineRepair.err());
        CliRun offlineAge = CliRun.run("fsck", "--state-dir", root.resolve("master").toString(), "--min-age", "1s").expectExit(8);
        assertTrue(offlineAge.err().contains("--min-age applies to a live check"), offlineAge.err());
    }
}
