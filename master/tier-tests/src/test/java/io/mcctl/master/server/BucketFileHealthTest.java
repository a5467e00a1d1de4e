package io.mcctl.master.server;

import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.BucketFileState;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.storage.layout.BucketFiles;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A bucket file deleted or replaced under a live master: the master finds it (its own check, or a write that failed
 * there), stops allocating into that bucket, shows it in GetStats, /metrics and /health, and allocates there again once
 * the file is back and has stayed put.
 */
@Timeout(60)
class BucketFileHealthTest {

    static final String TENANT = "t";
    static final int BUCKETS = 4;

    @TempDir
    Path root;
    TierCluster cluster;
    BucketLayout layout;

    @BeforeEach
    void start() throws IOException {
        // Checks run when the test calls them, or when a write fails: no periodic one lands between two steps.
        cluster = TierCluster.start(TierCluster.options(TierCluster.smallLayout(root, BUCKETS), Map.of("bucket_check_interval", "1h")), 1);
        layout = cluster.layout();
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    /** Offloads {@code count} keys homed in {@code bucket}; returns the bucket each was placed in. */
    private List<Integer> offloadHomedIn(int bucket, String prefix, int count) {
        List<TierWriter.ObjectSource> objects = new ArrayList<>();
        for (String key : TestObjects.keysWithHome(layout, bucket, prefix, count)) {
            objects.add(object(key, 5000));
        }
        List<Integer> placed = new ArrayList<>();
        for (TierWriter.Outcome outcome : cluster.node(0).writer().offload(TENANT, objects, false)) {
            assertTrue(outcome.ok(), outcome.toString());
            placed.add(outcome.descriptor().getBucket());
        }
        return placed;
    }

    private BucketFileState state(int bucket) {
        return cluster.stats().getBuckets(bucket).getFileState();
    }

    private String http(String path) throws IOException, InterruptedException {
        HttpResponse<String> response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + cluster.metricsPort() + path)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, response.statusCode(), path + " answers 200 while the master serves: " + response.body());
        return response.body();
    }

    @Test
    void a_deleted_bucket_file_takes_no_allocations_and_shows_in_stats_metrics_and_health_until_it_is_back() throws Exception {
        assertEquals(List.of(1, 1, 1), offloadHomedIn(1, "before-", 3));
        Files.delete(layout.bucketPath(1));

        cluster.master().bucketFiles().checkAll();

        assertEquals(BucketFileState.BUCKET_FILE_MISSING, state(1));
        assertEquals(BucketFileState.BUCKET_FILE_HEALTHY, state(0));
        for (int placed : offloadHomedIn(1, "while-missing-", 20)) {
            assertNotEquals(1, placed, "no allocation lands in a bucket whose file is missing");
        }
        String metrics = http("/metrics");
        assertTrue(metrics.contains("mcctl_master_bucket_file_unhealthy{bucket=\"1\",state=\"missing\"} 1"), metrics);
        assertTrue(metrics.contains("mcctl_master_bucket_files{state=\"missing\"} 1"), metrics);
        assertTrue(metrics.contains("mcctl_master_bucket_files{state=\"healthy\"} 3"), metrics);
        String health = http("/health");
        assertTrue(health.startsWith("degraded: 1 of 4 buckets take no allocations: bucket 1: file missing (" + layout.bucketPath(1) + ")"),
                health);

        // An operator puts a file back (here: the layout's files created again): another file than the one laid out.
        BucketFiles.initialise(layout);
        cluster.master().bucketFiles().checkAll();
        assertEquals(BucketFileState.BUCKET_FILE_REPLACED, state(1), "adopted only once it has stayed the same file over a check");
        for (int placed : offloadHomedIn(1, "while-replaced-", 5)) {
            assertNotEquals(1, placed);
        }
        cluster.master().bucketFiles().checkAll();
        assertEquals(BucketFileState.BUCKET_FILE_HEALTHY, state(1));
        assertEquals(List.of(1, 1, 1), offloadHomedIn(1, "after-", 3), "allocations land in bucket 1 again");
        assertEquals("ok\n", http("/health"));
        assertFalse(http("/metrics").contains("mcctl_master_bucket_file_unhealthy{"));
    }

    @Test
    void a_replacement_still_being_written_is_not_adopted() throws Exception {
        Path file = layout.bucketPath(2);
        Path copy = file.resolveSibling("copy");
        try (RandomAccessFile partial = new RandomAccessFile(copy.toFile(), "rw")) {
            partial.setLength(layout.bucketSize() / 2); // a copy half done
        }
        Files.move(copy, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);

        cluster.master().bucketFiles().checkAll();
        cluster.master().bucketFiles().checkAll();
        assertEquals(BucketFileState.BUCKET_FILE_REPLACED, state(2), "shorter than a bucket: not adopted however long it stays");
        for (int placed : offloadHomedIn(2, "during-copy-", 5)) {
            assertNotEquals(2, placed);
        }
        try (RandomAccessFile done = new RandomAccessFile(file.toFile(), "rw")) {
            done.setLength(layout.bucketSize());
        }
        cluster.master().bucketFiles().checkAll();
        assertEquals(BucketFileState.BUCKET_FILE_REPLACED, state(2), "grown since the last check: not yet");
        cluster.master().bucketFiles().checkAll();
        assertEquals(BucketFileState.BUCKET_FILE_HEALTHY, state(2));
    }

    @Test
    void a_write_that_fails_in_a_deleted_bucket_file_has_the_master_check_that_bucket_at_once() throws Exception {
        Files.delete(layout.bucketPath(3));
        TierCluster.Node fresh = cluster.addNode();
        String key = TestObjects.keysWithHome(layout, 3, "fails-", 1).get(0);
        TierWriter.Outcome failed = fresh.writer().offload(TENANT, List.of(object(key, 5000)), false).get(0);
        assertFalse(failed.ok(), failed.toString());
        assertEquals(3, failed.descriptor().getBucket());

        // No periodic check runs in this test: only the failed write can have made the master look.
        assertTrue(TierCluster.await(Duration.ofSeconds(10), () -> state(3) == BucketFileState.BUCKET_FILE_MISSING),
                "the master checked bucket 3 after the write there failed: " + cluster.stats().getBuckets(3));
        TierWriter.Outcome again = fresh.writer().offload(TENANT, List.of(object(key, 5000)), false).get(0);
        assertTrue(again.ok(), again.toString());
        assertNotEquals(3, again.descriptor().getBucket(), "the key spills to a bucket whose file is there");
    }

    @Test
    void a_master_started_over_a_missing_bucket_file_creates_it_empty_and_allocates_there() throws Exception {
        assertEquals(List.of(0, 0), offloadHomedIn(0, "before-", 2));
        MasterServer.Options options = cluster.master().options();
        cluster.close();
        Files.delete(layout.bucketPath(0));

        cluster = TierCluster.start(options, 1);

        assertEquals(List.of(0), cluster.master().init().recreated());
        assertEquals(layout.bucketSize(), Files.size(layout.bucketPath(0)));
        GetStatsResponse stats = cluster.stats();
        assertEquals(BucketFileState.BUCKET_FILE_HEALTHY, stats.getBuckets(0).getFileState());
        assertEquals(2, stats.getMappings(), "its mappings stay; their reads fail their checksums, which is a miss");
        assertEquals(List.of(0), offloadHomedIn(0, "after-", 1));
    }
}
