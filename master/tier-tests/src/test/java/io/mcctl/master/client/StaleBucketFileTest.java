package io.mcctl.master.client;

import static io.mcctl.testkit.TestObjects.bytesOf;
import static io.mcctl.testkit.TestObjects.content;
import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.testkit.TestIo;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A bucket file deleted or replaced under a long-lived writer, whose fd pool still holds the old file open: its pwrites
 * succeed, into a file no other node can open. The writer must never acknowledge such an object: before it notifies it
 * checks that each file it wrote through is still the one at the path, writes the objects again into the file now there,
 * or fails them when there is none. A fresh node then reads every key the writer acknowledged.
 */
@Timeout(60)
@ParameterizedClass(name = "{0}")
@EnumSource(TestIo.class)
class StaleBucketFileTest {

    /** The IO the nodes move bytes through: every test here runs over POSIX and over USRBIO. */
    @Parameter
    TestIo ioKind;

    static final String TENANT = "t";
    static final int BUCKETS = 4;
    static final int STALE_BUCKET = 1;
    static final int SIZE = 6000;

    @TempDir
    Path root;
    TierCluster cluster;
    BucketLayout layout;
    TierCluster.Node writer;

    @BeforeEach
    void start_a_writer_that_has_every_bucket_file_open() throws IOException {
        // The master's own check of its files would make it place keys elsewhere once it found the file replaced; here
        // only the writers' checks are under test, so it checks only when a write fails.
        cluster = TierCluster.start(TierCluster.options(TierCluster.smallLayout(root, BUCKETS), java.util.Map.of("bucket_check_interval", "1h")), 1, ioKind);
        layout = cluster.layout();
        writer = cluster.node(0);
        List<TierWriter.ObjectSource> warm = new ArrayList<>();
        for (int bucket = 0; bucket < BUCKETS; bucket++) {
            for (String key : TestObjects.keysWithHome(layout, bucket, "warm-", 3)) {
                warm.add(object(key, SIZE));
            }
        }
        for (TierWriter.Outcome outcome : writer.writer().offload(TENANT, warm, false)) {
            assertTrue(outcome.ok(), outcome.toString());
        }
        assertEquals(BUCKETS, writer.tier().openFiles());
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    /** Keys of every bucket, ten homed in each. */
    private List<String> batchKeys(String prefix) {
        List<String> keys = new ArrayList<>();
        for (int bucket = 0; bucket < BUCKETS; bucket++) {
            keys.addAll(TestObjects.keysWithHome(layout, bucket, prefix, 10));
        }
        return keys;
    }

    /** A writer of the same node (the same fd pool) that runs {@code act} once the batch is allocated, before it writes. */
    private TierWriter writerThat(Runnable act) {
        return new TierWriter(writer.tier(), new TierWriter.Listener() {
            @Override
            public void allocated(List<String> keys) {
                act.run();
            }
        });
    }

    private List<TierWriter.Outcome> offload(TierWriter through, List<String> keys) {
        List<TierWriter.ObjectSource> objects = new ArrayList<>();
        for (String key : keys) {
            objects.add(object(key, SIZE));
        }
        return through.offload(TENANT, objects, false);
    }

    /** Every acknowledged key of {@code outcomes} is read, with its bytes, by a node that opens the files afresh. */
    private void aFreshNodeReadsEveryAcknowledgedKey(List<TierWriter.Outcome> outcomes) throws IOException {
        List<String> acknowledged = new ArrayList<>();
        for (TierWriter.Outcome outcome : outcomes) {
            if (outcome.ok()) {
                acknowledged.add(outcome.key());
            }
        }
        TierCluster.Node fresh = cluster.addNode(false);
        List<TierReader.Outcome> read = fresh.reader().get(TENANT, acknowledged);
        for (int i = 0; i < acknowledged.size(); i++) {
            assertEquals(TierReader.Status.OK, read.get(i).status(), "acknowledged, so every node reads it: " + read.get(i));
            assertArrayEquals(content(acknowledged.get(i), SIZE), bytesOf(read.get(i).data()));
        }
    }

    @Test
    void objects_written_into_a_bucket_file_deleted_under_the_writer_fail_and_their_pages_are_freed() throws IOException {
        Path file = layout.bucketPath(STALE_BUCKET);
        List<String> keys = batchKeys("after-delete-");

        List<TierWriter.Outcome> outcomes = offload(writerThat(() -> delete(file)), keys);

        int inDeletedFile = 0;
        for (TierWriter.Outcome outcome : outcomes) {
            if (outcome.descriptor() != null && outcome.descriptor().getBucket() == STALE_BUCKET) {
                inDeletedFile++;
                assertEquals(ErrorCode.INTERNAL_ERROR, outcome.code(), "written into the deleted file: never acknowledged: " + outcome);
                assertTrue(outcome.message().contains(file + " was deleted while this node had it open"), outcome.message());
                assertFalse(writer.client().exists(TENANT, outcome.key()));
            } else {
                assertTrue(outcome.ok(), outcome.toString());
            }
        }
        assertEquals(10, inDeletedFile, "the keys homed in the deleted file's bucket were placed there (allocated before it went)");
        assertEquals(0, writer.client().stats().getInFlightAllocations(), "their pages were freed at once");
        assertEquals(10, writer.metrics().leaksPreventedTotal());
        aFreshNodeReadsEveryAcknowledgedKey(outcomes);
    }

    @Test
    void objects_written_into_a_bucket_file_replaced_under_the_writer_are_written_again_into_the_new_file() throws IOException {
        Path file = layout.bucketPath(STALE_BUCKET);
        List<String> keys = batchKeys("after-replace-");

        List<TierWriter.Outcome> outcomes = offload(writerThat(() -> replaceWithEmptyCopy(file)), keys);

        for (TierWriter.Outcome outcome : outcomes) {
            assertTrue(outcome.ok(), outcome.toString());
        }
        assertEquals(10, writer.metrics().staleFileRewritesTotal(), "the ten objects of the replaced file's bucket, once each");
        aFreshNodeReadsEveryAcknowledgedKey(outcomes);
        // The writer's own pool took the new file: its next batch there needs no rewrite.
        List<TierWriter.Outcome> next = offload(writer.writer(), batchKeys("next-"));
        next.forEach(outcome -> assertTrue(outcome.ok(), outcome.toString()));
        assertEquals(10, writer.metrics().staleFileRewritesTotal());
        aFreshNodeReadsEveryAcknowledgedKey(next);
    }

    @Test
    void a_reader_holding_a_replaced_bucket_file_open_reads_the_new_file() throws IOException {
        TierCluster.Node reader = cluster.addNode(false);
        List<String> before = TestObjects.keysWithHome(layout, STALE_BUCKET, "warm-", 3);
        for (TierReader.Outcome outcome : reader.reader().get(TENANT, before)) {
            assertTrue(outcome.ok(), outcome.toString()); // the reader now holds the bucket file open
        }
        replaceWithEmptyCopy(layout.bucketPath(STALE_BUCKET));
        // A node that opens the files afresh writes into the new file.
        List<String> keys = TestObjects.keysWithHome(layout, STALE_BUCKET, "into-new-file-", 5);
        List<TierWriter.Outcome> outcomes = offload(cluster.addNode().writer(), keys);
        outcomes.forEach(outcome -> assertTrue(outcome.ok() && outcome.descriptor().getBucket() == STALE_BUCKET, outcome.toString()));

        List<TierReader.Outcome> read = reader.reader().get(TENANT, keys);
        for (int i = 0; i < keys.size(); i++) {
            assertEquals(TierReader.Status.OK, read.get(i).status(), "read from the file now at the path: " + read.get(i));
            assertArrayEquals(content(keys.get(i), SIZE), bytesOf(read.get(i).data()));
        }
    }

    private static void delete(Path file) {
        try {
            Files.delete(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Another file at the path, at once (a rename over it): as long as a bucket, and empty. */
    private void replaceWithEmptyCopy(Path file) {
        try {
            Path fresh = file.resolveSibling(file.getFileName() + ".new");
            try (RandomAccessFile created = new RandomAccessFile(fresh.toFile(), "rw")) {
                created.setLength(layout.bucketSize());
            }
            Files.move(fresh, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
