package io.mcctl.master.client;

import static io.mcctl.testkit.TestObjects.bytesOf;
import static io.mcctl.testkit.TestObjects.content;
import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.testkit.TestIo;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.storage.io.BucketFileMissingException;
import io.mcctl.storage.io.OpenFiles;
import io.mcctl.storage.layout.BucketFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A batch in which some writes really fail: the bucket file those keys land in is deleted before a fresh
 * node (empty fd pool) offloads, so its pwrite cannot open the file. Exactly the failed keys' pages must be
 * freed at once; the rest of the batch commits.
 */
@Timeout(60)
@ParameterizedClass(name = "{0}")
@EnumSource(TestIo.class)
class FailedWriteTest {

    /** The IO the nodes move bytes through: every test here runs over POSIX and over USRBIO. */
    @Parameter
    TestIo ioKind;

    static final String TENANT = "t";
    static final int GOOD_BUCKET_1 = 1;
    static final int GOOD_BUCKET_2 = 2;
    static final int BAD_BUCKET = 6;

    @TempDir
    Path root;
    TierCluster cluster;

    @BeforeEach
    void start() throws IOException {
        // The master checks its bucket files only when a write fails here: a periodic check could find the deleted file
        // first, and the keys meant to fail would go to another bucket.
        cluster = TierCluster.start(TierCluster.options(TierCluster.smallLayout(root, 8), Map.of("bucket_check_interval", "1h")), 0, ioKind);
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    @Test
    void the_failed_keys_pages_are_freed_at_once_and_the_rest_of_the_batch_commits() throws IOException {
        var layout = cluster.layout();
        String good1 = TestObjects.keysWithHome(layout, GOOD_BUCKET_1, "good-", 1).get(0);
        List<String> good2 = TestObjects.keysWithHome(layout, GOOD_BUCKET_2, "good-", 2);
        List<String> bad = TestObjects.keysWithHome(layout, BAD_BUCKET, "bad-", 2);
        Map<String, Integer> sizes = Map.of(good1, 9000, good2.get(0), 4096, good2.get(1), 1, bad.get(0), 20_000, bad.get(1), 4097);
        List<String> batch = List.of(bad.get(0), good1, good2.get(0), bad.get(1), good2.get(1));

        Path badFile = layout.bucketPath(BAD_BUCKET);
        Files.delete(badFile);
        TierCluster.Node b = cluster.addNode();
        assertEquals(0, b.tier().openFiles());

        List<TierWriter.ObjectSource> objects = new ArrayList<>();
        for (String key : batch) {
            objects.add(object(key, sizes.get(key)));
        }
        List<TierWriter.Outcome> outcomes = b.writer().offload(TENANT, objects, false);

        long committedPages = 0;
        for (int i = 0; i < batch.size(); i++) {
            String key = batch.get(i);
            TierWriter.Outcome outcome = outcomes.get(i);
            assertEquals(key, outcome.key());
            if (bad.contains(key)) {
                assertEquals(ErrorCode.INTERNAL_ERROR, outcome.code(), outcome.toString());
                assertTrue(outcome.message().contains(badFile.toString()), "names the file: " + outcome.message());
                assertTrue(outcome.message().contains("mounted at " + root.toAbsolutePath().normalize()),
                        "says to check the mount: " + outcome.message());
                assertFalse(b.client().exists(TENANT, key));
            } else {
                assertTrue(outcome.ok(), outcome.toString());
                committedPages += (sizes.get(key) + 4095) / 4096;
            }
        }

        GetStatsResponse stats = b.client().stats();
        assertEquals(0, stats.getInFlightAllocations(), "nothing left waiting for a deadline");
        assertEquals(3, stats.getMappings());
        assertEquals(committedPages, stats.getPagesAllocated(), "allocated pages are exactly the committed keys' pages");
        assertEquals(0, stats.getBuckets(BAD_BUCKET).getPagesAllocated());
        assertEquals(bad.size(), b.metrics().leaksPreventedTotal());
        assertEquals(committedPages, b.metrics().pagesWrittenTotal());
        assertFalse(Files.exists(badFile), "a writer never creates a bucket file");

        // With the file back, the same node retries the failed keys and they commit.
        BucketFiles.initialise(layout);
        List<TierWriter.ObjectSource> retry = new ArrayList<>();
        for (String key : bad) {
            retry.add(object(key, sizes.get(key)));
        }
        for (TierWriter.Outcome outcome : b.writer().offload(TENANT, retry, false)) {
            assertTrue(outcome.ok(), outcome.toString());
        }
        TierCluster.Node reader = cluster.addNode();
        List<TierReader.Outcome> read = reader.reader().get(TENANT, batch);
        for (int i = 0; i < batch.size(); i++) {
            assertEquals(TierReader.Status.OK, read.get(i).status(), read.get(i).toString());
            assertArrayEquals(content(batch.get(i), sizes.get(batch.get(i))), bytesOf(read.get(i).data()));
        }
        assertEquals(Set.copyOf(batch).size(), reader.client().stats().getMappings());
    }

    @Test
    void the_files_of_a_batch_are_flushed_at_once_and_a_file_deleted_under_its_writer_is_named_alone() throws IOException {
        var layout = cluster.layout();
        TierCluster.Node b = cluster.addNode();
        Map<Path, OpenFiles.OpenFile<?>> written = new LinkedHashMap<>();
        for (int bucket = 0; bucket < 8; bucket++) {
            written.put(layout.bucketPath(bucket), b.tier().openForWrite(layout.bucketPath(bucket)));
        }
        Path missing = layout.bucketPath(BAD_BUCKET);
        Files.delete(missing);

        Map<Path, TierNode.Flushed> flushed = b.tier().syncAll(written);

        assertEquals(written.keySet(), flushed.keySet());
        for (Map.Entry<Path, TierNode.Flushed> entry : flushed.entrySet()) {
            if (entry.getKey().equals(missing)) {
                assertInstanceOf(BucketFileMissingException.class, entry.getValue().failed());
                assertTrue(entry.getValue().failed().getMessage().contains(missing + " was deleted"), entry.getValue().failed().getMessage());
            } else {
                assertNull(entry.getValue().failed(), entry.toString());
                assertSame(written.get(entry.getKey()), entry.getValue().current(), "flushed, and still the file at the path");
            }
        }
        Path one = layout.bucketPath(GOOD_BUCKET_1);
        assertSame(written.get(one), b.tier().syncAll(Map.of(one, written.get(one))).get(one).current(), "one file is flushed on the caller's thread");
        assertFalse(Files.exists(missing), "a flush never creates a bucket file");
    }

    @Test
    void a_reader_whose_bucket_file_is_missing_gets_MOUNT_MISSING_naming_the_file() throws IOException {
        TierCluster.Node a = cluster.addNode();
        String key = TestObjects.keysWithHome(cluster.layout(), BAD_BUCKET, "vanishing-", 1).get(0);
        assertTrue(a.writer().offload(TENANT, List.of(object(key, 5000)), false).get(0).ok());
        Path file = cluster.layout().bucketPath(BAD_BUCKET);
        Files.delete(file);
        TierCluster.Node b = cluster.addNode();
        TierReader.Outcome outcome = b.reader().get(TENANT, List.of(key)).get(0);
        assertEquals(TierReader.Status.MOUNT_MISSING, outcome.status(), outcome.toString());
        assertTrue(outcome.message().contains(file.toString()), outcome.message());
        assertTrue(outcome.message().contains("mounted"), outcome.message());
    }
}
