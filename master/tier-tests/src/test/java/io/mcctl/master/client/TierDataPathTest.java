package io.mcctl.master.client;

import static io.mcctl.testkit.TestObjects.bytesOf;
import static io.mcctl.testkit.TestObjects.content;
import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.testkit.TestIo;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.storage.io.BucketFileIo;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Offload on one node, get on another: real master, real gRPC, real bucket files, separate fd pools. */
@Timeout(60)
@ParameterizedClass(name = "{0}")
@EnumSource(TestIo.class)
class TierDataPathTest {

    /** The IO the nodes move bytes through: every test here runs over POSIX and over USRBIO. */
    @Parameter
    TestIo ioKind;

    static final String TENANT = "tenant-1";
    static final int[] SIZES = {1, 4095, 4096, 4097, 3 * 4096 + 17, 100_000};

    @TempDir
    Path root;
    TierCluster cluster;
    TierCluster.Node a;
    TierCluster.Node b;

    @BeforeEach
    void start() throws IOException {
        cluster = TierCluster.start(root, 8, 1, ioKind);
        a = cluster.node(0);
        b = cluster.addNode(false); // a reader: its pool opens bucket files read-only
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    List<String> offloadAll(TierCluster.Node node, String prefix) {
        List<TierWriter.ObjectSource> objects = new ArrayList<>();
        List<String> keys = new ArrayList<>();
        for (int size : SIZES) {
            String key = prefix + size;
            keys.add(key);
            objects.add(object(key, size));
        }
        List<TierWriter.Outcome> outcomes = node.writer().offload(TENANT, objects, false);
        for (TierWriter.Outcome outcome : outcomes) {
            assertTrue(outcome.ok(), outcome.toString());
        }
        return keys;
    }

    @Test
    void node_B_reads_byte_exact_what_node_A_wrote_opening_the_files_itself() {
        List<String> keys = offloadAll(a, "obj-");
        assertEquals(0, b.tier().openFiles(), "B has touched no file yet");
        assertTrue(a.tier().openFiles() > 0);

        List<TierReader.Outcome> read = b.reader().get(TENANT, keys);
        Set<String> files = new HashSet<>();
        for (int i = 0; i < keys.size(); i++) {
            TierReader.Outcome outcome = read.get(i);
            assertEquals(TierReader.Status.OK, outcome.status(), outcome.toString());
            assertEquals(keys.get(i), outcome.key());
            assertArrayEquals(content(keys.get(i), SIZES[i]), bytesOf(outcome.data()), keys.get(i));
            files.add(outcome.descriptor().getFilePath());
        }
        assertEquals(files.size(), b.tier().openFiles(), "B opened every file it read, once each");
        assertEquals(keys.size(), b.metrics().readsTotal());
        assertEquals(0, a.metrics().readsTotal(), "no read went through A");
        long pages = 0;
        for (int size : SIZES) {
            pages += (size + 4095) / 4096;
        }
        assertEquals(pages, a.metrics().pagesWrittenTotal());
    }

    @Test
    void the_bytes_are_in_the_bucket_file_at_the_descriptors_offset_with_the_descriptors_checksum() throws IOException {
        List<String> keys = offloadAll(a, "raw-");
        for (int i = 0; i < keys.size(); i++) {
            DistributedDiskDescriptor d = a.client().getMapping(TENANT, keys.get(i)).getDistributedDisk();
            assertEquals(root.toAbsolutePath().normalize(), Path.of(d.getFilePath()).getParent());
            byte[] onDisk = new byte[(int) d.getObjectSize()];
            try (RandomAccessFile file = new RandomAccessFile(d.getFilePath(), "r")) {
                file.seek(d.getOffset());
                file.readFully(onDisk);
            }
            assertArrayEquals(content(keys.get(i), SIZES[i]), onDisk);
            assertEquals(BucketFileIo.crc32c(ByteBuffer.wrap(onDisk)), d.getCrc32C());
            assertEquals(0, d.getOffset() % 4096, "objects start on a page");
            assertEquals(cluster.layout().bucketSize(), Path.of(d.getFilePath()).toFile().length(), "bucket files never grow past their size");
        }
    }

    @Test
    void a_corrupted_object_reads_as_CORRUPT_never_as_data() throws IOException {
        String key = "fragile";
        assertTrue(a.writer().offload(TENANT, List.of(object(key, 10_000)), false).get(0).ok());
        DistributedDiskDescriptor d = a.client().getMapping(TENANT, key).getDistributedDisk();
        try (RandomAccessFile file = new RandomAccessFile(d.getFilePath(), "rw")) {
            file.seek(d.getOffset() + 5000);
            int original = file.read();
            file.seek(d.getOffset() + 5000);
            file.write(original ^ 0x40);
        }
        TierReader.Outcome outcome = b.reader().get(TENANT, List.of(key)).get(0);
        assertEquals(TierReader.Status.CORRUPT, outcome.status(), outcome.toString());
        assertNull(outcome.data());
        assertEquals(1, b.metrics().checksumFailuresTotal());
        assertEquals(0, b.metrics().readsTotal());
    }

    @Test
    void a_missing_key_is_NOT_FOUND_and_a_key_being_written_is_NOT_READY() {
        a.client().allocate(TENANT, "being-written", 100, false);
        List<TierReader.Outcome> read = b.reader().get(TENANT, List.of("never-written", "being-written"));
        assertEquals(TierReader.Status.NOT_FOUND, read.get(0).status());
        assertEquals(TierReader.Status.NOT_READY, read.get(1).status());
        assertEquals(0, b.tier().openFiles());
    }

    @Test
    void offloading_a_key_again_is_OBJECT_ALREADY_EXISTS_unless_overwrite_and_then_readers_see_the_new_bytes() {
        String key = "versioned";
        assertTrue(a.writer().offload(TENANT, List.of(object(key, 5000)), false).get(0).ok());
        TierWriter.Outcome again = a.writer().offload(TENANT, List.of(object("other-content", 7000)), false).get(0);
        assertTrue(again.ok(), "a different key is fine");
        TierWriter.Outcome refused = a.writer().offload(TENANT, List.of(new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(content("v2", 7000))))), false).get(0);
        assertEquals(ErrorCode.OBJECT_ALREADY_EXISTS, refused.code());
        assertArrayEquals(content(key, 5000), bytesOf(b.reader().get(TENANT, List.of(key)).get(0).data()), "the old bytes are untouched");

