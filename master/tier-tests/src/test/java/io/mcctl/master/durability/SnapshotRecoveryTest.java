package io.mcctl.master.durability;

import io.mcctl.master.service.StateVisitor;
import io.mcctl.master.service.ShardCopy;
import io.mcctl.master.service.QuarantinedRange;
import static io.mcctl.testkit.StateFixture.assertSameState;
import static io.mcctl.testkit.StateFixture.capture;
import static io.mcctl.testkit.StateFixture.dump;
import static io.mcctl.testkit.FileDamage.invertByte;
import static io.mcctl.testkit.StateFixture.layoutRecord;
import static io.mcctl.testkit.StateFixture.recover;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.master.proto.v1.WalRecord;
import io.mcctl.master.service.Change;
import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.Result;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.testkit.StateFixture;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Snapshots, and recovery from a snapshot plus the log, against the live state they were taken from. */
@Timeout(90)
class SnapshotRecoveryTest {

    static final long PAGE = StateFixture.PAGE;
    static final int SNAPSHOTS = 3;
    static final int PRELOADED = 15_000;

    @TempDir
    Path dir;

    BucketLayout layout() {
        return StateFixture.layout(dir.resolve("root"));
    }

    Path stateDir() {
        return dir.resolve("state");
    }

    // ---- helpers ----

    static Placement allocate(PageService pages, String tenant, String key, long size, boolean overwrite) {
        Result<Placement> r = pages.allocate(tenant, key, size, overwrite);
        assertTrue(r.isOk(), () -> "allocate " + tenant + "/" + key + ": " + r);
        return r.value();
    }

    static Placement commit(PageService pages, String tenant, String key, long size, boolean overwrite) {
        Placement p = allocate(pages, tenant, key, size, overwrite);
        Placement written = p.withCrc(key.hashCode() ^ (int) size);
        Result<Void> r = pages.notifySuccess(tenant, key, written);
        assertTrue(r.isOk(), () -> "notify " + tenant + "/" + key + ": " + r);
        return written;
    }

    /** Looks the key up (a read lease), then removes it: its pages wait in quarantine. */
    static void removeWhileLeased(PageService pages, String tenant, String key) {
        assertTrue(pages.getMapping(tenant, key).isOk());
        assertTrue(pages.remove(tenant, key).isOk());
    }

    /**
     * One deterministic round of changes of every kind: mappings in two tenants (the same key names in
     * both), in-flight allocations, a leased remove and a leased overwrite (quarantine), a plain remove and a freed allocation.
     */
    static void changes(PageService pages, String round) {
        changes(pages, round, () -> { });
    }

    /** {@link #changes(PageService, String)} over a log: {@code awaitLog} waits for it before the commits are read, as a client's notify is answered. */
    static void changes(PageService pages, String round, Runnable awaitLog) {
        for (int i = 0; i < 12; i++) {
            commit(pages, "alpha", round + "-shared-" + i, (i + 1) * PAGE - 7, false);
            commit(pages, "beta", round + "-shared-" + i, (12 - i) * PAGE + 1, false);
        }
        commit(pages, "alpha", round + "-alpha-only", 3 * PAGE, false);
        awaitLog.run(); // a lookup finds a mapping once the log holds its commit
        allocate(pages, "alpha", round + "-in-flight", 2 * PAGE + 5, false);
        allocate(pages, "beta", round + "-shared-0", 4 * PAGE, true); // an overwrite still in flight
        removeWhileLeased(pages, "alpha", round + "-shared-1");
        assertTrue(pages.getMapping("beta", round + "-shared-2").isOk());
        commit(pages, "beta", round + "-shared-2", PAGE, true); // the replaced mapping is leased: quarantined
        assertTrue(pages.remove("alpha", round + "-shared-3").isOk()); // no lease: freed at once
        Placement freed = allocate(pages, "alpha", round + "-freed", PAGE, false);
        assertTrue(pages.free("alpha", round + "-freed", freed).isOk());
    }

    /** A page service logging into a real write-ahead log, as the master runs it. */
    final class LoggedService implements AutoCloseable {
        final PageService pages;
        final WriteAheadLog wal;
        final Snapshotter snapshotter;

        LoggedService(Duration deadline, Duration lease, int retention, long segmentBytes) throws IOException {
            this(layout(), deadline, lease, retention, segmentBytes);
        }

