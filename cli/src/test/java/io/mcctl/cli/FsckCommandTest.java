package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.StateRecovery;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketFiles;
import io.mcctl.storage.layout.BucketLayout;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code mcctl fsck} over real state: a real master on a temp root, objects offloaded through a real node, a
 * snapshot taken, the master closed; then the root or the state is damaged the way each test needs.
 */
@Timeout(60)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class FsckCommandTest {

    static final long PAGE = 4096;
    static final long BUCKET = 1 << 20;
    static final int BUCKETS = 4;
    static final int OBJECTS = 12;
    static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path temp;

    Path root;
    Path stateDir;
    BucketLayout layout;

    @BeforeEach
    void offload_objects_through_a_real_master_and_snapshot() throws Exception {
        root = temp.resolve("root");
        Files.createDirectories(root);
        layout = new BucketLayout(root, BUCKETS, PAGE, BUCKET);
        try (MasterServer master = MasterServer.start(new MasterServer.Options(layout, "posix", "127.0.0.1", 0, 0,
                Duration.ofSeconds(60), Duration.ofSeconds(5)))) {
            try (MasterClient client = new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(10));
                 TierNode node = TierNode.connect(client, true, new ClientMetrics())) {
                List<TierWriter.ObjectSource> objects = new ArrayList<>();
                for (int i = 0; i < OBJECTS; i++) {
                    byte[] bytes = ("object " + i + " ").repeat(500 + 300 * i).getBytes(StandardCharsets.UTF_8);
                    objects.add(new TierWriter.ObjectSource("key-" + i, List.of(ByteBuffer.wrap(bytes))));
                }
                List<TierWriter.Outcome> outcomes = new TierWriter(node).offload("tenant-a", objects, false);
                outcomes.forEach(o -> assertTrue(o.ok(), o::toString));
            }
            master.snapshot();
            stateDir = master.options().resolvedStateDir();
        }
    }

    CliRun fsck(String... args) {
        return CliRun.run(args);
    }

    List<MappingRecord> mappings() throws Exception {
        return StateRecovery.recoverReadOnly(stateDir, layout, true).mappings().values().stream()
                .sorted(Comparator.comparing(MappingRecord::getKey)).toList();
    }

    @Test
    void clean_state_exits_0_with_one_summary_line() {
        CliRun run = fsck("fsck", "--state-dir", stateDir.toString()).expectExit(0);
        assertEquals(1, run.out().lines().count(), run.out());
        assertTrue(run.out().startsWith("fsck clean: 0 errors, 0 warnings; checked " + OBJECTS + " mappings"), run.out());
    }

    @Test
    void clean_state_in_json_counts_what_it_checked() throws Exception {
        CliRun run = fsck("fsck", "--state-dir", stateDir.toString(), "-o", "json").expectExit(0);
        JsonNode json = JSON.readTree(run.out());
        assertEquals(0, json.get("errors").size(), run.out());
        assertEquals(0, json.get("warnings").size(), run.out());
        assertEquals(OBJECTS, json.get("checked").get("mappings").asLong());
        assertEquals(0, json.get("checked").get("in_flight").asLong());
        assertEquals(BUCKETS, json.get("checked").get("bucket_files").asLong());
        assertEquals(0, json.get("checked").get("objects_read").asLong());
        assertEquals(0, json.get("exit_code").asInt());
    }

    @Test
    void a_short_bucket_file_is_an_error_naming_the_file() throws Exception {
        Path file = layout.bucketPath(2);
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(BUCKET / 2);
        }
        CliRun run = fsck("fsck", "--state-dir", stateDir.toString()).expectExit(4);
        assertTrue(run.out().contains("error: " + file + ": bucket file 2 is " + BUCKET / 2 + " bytes, shorter than the bucket size"), run.out());
    }

    @Test
    void a_range_past_the_real_end_of_its_bucket_file_is_an_error_naming_the_key() throws Exception {
        MappingRecord last = mappings().stream().max(Comparator.comparingLong(m -> m.getPlacement().getOffset())).orElseThrow();
        try (RandomAccessFile raf = new RandomAccessFile(layout.bucketPath(last.getPlacement().getBucket()).toFile(), "rw")) {
            raf.setLength(last.getPlacement().getOffset());
        }
        CliRun run = fsck("fsck", "--state-dir", stateDir.toString()).expectExit(4);
        assertTrue(run.out().contains("mapping of key '" + last.getKey() + "' of tenant 'tenant-a'"), run.out());
        assertTrue(run.out().contains("past the end of the file"), run.out());
    }

    @Test
    void a_missing_bucket_file_is_an_error() throws Exception {
        Files.delete(layout.bucketPath(3));
        CliRun run = fsck("fsck", "--state-dir", stateDir.toString()).expectExit(4);
        assertTrue(run.out().contains("bucket file 3 is missing"), run.out());
    }

    /** fsck --deep args reading through {@code io}: the root's parent made a 3FS mount to the stand-in for usrbio. */
    String[] deep(String io, String... args) throws Exception {
        if (io.equals("usrbio")) {
            Standin.markMount(temp);
        }
        List<String> all = new ArrayList<>(List.of(args));
        all.add("--deep");
        all.addAll(Standin.ioFlags(io));
        return all.toArray(String[]::new);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "usrbio"})
    void deep_says_a_bucket_file_created_again_empty_lost_all_its_objects(String io) throws Exception {
        Map<Integer, Long> perBucket = mappings().stream().collect(java.util.stream.Collectors.groupingBy(
                m -> m.getPlacement().getBucket(), java.util.stream.Collectors.counting()));
        int bucket = perBucket.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
        Files.delete(layout.bucketPath(bucket));
        BucketFiles.initialise(layout); // as a master start does: the missing file created again, empty

        assertEquals(0, fsck("fsck", "--state-dir", stateDir.toString()).exitCode(), "without --deep the bytes are not read");
        CliRun run = fsck(deep(io, "fsck", "--state-dir", stateDir.toString())).expectExit(4);
        assertTrue(run.out().contains("bucket file " + bucket + ": every one of its " + perBucket.get(bucket) + " objects fails its checksum"),
                run.out());
    }

    @Test
    void an_unexpected_file_in_the_root_is_a_warning_and_exits_0() throws Exception {
        Files.writeString(root.resolve(".mcctl-probe-left-over"), "x");
        Files.writeString(root.resolve("notes.txt"), "x");
        Files.createDirectories(root.resolve("3fs-virt")); // a root at the top of a 3FS mount: 3FS's own, not a stray
        CliRun run = fsck("fsck", "--state-dir", stateDir.toString()).expectExit(0);
        assertTrue(run.out().contains("warning: " + root.resolve(".mcctl-probe-left-over")), run.out());
        assertTrue(run.out().contains("warning: " + root.resolve("notes.txt")), run.out());
        assertTrue(run.out().contains("0 errors, 2 warnings"), run.out());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "usrbio"})
    void deep_on_clean_state_reads_every_mapping(String io) throws Exception {
        CliRun run = fsck(deep(io, "fsck", "--state-dir", stateDir.toString(), "--rate-limit", "1000", "-o", "json")).expectExit(0);
        JsonNode json = JSON.readTree(run.out());
        assertEquals(OBJECTS, json.get("checked").get("objects_read").asLong(), run.out());
        assertEquals(json.get("checked").get("mappings").asLong(), json.get("checked").get("objects_read").asLong());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "usrbio"})
    void deep_names_the_key_whose_bytes_were_corrupted(String io) throws Exception {
        MappingRecord victim = mappings().get(5);
        PlacementRecord p = victim.getPlacement();
        Path file = layout.bucketPath(p.getBucket());
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(p.getOffset());
            int b = raf.read();
            raf.seek(p.getOffset());
            raf.write(b ^ 0xff);
        }
        assertEquals(0, fsck("fsck", "--state-dir", stateDir.toString()).exitCode(), "without --deep the bytes are not read");
        CliRun run = fsck(deep(io, "fsck", "--state-dir", stateDir.toString(), "-o", "json")).expectExit(4);
        JsonNode errors = JSON.readTree(run.out()).get("errors");
        assertEquals(1, errors.size(), run.out());
        JsonNode error = errors.get(0);
        assertEquals("object", error.get("check").asText());
        assertEquals("tenant-a", error.get("tenant").asText());
        assertEquals(victim.getKey(), error.get("key").asText());
        assertEquals(file.toString(), error.get("file").asText());
        assertEquals(p.getOffset(), error.get("offset").asLong());
        CliRun text = fsck(deep(io, "fsck", "--state-dir", stateDir.toString())).expectExit(4);
        assertTrue(text.out().contains("object " + victim.getKey() + " of tenant tenant-a"), text.out());
        assertTrue(text.out().contains("fails its checksum"), text.out());
    }

    @Test
    void overlapping_mappings_in_a_snapshot_name_both_keys() throws Exception {
        Path handMade = temp.resolve("hand-made");
        Files.createDirectories(handMade);
        Path file;
        try (SnapshotFile.Writer writer = new SnapshotFile.Writer(handMade, 9)) {
            writer.beginSection(SnapshotFile.Section.MAPPINGS);
            writer.add(mapping("first", 1, 0, 3 * PAGE));
            writer.add(mapping("second", 1, 2 * PAGE, PAGE));
            writer.beginSection(SnapshotFile.Section.PENDING);
            writer.beginSection(SnapshotFile.Section.QUARANTINE);
            writer.beginSection(SnapshotFile.Section.META);
            writer.add(SnapshotMeta.newBuilder().setFormatVersion(SnapshotFile.FORMAT_VERSION).setClusterId("hand-made")
                    .setRootDir(root.toString()).setBucketCount(BUCKETS).setPageSize(PAGE).setBucketSize(BUCKET)
                    .setWalSequence(9).setCreatedMs(1_700_000_000_000L).setMappings(2).build());
            file = writer.finish();
        }
        CliRun run = fsck("fsck", "--snapshot", file.toString()).expectExit(4);
        String overlap = run.out().lines().filter(l -> l.contains("overlaps")).findFirst().orElse("");
        assertTrue(overlap.contains("'first'") && overlap.contains("'second'"), run.out());
    }

    @Test
    void repair_of_saved_state_is_refused_in_one_line() {
        CliRun run = fsck("fsck", "--state-dir", stateDir.toString(), "--repair").expectExit(8);
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().contains("--repair needs --master"), run.err());
    }

    @Test
    void a_missing_state_dir_is_an_operational_error_in_one_line() {
        Path missing = temp.resolve("nowhere");
        CliRun run = fsck("fsck", "--state-dir", missing.toString()).expectExit(8);
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().contains("no such state directory: " + missing), run.err());
    }

    @Test
    void a_bad_argument_is_an_operational_error() {
        assertEquals(8, fsck("fsck", "--state-dir", stateDir.toString(), "--bogus").exitCode());
        assertEquals(8, fsck("fsck").exitCode());
        assertEquals(8, fsck("fsck", "--state-dir", stateDir.toString(), "--deep", "--rate-limit", "fast").exitCode());
    }

    @Test
    void help_documents_the_fsck_exit_codes() {
        CliRun run = fsck("fsck", "--help").expectExit(0);
        assertTrue(run.out().contains("0  no errors"), run.out());
        assertTrue(run.out().contains("1  errors corrected"), run.out());
        assertTrue(run.out().contains("4  errors left uncorrected"), run.out());
        assertTrue(run.out().contains("8  operational error"), run.out());
    }

    static MappingRecord mapping(String key, int bucket, long offset, long size) {
        return MappingRecord.newBuilder().setTenantId("t").setKey(key)
                .setPlacement(PlacementRecord.newBuilder().setBucket(bucket).setOffset(offset).setSize(size).setCrc32C(7)).build();
    }
}