        TierWriter.Outcome replaced = a.writer().offload(TENANT, List.of(new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(content("v2", 7000))))), true).get(0);
        assertTrue(replaced.ok(), replaced.toString());
        assertArrayEquals(content("v2", 7000), bytesOf(b.reader().get(TENANT, List.of(key)).get(0).data()));
        assertEquals(2, a.client().stats().getMappings());
    }

    @Test
    void a_removed_key_reads_as_NOT_FOUND() {
        assertTrue(a.writer().offload(TENANT, List.of(object("gone", 3000)), false).get(0).ok());
        b.client().remove(TENANT, "gone");
        assertEquals(TierReader.Status.NOT_FOUND, a.reader().get(TENANT, List.of("gone")).get(0).status());
        assertTrue(!a.client().exists(TENANT, "gone"));
    }

    @Test
    void a_batch_of_small_objects_is_written_in_one_submission_and_read_in_one() {
        org.junit.jupiter.api.Assumptions.assumeTrue(ioKind == TestIo.USRBIO, "only USRBIO counts its rounds");
        TierReader oneThread = new TierReader(b.tier(), 1);
        long writes = rounds(a.tier());
        List<String> keys = offloadAll(a, "batch-"); // six objects, 111 KiB in all: one submission of writes
        assertEquals(writes + 1, rounds(a.tier()), "the batch's writes went as one round");
        long reads = rounds(b.tier());
        for (TierReader.Outcome outcome : oneThread.get(TENANT, keys)) {
            assertTrue(outcome.ok(), outcome.toString());
        }
        assertEquals(reads + 1, rounds(b.tier()), "the batch's reads went as one round");
    }

    private static long rounds(TierNode tier) {
        return ((io.mcctl.storage.io.UsrbioBucketIo) tier.io().io()).rounds();
    }
}