        LoggedService(BucketLayout layout, Duration deadline, Duration lease, int retention, long segmentBytes) throws IOException {
            wal = new WriteAheadLog(stateDir(), "test-cluster", 0, segmentBytes, System::currentTimeMillis);
            pages = PageService.builder(layout).allocationDeadline(deadline).readLease(lease).changeLog(wal.changeLog()).build();
            snapshotter = new Snapshotter(pages, wal, stateDir(), layoutRecord(layout), retention, Map.of(), 0);
        }

        void durable() throws Exception {
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() throws IOException {
            wal.close();
        }
    }

    static boolean await(Duration limit, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + limit.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                return false;
            }
            Thread.sleep(5);
        }
        return true;
    }

    // ---- round trip ----

    @Test
    void a_snapshot_round_trip_restores_identical_lookups_in_flight_allocations_quarantine_and_allocator_counts() throws Exception {
        AtomicLong now = new AtomicLong(1_000_000_000L);
        PageService live = PageService.builder(layout()).allocationDeadline(Duration.ofSeconds(30)).readLease(Duration.ofSeconds(10)).nanoClock(now::get).build();
        changes(live, "r");
        now.addAndGet(1_000_000_000L);
        assertTrue(live.inFlightCount() >= 2 && live.quarantinedPageCount() > 0, "the state has all three kinds of pages");

        Snapshotter snapshotter = new Snapshotter(live, null, stateDir(), layoutRecord(layout()), 2, Map.of("page_size", "4KiB"), 0);
        Snapshotter.Taken taken = snapshotter.take();
        assertEquals(live.mappingCount(), taken.mappings());
        assertEquals(live.inFlightCount(), taken.inFlight());
        assertEquals(2, taken.quarantined());
        SnapshotFile.Reader reader = SnapshotFile.open(taken.path());
        reader.verify();
        SnapshotMeta meta = reader.meta();
        assertEquals(SnapshotFile.FORMAT_VERSION, meta.getFormatVersion());
        assertEquals(1, meta.getWalSequence());
        assertEquals("test-cluster", meta.getClusterId());
        assertEquals(8, meta.getBucketCount());
        assertEquals("4KiB", meta.getSettingsMap().get("page_size"));
        assertEquals(List.of(), Files.list(stateDir()).filter(p -> p.toString().endsWith(".tmp")).toList(), "no temp file left");

        AtomicLong later = new AtomicLong(5_000_000_000L);
        StateFixture.Restored restored = recover(stateDir(), layout(), false, later::get);
        assertEquals(taken.path(), restored.recovered().snapshot);
        assertEquals(List.of(), restored.recovered().warnings);
        PageService back = restored.pages();
        assertSameState(capture(live).afterCrash(back), dump(back), "snapshot round trip");
        for (String tenant : List.of("alpha", "beta", "gamma")) {
            for (int i = 0; i < 12; i++) {
                String key = "r-shared-" + i;
                assertEquals(String.valueOf(live.peek(tenant, key)), String.valueOf(back.peek(tenant, key)), tenant + "/" + key);
            }
        }
        for (int b = 0; b < layout().bucketCount(); b++) {
            assertEquals(live.allocator(b).allocatedCount(), back.allocator(b).allocatedCount(), "bucket " + b);
        }

        // The restored allocations and quarantine behave as the live ones would.
        Placement inFlight = findPending(live, "alpha", "r-in-flight");
        assertTrue(back.notifySuccess("alpha", "r-in-flight", inFlight.withCrc(99)).isOk(), "an in-flight allocation commits after restore");
        assertEquals(inFlight.withCrc(99), back.peek("alpha", "r-in-flight").value());
        later.addAndGet(11_000_000_000L); // past every read lease
        back.reap();
        assertEquals(0, back.quarantinedPageCount(), "quarantine is released once its lease has passed");
        later.addAndGet(30_000_000_000L); // past every allocation deadline
        back.reap();
        assertEquals(0, back.inFlightCount(), "the other in-flight allocations expire at their deadline");
        long mappingPages = 0;
        for (String tenant : List.of("alpha", "beta")) {
            for (Map.Entry<String, Placement> e : back.listKeys(tenant, "", 10_000, "").value().keys()) {
                mappingPages += layout().pagesFor(e.getValue().size());
            }
        }
        long allocated = 0;
        for (int b = 0; b < layout().bucketCount(); b++) {
            allocated += back.allocator(b).allocatedCount();
        }
        assertEquals(mappingPages, allocated, "every allocated page belongs to a mapping: nothing leaked");
    }

    static Placement findPending(PageService pages, String tenant, String key) throws IOException {
        List<Placement> found = new ArrayList<>();
        pages.visit(new StateVisitor() {
            @Override
            public void mapping(String t, String k, Placement p, boolean pinned) {
            }

            @Override
            public void inFlight(Change.Allocated a) {
                if (a.tenant().equals(tenant) && a.key().equals(key)) {
                    found.add(a.placement().withCrc(0));
                }
            }

            @Override
            public void quarantined(QuarantinedRange q) {
            }
        });
        assertEquals(1, found.size(), tenant + "/" + key + " in flight");
        return found.get(0);
    }

    // ---- fuzzy snapshots under load ----

    @Test
    void snapshots_taken_while_4_threads_change_state_plus_the_log_recover_exactly_the_live_state() throws Exception {
        Duration deadline = Duration.ofMillis(200);
        Duration lease = Duration.ofMillis(250);
        Map<WalRecord.ChangeCase, AtomicLong> kinds = new EnumMap<>(WalRecord.ChangeCase.class);
        for (WalRecord.ChangeCase c : WalRecord.ChangeCase.values()) {
            kinds.put(c, new AtomicLong());
        }
        AtomicLong replacements = new AtomicLong();
        AtomicLong ops = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        List<Path> snapshots = new ArrayList<>();
        StateFixture.Captured live;
        // A large layout and many mappings make each export take a while, so that the workers change many keys
        // between the sequence a snapshot records and the moment their shard is copied (the fuzzy window).
        BucketLayout big = new BucketLayout(dir.resolve("root"), 64, PAGE, 16L << 20);
        try (LoggedService service = new LoggedService(big, deadline, lease, 5, 64L << 20)) {
            PageService preloading = service.pages;
            for (int i = 0; i < PRELOADED; i++) {
                String key = "preloaded-" + i;
                Result<Placement> allocated;
                do { // the deadline is short for the workers' sake: a pause here may outlast it, then allocate again
                    allocated = preloading.allocate("bulk", key, PAGE, false);
                    assertTrue(allocated.isOk() || allocated.error() == io.mcctl.master.proto.v1.ErrorCode.REPLICA_IS_NOT_READY,
                            allocated::toString);
                } while (!allocated.isOk() || !preloading.notifySuccess("bulk", key, allocated.value().withCrc(i)).isOk());
            }
            io.mcctl.master.service.ChangeLog log = service.wal.changeLog();
            // The same state from here on, its changes counted by kind on their way to the log.
            PageService pages = PageService.serving(preloading).changeLog(change -> {
                kinds.get(ChangeCodec.encode(change).getChangeCase()).incrementAndGet();
                if (change instanceof Change.Committed c && c.replaced() != null) {
                    replacements.incrementAndGet();
                }
                return log.append(change);
            }).build();
            List<Thread> workers = new ArrayList<>();
            List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
            for (int w = 0; w < 4; w++) {
                int worker = w;
                Thread t = new Thread(() -> {
                    try {
                        work(service, pages, worker, ops, stop);
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }, "worker-" + w);
                workers.add(t);
                t.start();
            }
            Duration limit = Duration.ofSeconds(30);
            try {
                for (int s = 0; s < SNAPSHOTS; s++) {
                    long target = ops.get() + 2000;
                    assertTrue(await(limit, () -> ops.get() >= target || !failures.isEmpty()), "workers stalled");
                    if (s == SNAPSHOTS / 2) {
                        // the middle snapshot comes after expiries and releases have begun
                        assertTrue(await(limit, () -> kinds.get(WalRecord.ChangeCase.RELEASED).get() > 0
                                && pages.expiredAllocationsTotal() > 0 || !failures.isEmpty()), "no release or expiry happened");
                    }
                    snapshots.add(service.snapshotter.take().path()); // while the workers keep going
                }
                Map<WalRecord.ChangeCase, Long> before = new EnumMap<>(WalRecord.ChangeCase.class);
                kinds.forEach((k, v) -> before.put(k, v.get()));
                long replacedBefore = replacements.get();
                long expiredBefore = pages.expiredAllocationsTotal();
                assertTrue(await(limit, () -> {
                    for (WalRecord.ChangeCase c : WalRecord.ChangeCase.values()) {
                        // KvEventsSealed is written by the log itself (with KV events on), not through the page service.
                        if (c != WalRecord.ChangeCase.CHANGE_NOT_SET && c != WalRecord.ChangeCase.KV_EVENTS_SEALED
                                && kinds.get(c).get() == before.get(c)) {
                            return !failures.isEmpty();
                        }
                    }
                    return replacements.get() > replacedBefore && pages.expiredAllocationsTotal() > expiredBefore || !failures.isEmpty();
                }), "after the last snapshot the log holds every kind of change: " + kinds);
            } finally {
                stop.set(true);
                for (Thread t : workers) {
                    t.join(20_000);
                }
            }
            assertEquals(List.of(), failures);
            service.durable();
            live = capture(pages);
        }
        assertEquals(SNAPSHOTS, snapshots.size());
        // Newest first; then each older one, after deleting the newer; then the log alone.
        for (int s = snapshots.size() - 1; s >= 0; s--) {
            Path snapshot = snapshots.get(s);
            StateFixture.Restored restored = recover(stateDir(), big, true);
            assertEquals(snapshot, restored.recovered().snapshot);
            assertTrue(restored.recovered().replayed > 0, "records after the snapshot were replayed");
            assertFalse(restored.recovered().wal.torn());
            assertSameState(live.afterCrash(restored.pages()), dump(restored.pages()), "from " + snapshot.getFileName() + " and the log after it");
            Files.delete(snapshot);
        }
        StateFixture.Restored fromLog = recover(stateDir(), big, true);
        assertNull(fromLog.recovered().snapshot);
        assertSameState(live.afterCrash(fromLog.pages()), dump(fromLog.pages()), "from the log alone");
    }

    /** Random changes by one worker on its own keys (two workers share key names in different tenants), durable in groups. */
    /** Changes {@code pages} (the service over {@code service}'s state and log) as one worker; waits for the log now and then. */
    private static void work(LoggedService service, PageService pages, int worker, AtomicLong ops, AtomicBoolean stop) throws Exception {
        SplittableRandom random = new SplittableRandom(worker * 7919L + 1);
        String tenant = worker % 2 == 0 ? "alpha" : "beta";
        String prefix = worker < 2 ? "k" : "w" + worker + "-k";
        int step = 0;
        while (!stop.get()) {
            step++;
            if (step > 200_000) {
                // Far ahead of the snapshots (whose thread runs at idle priority and waits for spare CPU): slow down
                // rather than stop, so that the test's waits for further changes are still met.
                Thread.sleep(1);
            }
            String key = prefix + random.nextInt(24);
            double r = random.nextDouble();
            if (r < 0.5) {
                long size = random.nextLong(1, 10 * PAGE);
                Result<Placement> allocated = pages.allocate(tenant, key, size, random.nextBoolean());
                if (allocated.isOk()) {
                    double then = random.nextDouble();
                    if (then < 0.7) {
                        pages.notifySuccess(tenant, key, allocated.value().withCrc(random.nextInt()));
                    } else if (then < 0.8) {
                        pages.renew(tenant, key, allocated.value()); // a long write: notified later, or abandoned
                    } else if (then < 0.87) {
                        pages.free(tenant, key, allocated.value());
                    } else if (then < 0.92) {
                        pages.dropInFlight(tenant, key); // an operator's rm --in-flight: quarantined for the grace
                    } // else abandoned: it expires at its deadline, then waits out the grace
                }
            } else if (r < 0.502) {
                // A quota large enough to change no allocation, or none: logged and snapshotted like any change.
                pages.setQuota(tenant, random.nextBoolean() ? 0 : 1L << 40);
            } else if (r < 0.5022) {
                // A layout grow by 32 pages while the others allocate: logged, snapshotted with the size it was taken at.
                pages.growLayout(pages.layout().bucketSize() + 32 * PAGE);
            } else if (r < 0.53) {
                // Promotion: queued, taken by a node (not logged), ended; or left to a remove or overwrite to end.
                if (pages.promotions().queue(tenant, key).isOk() && random.nextBoolean()) {
                    Result<Placement> source = pages.peek(tenant, key);
                    String node = "node-" + worker;
                    if (source.isOk() && pages.promotions().take(tenant, key, source.value(), node)) {
                        pages.promotions().end(tenant, key, node, random.nextBoolean() ? io.mcctl.master.service.Change.PromotionOutcome.SUCCEEDED
                                : io.mcctl.master.service.Change.PromotionOutcome.FAILED);
                    }
                }
            } else if (r < 0.85) {
                if (random.nextBoolean()) {
                    pages.getMapping(tenant, key); // a lease: the remove quarantines
                }
                pages.remove(tenant, key);
            } else {
                pages.reap();
            }
            if (step % 8 == 0) {
                service.durable(); // as clients wait for their answers: a group of changes per fsync
            }
            ops.incrementAndGet();
        }
    }

    /**
     * The property a fuzzy snapshot rests on, checked exhaustively on one seeded history: a snapshot holding the
     * state at some step but claiming to cover only an earlier log sequence (a window of 0 to 400 records
     * replayed a second time) recovers to exactly the final state. One thread and a test clock: no luck needed.
     */
    @Test
    void replaying_the_log_from_an_earlier_sequence_over_a_later_state_ends_in_exactly_the_final_state() throws Exception {
        AtomicLong now = new AtomicLong();
        long wallStart = System.currentTimeMillis(); // read before the service's own wall origin: never after it
        PageService pages = PageService.builder(layout()).allocationDeadline(Duration.ofSeconds(3)).readLease(Duration.ofSeconds(5)).nanoClock(now::get).build();
        Path log = dir.resolve("log");
        List<Path> stateDirs = new ArrayList<>();
        int[] windows = {0, 1, 2, 7, 60, 400};
        try (WriteAheadLog wal = new WriteAheadLog(log, "test-cluster", 0, 64L << 20, () -> wallStart + now.get() / 1_000_000)) {
            pages = PageService.serving(pages).changeLog(wal.changeLog()).build();
            SplittableRandom random = new SplittableRandom(20240611);
            for (int step = 1; step <= 3000; step++) {
                now.addAndGet(random.nextInt(0, 20) * 1_000_000L); // whole milliseconds, as the log's clock sees them
                randomChange(pages, random);
                if (step % 500 == 0) {
                    long covered = wal.lastAppended();
                    for (int window : windows) {
                        Path state = Files.createDirectories(dir.resolve("state-" + step + "-" + window));
                        writeSnapshot(state, pages, Math.max(0, covered - window));
                        stateDirs.add(state);
                    }
                }
            }
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }
        StateFixture.Captured live = capture(pages);
        for (Path state : stateDirs) {
            for (WalSegments.Segment segment : WalSegments.list(log)) {
                Files.copy(segment.path(), state.resolve(segment.path().getFileName()));
            }
            StateFixture.Restored restored = recover(state, layout(), true);
            assertTrue(restored.recovered().snapshot != null);
            assertSameState(live.afterCrash(restored.pages()), dump(restored.pages()), state.getFileName().toString());
        }
    }

    /** A snapshot of the service's state now, as {@link Snapshotter} writes one, claiming to cover the log up to {@code walSequence}. */
    private void writeSnapshot(Path stateDir, PageService pages, long walSequence) throws IOException {
        try (SnapshotFile.Writer writer = new SnapshotFile.Writer(stateDir, walSequence)) {
            List<PendingRecord> pending = new ArrayList<>();
            writer.beginSection(SnapshotFile.Section.MAPPINGS);
            for (int s = 0; s < pages.shardCount(); s++) {
                ShardCopy copy = pages.copyShard(s);
                copy.emitMappings(0, copy.entries(), writer::addMapping);
                copy.inFlight().forEach(a -> pending.add(ChangeCodec.pendingRecord(a)));
            }
            writer.beginSection(SnapshotFile.Section.PENDING);
            for (PendingRecord p : pending) {
                writer.add(p);
            }
            writer.beginSection(SnapshotFile.Section.QUARANTINE);
            for (QuarantinedRange q : pages.exportQuarantine()) {
                writer.add(ChangeCodec.quarantineRecord(q));
            }
            writer.beginSection(SnapshotFile.Section.META);
            writer.add(SnapshotMeta.newBuilder().setFormatVersion(SnapshotFile.FORMAT_VERSION).setClusterId("test-cluster")
                    .setBucketCount(layout().bucketCount()).setPageSize(layout().pageSize()).setBucketSize(layout().bucketSize())
                    .setWalSequence(walSequence)
                    .addAllReservations(pages.reservations().stream().map(ChangeCodec::reservationRecord).toList()).build());
            writer.finish();
        }
    }

    /** One random change on a few keys in two tenants: allocate (then notify, free or abandon), overwrite, look up, remove, reap. */
    private static void randomChange(PageService pages, SplittableRandom random) {
        String tenant = random.nextBoolean() ? "alpha" : "beta";
        String key = "k" + random.nextInt(30);
        double r = random.nextDouble();
        if (r < 0.45) {
            Result<Placement> allocated = pages.allocate(tenant, key, random.nextLong(1, 12 * PAGE), random.nextInt(3) == 0);
            if (allocated.isOk()) {
                double then = random.nextDouble();
                if (then < 0.65) {
                    pages.notifySuccess(tenant, key, allocated.value().withCrc(random.nextInt()));
                } else if (then < 0.75) {
                    pages.renew(tenant, key, allocated.value());
                } else if (then < 0.85) {
                    pages.free(tenant, key, allocated.value());
                } else if (then < 0.9) {
                    pages.dropInFlight(tenant, key);
                }
            }
        } else if (r < 0.6) {
            pages.getMapping(tenant, key);
        } else if (r < 0.85) {
            pages.remove(tenant, key);
        } else {
            pages.reap();
        }
    }

    @Test
    void pages_freed_at_once_and_reused_come_back_unquarantined_even_when_the_wall_clock_stepped_back() throws Exception {
        // The log stamps records with the wall clock; the service keeps time on a monotonic clock. After the wall
        // clock steps back (NTP, a VM resumed), "freed at once" must still replay as freed at once: the pages
        // were reused, and a replayed quarantine would overlap their new owner and stop the master from starting.
        BucketLayout oneBucket = new BucketLayout(dir.resolve("root"), 1, PAGE, 1 << 20);
        PageService pages = PageService.builder(oneBucket).allocationDeadline(Duration.ofSeconds(60)).readLease(Duration.ofSeconds(60)).build();
        try (WriteAheadLog wal = new WriteAheadLog(stateDir(), "test-cluster", 0, 64L << 20, () -> System.currentTimeMillis() - 5_000)) {
            pages = PageService.serving(pages).changeLog(wal.changeLog()).build();
            Placement first = commit(pages, "alpha", "removed", 4 * PAGE, false);
            assertTrue(pages.remove("alpha", "removed").isOk()); // never looked up: freed at once
            Placement reused = commit(pages, "alpha", "reuser", 4 * PAGE, false);
            assertTrue(first.sameRange(reused), "the freed pages were handed out again");

            Placement replacedFirst = commit(pages, "beta", "overwritten", 2 * PAGE, false);
            commit(pages, "beta", "overwritten", 3 * PAGE, true); // the replaced mapping was never looked up: freed at once
            Placement reusedAgain = commit(pages, "beta", "reuser", 2 * PAGE, false);
            assertTrue(replacedFirst.sameRange(reusedAgain), "the replaced pages were handed out again");
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }
        StateFixture.Restored restored = recover(stateDir(), oneBucket, true);
        assertSameState(capture(pages).afterCrash(restored.pages()), dump(restored.pages()), "after the wall clock stepped back");
    }

    // ---- falling back to an older snapshot ----

    /** Three rounds of changes with two snapshots between them; returns the live state at the end and the snapshots. */
    private StateFixture.Captured twoSnapshotsAndALogTail(List<Path> snapshots) throws Exception {
        try (LoggedService service = new LoggedService(Duration.ofSeconds(60), Duration.ofSeconds(60), 3, 64L << 20)) {
            Runnable awaitLog = () -> service.wal.whenDurable().join();
            changes(service.pages, "one", awaitLog);
            snapshots.add(service.snapshotter.take().path());
            changes(service.pages, "two", awaitLog);
            snapshots.add(service.snapshotter.take().path());
            changes(service.pages, "three", awaitLog);
            service.durable();
            return capture(service.pages);
        }
    }

    @ParameterizedTest
    @EnumSource(SnapshotFile.Section.class)
    void a_flipped_byte_in_a_section_of_the_newest_snapshot_falls_back_to_the_previous_one_and_ends_in_the_same_state(
            SnapshotFile.Section section) throws Exception {
        List<Path> snapshots = new ArrayList<>();
        StateFixture.Captured live = twoSnapshotsAndALogTail(snapshots);
        Path newest = snapshots.get(1);
        SnapshotFile.SectionInfo info = SnapshotFile.open(newest).info(section);
        assertTrue(info.length() > 0, section + " holds records");
        invertByte(newest, info.offset() + info.length() / 2);

        assertThrows(CorruptStateException.class, () -> {
            SnapshotFile.Reader reader = SnapshotFile.open(newest);
            reader.verify();
        });
        StateFixture.Restored restored = recover(stateDir(), layout(), true);
        assertEquals(snapshots.get(0), restored.recovered().snapshot, "the previous snapshot is used");
        assertEquals(1, restored.recovered().warnings.size(), restored.recovered().warnings.toString());
        assertTrue(restored.recovered().warnings.get(0).contains(newest.getFileName().toString()), restored.recovered().warnings.get(0));
        assertSameState(live.afterCrash(restored.pages()), dump(restored.pages()), "from the previous snapshot and the log");
    }

    @Test
    void a_deleted_newest_snapshot_falls_back_to_the_previous_one_and_ends_in_the_same_state() throws Exception {
        List<Path> snapshots = new ArrayList<>();
        StateFixture.Captured live = twoSnapshotsAndALogTail(snapshots);
        Files.delete(snapshots.get(1));
        StateFixture.Restored restored = recover(stateDir(), layout(), true);
        assertEquals(snapshots.get(0), restored.recovered().snapshot);
        assertSameState(live.afterCrash(restored.pages()), dump(restored.pages()), "from the previous snapshot and the log");
    }

    @Test
    void every_single_flipped_byte_of_a_snapshot_is_detected_or_changes_nothing() throws Exception {
        AtomicLong now = new AtomicLong();
        PageService pages = PageService.builder(layout()).allocationDeadline(Duration.ofSeconds(30)).readLease(Duration.ofSeconds(10)).nanoClock(now::get).build();
        commit(pages, "alpha", "a", 3 * PAGE, false);
        commit(pages, "beta", "a", PAGE, false);
        allocate(pages, "alpha", "in-flight", PAGE, false);
        removeWhileLeased(pages, "beta", "a");
        Path original = new Snapshotter(pages, null, stateDir(), layoutRecord(layout()), 2, Map.of("k", "v"), 0).take().path();
        String expected = contentOf(original);
        byte[] bytes = Files.readAllBytes(original);
        Path copyDir = Files.createDirectories(dir.resolve("flipped"));
        Path copy = copyDir.resolve(original.getFileName());
        int detected = 0;
        List<String> wrong = new ArrayList<>();
        for (int i = 0; i < bytes.length; i++) {
            byte[] flipped = bytes.clone();
            flipped[i] ^= (byte) 0x5A;
            Files.write(copy, flipped);
            try {
                String content = contentOf(copy);
                if (!content.equals(expected)) {
                    wrong.add("byte " + i + ": read different records without an error");
                }
            } catch (CorruptStateException e) {
                detected++;
            } catch (Exception | Error e) {
                wrong.add("byte " + i + ": " + e);
            }
        }
        if (!wrong.isEmpty()) {
            fail(wrong.size() + " of " + bytes.length + " single-byte flips were neither detected as corruption nor harmless: " + wrong);
        }
        assertTrue(detected > bytes.length * 9 / 10, detected + " of " + bytes.length + " flips detected");
    }

    /** Every record of every section and the meta record, as text. */
    private static String contentOf(Path snapshot) throws IOException {
        SnapshotFile.Reader reader = SnapshotFile.open(snapshot);
        StringBuilder out = new StringBuilder(reader.meta().toString());
        reader.read(SnapshotFile.Section.MAPPINGS, MappingRecord.parser(), r -> out.append(r));
        reader.read(SnapshotFile.Section.PENDING, PendingRecord.parser(), r -> out.append(r));
        reader.read(SnapshotFile.Section.QUARANTINE, QuarantineRecord.parser(), r -> out.append(r));
        return out.toString();
    }

    // ---- versions and retention ----

    @ParameterizedTest
    @ValueSource(ints = {0, 2})
    void a_snapshot_of_another_format_version_is_refused_naming_the_version_it_needs(int version) throws Exception {
        PageService pages = PageService.builder(layout()).allocationDeadline(Duration.ofSeconds(30)).readLease(Duration.ofSeconds(10)).build();
        commit(pages, "alpha", "k", PAGE, false);
        Path snapshot = new Snapshotter(pages, null, stateDir(), layoutRecord(layout()), 2, Map.of(), 0).take().path();
        try (RandomAccessFile raf = new RandomAccessFile(snapshot.toFile(), "rw")) {
            raf.seek(8);
            raf.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(version).array());
        }
        CorruptStateException e = assertThrows(CorruptStateException.class, () -> SnapshotFile.open(snapshot));
        assertTrue(e.getMessage().contains("snapshot format version " + version), e.getMessage());
        assertTrue(e.getMessage().contains("this mcctl reads version " + SnapshotFile.FORMAT_VERSION), e.getMessage());
        assertTrue(e.getMessage().contains("use an mcctl that reads version " + version), e.getMessage());
        assertEquals(snapshot, e.file());

        // Under snapshot durability there is nothing else to recover from: the master refuses to start, saying why.
        CorruptStateException refused = assertThrows(CorruptStateException.class, () -> StateRecovery.recover(stateDir(), layout(), false));
        assertTrue(refused.getMessage().contains("no usable snapshot") && refused.getMessage().contains(snapshot.getFileName().toString())
                && refused.getMessage().contains("version " + version), refused.getMessage());
    }

    @Test
    void a_snapshot_whose_file_cannot_be_written_fails_with_the_reason_and_the_next_one_works() throws Exception {
        PageService pages = PageService.builder(layout()).allocationDeadline(Duration.ofSeconds(30)).readLease(Duration.ofSeconds(10)).build();
        for (int i = 0; i < 1500; i++) {
            commit(pages, "alpha", "k" + i, PAGE, false);
        }
        Path notADirectory = Files.writeString(stateDir().resolveSibling("not-a-directory"), "x");
        Snapshotter broken = new Snapshotter(pages, null, notADirectory, layoutRecord(layout()), 2, Map.of(), 0);
        IOException failed = assertThrows(IOException.class, broken::take);
        assertTrue(failed.toString().contains("not-a-directory"), failed.toString());

        Snapshotter.Taken taken = new Snapshotter(pages, null, stateDir(), layoutRecord(layout()), 2, Map.of(), 0).take();
        assertEquals(1500, taken.mappings());
        StateFixture.Restored restored = recover(stateDir(), layout(), false);
        assertSameState(capture(pages).afterCrash(restored.pages()), dump(restored.pages()), "from the snapshot taken after the failed one");
    }

    @Test
    void retention_keeps_exactly_the_newest_n_snapshots() throws Exception {
        PageService pages = PageService.builder(layout()).allocationDeadline(Duration.ofSeconds(30)).readLease(Duration.ofSeconds(10)).build();
        Snapshotter snapshotter = new Snapshotter(pages, null, stateDir(), layoutRecord(layout()), 3, Map.of(), 0);
        List<Long> taken = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            commit(pages, "alpha", "k" + i, PAGE, false);
            taken.add(snapshotter.take().walSequence());
        }
        List<Long> kept = SnapshotFile.list(stateDir()).stream().map(SnapshotFile.Listed::walSequence).toList();
        assertEquals(List.of(taken.get(5), taken.get(4), taken.get(3)), kept);
        try (Stream<Path> files = Files.list(stateDir())) {
            assertEquals(3, files.count(), "no other file is left behind");
        }
        StateFixture.Restored restored = recover(stateDir(), layout(), false);
        assertSameState(capture(pages).afterCrash(restored.pages()), dump(restored.pages()), "from the newest snapshot");
    }

    @Test
    void retention_with_the_log_deletes_covered_segments_but_keeps_what_the_oldest_kept_snapshot_needs() throws Exception {
        List<Path> snapshots = new ArrayList<>();
        StateFixture.Captured live;
        String longKey = "k".repeat(4000);
        try (LoggedService service = new LoggedService(Duration.ofSeconds(60), Duration.ofSeconds(60), 2, 1 << 20)) {
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 150; i++) {
                    commit(service.pages, round % 2 == 0 ? "alpha" : "beta", longKey + "-" + round + "-" + i, PAGE, false);
                    service.durable(); // one record group per fsync: segments roll near 1 MiB
                }
                assertTrue(service.pages.remove(round % 2 == 0 ? "alpha" : "beta", longKey + "-" + round + "-0").isOk());
                snapshots.add(service.snapshotter.take().path());
            }
            service.durable();
            live = capture(service.pages);
        }
        List<SnapshotFile.Listed> kept = SnapshotFile.list(stateDir());
        assertEquals(List.of(snapshots.get(2), snapshots.get(1)), kept.stream().map(SnapshotFile.Listed::path).toList());
        List<WalSegments.Segment> segments = WalSegments.list(stateDir());
        assertTrue(segments.get(0).firstSequence() > 1, "segments the kept snapshots cover were deleted: " + segments);
        assertTrue(segments.get(0).firstSequence() <= kept.get(1).walSequence() + 1, "the oldest kept snapshot still has its log");

        Files.delete(snapshots.get(2));
        StateFixture.Restored restored = recover(stateDir(), layout(), true);
        assertEquals(snapshots.get(1), restored.recovered().snapshot);
        assertSameState(live.afterCrash(restored.pages()), dump(restored.pages()), "from the older kept snapshot and its log");
    }
}
