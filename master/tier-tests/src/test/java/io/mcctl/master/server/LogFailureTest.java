package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.mcctl.testkit.TestObjects;
import io.mcctl.testkit.TierCluster;
import io.mcctl.testkit.Tmpfs;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.durability.WalReader;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A write-ahead log that really fails: the state directory is a small tmpfs (the tests run as root; elsewhere the
 * test is skipped), filled until the log's next write gets ENOSPC. The master must never answer OK for a change
 * the log may not hold, must say once what happened, refuse changes with UNAVAILABLE, keep serving lookups and
 * report itself unhealthy; a restart once space is back recovers every acknowledged object.
 */
@Timeout(120)
class LogFailureTest {

    @TempDir
    Path dir;
    Path mount;

    @AfterEach
    void unmount() throws Exception {
        if (mount != null) {
            Tmpfs.unmount(mount);
        }
    }

    @Test
    void a_full_state_directory_stops_changes_once_keeps_lookups_and_loses_nothing_acknowledged() throws Exception {
        mountTmpfs("state", "128k");
        // Room for far more objects than the log can record on the tmpfs: the log fails first.
        BucketLayout layout = new BucketLayout(dir.resolve("root"), 8, TierCluster.PAGE, 16L << 20);
        MasterServer.Options options = MasterServer.Options.builder(layout).fsType("test").stateDir(mount)
                .snapshotInterval(null).build();
        List<String> acknowledged = new ArrayList<>();
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            TierCluster.Node node = cluster.node(0);
            for (int i = 0; i < 20; i++) {
                String key = "before-" + i;
                assertTrue(node.writer().offload("t", List.of(TestObjects.object(key, 3000)), false).get(0).ok(), key);
                acknowledged.add(key);
            }
            Tmpfs.fill(mount.resolve("filler"));
            // Offload until the log's write fails: every offload either succeeds (acknowledged) or fails, never both.
            Object failed = null;
            for (int i = 0; i < 20_000 && failed == null; i++) {
                String key = "during-" + i;
                try {
                    TierWriter.Outcome outcome = node.writer().offload("t", List.of(TestObjects.object(key, 100)), false).get(0);
                    if (outcome.ok()) {
                        acknowledged.add(key);
                    } else {
                        failed = outcome;
                    }
                } catch (MasterException e) {
                    failed = e;
                    assertTrue(e.getMessage().contains("takes no changes"), e.getMessage());
                }
            }
            assertNotNull(failed, "the log never failed on a full filesystem");

            String refusal = cluster.master().pages().refusal();
            assertNotNull(refusal, "the master refuses changes; the offload failed with " + failed);
            assertTrue(refusal.contains("No space left on device"), refusal);
            assertTrue(refusal.contains(mount.toString()), "names the segment: " + refusal);
            assertTrue(cluster.metric("mcctl_wal_failed_timestamp_seconds").orElseThrow() > 0, "the metrics say when the log failed");
            assertEquals(1.0, cluster.metric("mcctl_master_changes_refused").orElseThrow());

            MasterException allocate = assertThrows(MasterException.class, () -> node.client().allocate("t", "after", 10, false));
            assertTrue(allocate.getMessage().contains("takes no changes") && allocate.getMessage().contains("restart"), allocate.toString());
            io.grpc.ManagedChannel channel = io.grpc.ManagedChannelBuilder.forTarget(cluster.target()).usePlaintext().build();
            StatusRuntimeException raw;
            try {
                raw = assertThrows(StatusRuntimeException.class, () -> io.mcctl.master.proto.v1.MasterServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(10, TimeUnit.SECONDS)
                        .remove(io.mcctl.master.proto.v1.RemoveRequest.newBuilder().setTenantId("t").setKey("before-0").build()));
            } finally {
                channel.shutdownNow();
            }
            assertEquals(Status.Code.UNAVAILABLE, raw.getStatus().getCode());
            assertTrue(raw.getStatus().getDescription().contains("restart"), raw.getStatus().getDescription());

            // Lookups go on: every acknowledged object still reads back.
            List<TierReader.Outcome> read = node.reader().get("t", acknowledged);
            for (int i = 0; i < acknowledged.size(); i++) {
                assertTrue(read.get(i).ok(), acknowledged.get(i) + ": " + read.get(i));
            }
            GetStatsResponse stats = node.client().stats();
            assertEquals(refusal, stats.getChangesRefused());
            HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + cluster.master().metricsPort() + "/health")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(503, health.statusCode());
            assertTrue(health.body().contains("No space left on device"), health.body());
            String metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + cluster.master().metricsPort() + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
            assertTrue(metrics.contains("mcctl_master_changes_refused 1"), metrics);
            assertEquals(0, cluster.master().pages().reap(), "the reaper does nothing once changes are refused");
        }
        // Space comes back (the operator grows the filesystem), then the restart.
        Files.delete(mount.resolve("filler"));
        assertTrue(Tmpfs.resize(mount, "16m"));
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            assertEquals(null, cluster.master().pages().refusal());
            List<TierReader.Outcome> read = cluster.node(0).reader().get("t", acknowledged);
            for (int i = 0; i < acknowledged.size(); i++) {
                assertTrue(read.get(i).ok(), "acknowledged before the failure, lost after the restart: " + acknowledged.get(i));
                assertArrayEquals(TestObjects.content(acknowledged.get(i), acknowledged.get(i).startsWith("before") ? 3000 : 100),
                        TestObjects.bytesOf(read.get(i).data()));
            }
            assertTrue(cluster.node(0).writer().offload("t", List.of(TestObjects.object("after-restart", 10)), false).get(0).ok());
            HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + cluster.master().metricsPort() + "/health")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, health.statusCode());
            assertFalse(health.body().contains("unhealthy"));
        }
    }

    /**
     * Writers on several nodes (Session streams and unary calls) and a reader racing them, until the log fails on a full
     * state directory. A mapping is readable only once the log holds it: what the racing reader read, and what any read
     * finds once the log has failed, is in the log, and no key whose notify was not acknowledged reads back, before the
     * restart or after it. The log holds exactly the acknowledged commits (a failed write is cut off the segment), and the
     * restart brings back exactly those.
     */
    @Test
    void after_a_failed_log_write_nothing_the_log_does_not_hold_is_readable_and_a_restart_brings_back_exactly_the_log()
            throws Exception {
        mountTmpfs("state", "128k");
        BucketLayout layout = new BucketLayout(dir.resolve("root"), 8, TierCluster.PAGE, 16L << 20);
        MasterServer.Options options = MasterServer.Options.builder(layout).fsType("test").stateDir(mount)
                .snapshotInterval(null).build();
        int writers = 3;
        Set<String> acknowledged = ConcurrentHashMap.newKeySet();
        Set<String> notAcknowledged = ConcurrentHashMap.newKeySet();
        Set<String> readWhileWriting = ConcurrentHashMap.newKeySet();
        try (TierCluster cluster = TierCluster.start(options, 0)) {
            List<TierCluster.Node> nodes = List.of(cluster.addNode(true, MasterClient.Transport.STREAM),
                    cluster.addNode(true, MasterClient.Transport.STREAM), cluster.addNode(true, MasterClient.Transport.UNARY));
            TierCluster.Node readerNode = cluster.addNode(false, MasterClient.Transport.STREAM);
            AtomicReferenceArray<String> writing = new AtomicReferenceArray<>(writers);
            AtomicBoolean writersDone = new AtomicBoolean();
            ExecutorService threads = Executors.newFixedThreadPool(writers + 1);
            try {
                List<Future<?>> running = new ArrayList<>();
                for (int w = 0; w < writers; w++) {
                    int writer = w;
                    running.add(threads.submit(() -> {
                        // Each writer offloads one key at a time until one is not acknowledged (the log failed under it).
                        for (int i = 0; i < 20_000; i++) {
                            String key = "w" + writer + "-" + i;
                            writing.set(writer, key);
                            try {
                                TierWriter.Outcome outcome = nodes.get(writer).writer().offload("t", List.of(TestObjects.object(key, 100)), false).get(0);
                                if (outcome.ok()) {
                                    acknowledged.add(key);
                                    continue;
                                }
                            } catch (MasterException e) {
                                // refused, or the outcome is unknown: not acknowledged either way
                            }
                            notAcknowledged.add(key);
                            return null;
                        }
                        return null;
                    }));
                }
                Future<?> reading = threads.submit(() -> {
                    // Reads the keys being written, racing their notifies: whatever reads back must be in the log.
                    while (!writersDone.get()) {
                        List<String> keys = new ArrayList<>();
                        for (int w = 0; w < writers; w++) {
                            if (writing.get(w) != null) {
                                keys.add(writing.get(w));
                            }
                        }
                        if (keys.isEmpty()) {
                            Thread.onSpinWait();
                            continue;
                        }
                        for (TierReader.Outcome read : readerNode.reader().get("t", keys)) {
                            if (read.ok()) {
                                assertArrayEquals(TestObjects.content(read.key(), 100), TestObjects.bytesOf(read.data()), read.key());
                                readWhileWriting.add(read.key());
                            }
                        }
                    }
                    return null;
                });
                for (Future<?> writer : running) {
                    writer.get(100, TimeUnit.SECONDS);
                }
                writersDone.set(true);
                reading.get(10, TimeUnit.SECONDS);
            } finally {
                writersDone.set(true);
                threads.shutdownNow();
            }
            assertNotNull(cluster.master().pages().refusal(), "the log never failed on a full filesystem");
            assertEquals(writers, notAcknowledged.size(), "each writer stopped at its first key not acknowledged: " + notAcknowledged);

            // Every read path, once the log has failed: a key not acknowledged reads as absent, an acknowledged one reads back.
            MasterClient client = readerNode.client();
            for (String key : notAcknowledged) {
                List<TierReader.Outcome> read = readerNode.reader().get("t", List.of(key));
                assertFalse(read.get(0).ok(), key + " was never acknowledged, yet it reads back: " + read.get(0));
                assertFalse(client.exists("t", key), key + " was never acknowledged, yet it exists");
                MasterException lookup = assertThrows(MasterException.class, () -> client.getMapping("t", key), key);
                assertTrue(lookup.code() == io.mcctl.master.proto.v1.ErrorCode.OBJECT_NOT_FOUND
                        || lookup.code() == io.mcctl.master.proto.v1.ErrorCode.REPLICA_IS_NOT_READY, lookup.getMessage()); // its allocation may be in flight
                assertThrows(MasterException.class, () -> client.replicaList("t", key), key);
            }
            List<String> attempted = new ArrayList<>(acknowledged);
            attempted.addAll(notAcknowledged);
            List<TierReader.Outcome> read = readerNode.reader().get("t", attempted);
            Set<String> readable = new TreeSet<>();
            for (TierReader.Outcome one : read) {
                if (one.ok()) {
                    assertArrayEquals(TestObjects.content(one.key(), 100), TestObjects.bytesOf(one.data()), one.key());
                    readable.add(one.key());
                }
            }
            assertEquals(new TreeSet<>(acknowledged), readable, "readable once the log failed, against acknowledged");
            Set<String> listed = new TreeSet<>();
            for (String token = ""; ; ) {
                io.mcctl.master.proto.v1.ListKeysResponse page = client.listKeys("t", "", 1000, token);
                page.getKeysList().forEach(k -> listed.add(k.getKey()));
                token = page.getNextPageToken();
                if (token.isEmpty()) {
                    break;
                }
            }
            assertEquals(new TreeSet<>(acknowledged), listed, "listed once the log failed, against acknowledged");
        }

        // What the log holds: the commits of exactly the acknowledged keys (a write that failed was cut off the segment).
        Set<String> logged = new TreeSet<>();
        WalReader.read(mount, 0, false, (record, file, offset) -> {
            if (record.hasCommitted()) {
                logged.add(record.getCommitted().getKey());
            }
        });
        assertEquals(new TreeSet<>(acknowledged), logged, "commits in the log, against acknowledged");
        assertTrue(logged.containsAll(readWhileWriting), "read while being written, yet not in the log: "
                + new TreeSet<>(readWhileWriting).stream().filter(k -> !logged.contains(k)).toList());

        assertTrue(Tmpfs.resize(mount, "16m"));
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            List<String> attempted = new ArrayList<>(acknowledged);
            attempted.addAll(notAcknowledged);
            Set<String> readable = new TreeSet<>();
            for (TierReader.Outcome one : cluster.node(0).reader().get("t", attempted)) {
                if (one.ok()) {
                    readable.add(one.key());
                }
            }
            assertEquals(logged, readable, "after the restart: exactly what the log holds");
        }
    }

    @Test
    void a_write_into_a_full_root_frees_its_pages_and_says_the_filesystem_is_full() throws Exception {
        mountTmpfs("root", "2m");
        // 4 sparse buckets of 4 MiB on a 2 MiB filesystem: the layout promises more than the disk holds.
        BucketLayout layout = new BucketLayout(mount, 4, TierCluster.PAGE, 4L << 20);
        MasterServer.Options options = MasterServer.Options.builder(layout).fsType("test").stateDir(dir.resolve("state"))
                .snapshotInterval(null).build();
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            TierCluster.Node node = cluster.node(0);
            TierWriter.Outcome failed = null;
            int written = 0;
            for (int i = 0; i < 200 && failed == null; i++) {
                TierWriter.Outcome outcome = node.writer().offload("t", List.of(TestObjects.object("big-" + i, 64 << 10)), false).get(0);
                if (outcome.ok()) {
                    written++;
                } else {
                    failed = outcome;
                }
            }
            assertNotNull(failed, "the root never filled");
            assertTrue(failed.message().contains("is full (ENOSPC)") && failed.message().contains(mount.toString()), failed.message());
            GetStatsResponse stats = node.client().stats();
            assertEquals(0, stats.getInFlightAllocations(), "the failed write gave its pages back");
            assertEquals(written, stats.getMappings());
            assertEquals(null, cluster.master().pages().refusal(), "a full root is the writer's failure, not the log's");
        }
    }

    @Test
    void a_snapshot_that_fails_on_a_full_state_directory_leaves_no_temp_file_and_the_next_one_works() throws Exception {
        mountTmpfs("state", "8m");
        BucketLayout layout = new BucketLayout(dir.resolve("root"), 8, TierCluster.PAGE, 16L << 20);
        MasterServer.Options options = MasterServer.Options.builder(layout).fsType("test")
                .durability(MasterSettings.Durability.snapshot).stateDir(mount).snapshotInterval(null).build();
        try (TierCluster cluster = TierCluster.start(options, 1)) {
            TierCluster.Node node = cluster.node(0);
            for (int i = 0; i < 500; i++) {
                assertTrue(node.writer().offload("t", List.of(TestObjects.object("k-" + i + "-" + "x".repeat(200), 10)), false).get(0).ok());
            }
            Tmpfs.fill(mount.resolve("filler"));
            assertThrows(IOException.class, () -> cluster.master().snapshot());
            assertEquals(1.0, cluster.metric("mcctl_master_snapshots_total{outcome=\"failed\"}").orElseThrow());
            assertTrue(cluster.metric("mcctl_master_last_snapshot_timestamp_seconds").isEmpty(), "no snapshot was written yet");
            try (var files = Files.list(mount)) {
                List<String> names = files.map(p -> p.getFileName().toString()).toList();
                assertTrue(names.stream().noneMatch(n -> n.endsWith(".tmp") || n.contains("tmp")), "a temp file was left: " + names);
            }
            Files.delete(mount.resolve("filler"));
            assertEquals(500, cluster.master().snapshot().mappings(), "with space back the next snapshot works");
            assertEquals(1.0, cluster.metric("mcctl_master_snapshots_total{outcome=\"written\"}").orElseThrow());
            assertTrue(cluster.metric("mcctl_master_last_snapshot_bytes").orElseThrow() > 0);
            assertTrue(cluster.metric("mcctl_master_last_snapshot_timestamp_seconds").orElseThrow() > 0);
        }
    }

    /** Mounts a tmpfs of {@code size} at {@code name} under the test's directory as {@link #mount}; skips the test when it cannot. */
    private void mountTmpfs(String name, String size) throws Exception {
        Path target = dir.resolve(name);
        Files.createDirectories(target);
        assumeTrue(Tmpfs.mount(target, size), "needs root to mount a tmpfs");
        mount = target;
    }
}
