package io.mcctl.testkit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.mcctl.master.durability.ChangeCodec;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.Snapshotter;
import io.mcctl.master.durability.StateRecovery;
import io.mcctl.master.durability.WalSegmentHeader;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.durability.WriteAheadLog;
import io.mcctl.master.proto.v1.Allocated;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.master.proto.v1.WalRecord;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.Change;
import io.mcctl.master.service.ChangeLog;
import io.mcctl.master.service.PageService;
import io.mcctl.master.service.QuarantinedRange;
import io.mcctl.master.service.Restorer;
import io.mcctl.master.service.Result;
import io.mcctl.master.service.StateVisitor;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Real master state made with the real code: a {@link PageService} over a small layout (4 buckets of 16
 * pages of 4 KiB), changed through its page operations, logged by a real {@link WriteAheadLog} and
 * snapshotted by a real {@link Snapshotter}. Tracks what it did, so tests can state exact expectations.
 *
 * <p>Its static helpers work on any state: records and snapshots made by hand, a page service's whole state as sorted
 * lines ({@link #dump}), what a crash must leave for recovery ({@link #capture}), recovery into a fresh service
 * ({@link #recover}).
 */
public final class StateFixture implements AutoCloseable {

    public static final long PAGE = 4096;
    public static final int BUCKETS = 4;
    public static final long PAGES_PER_BUCKET = 16;

    public final Path root;
    public final Path stateDir;
    public final BucketLayout layout;
    public final LayoutFile.Record layoutRecord;
    public final PageService pages;
    public final WriteAheadLog wal;
    public final Snapshotter snapshotter;
    /** Pages used per bucket by what this fixture made: mappings, in-flight allocations and quarantined ranges. */
    public final long[] pagesPerBucket = new long[BUCKETS];
    public long mappings;
    public long inFlight;
    public long quarantinedRanges;
    public long quarantinedPages;
    private boolean stopped;

    /** @param withWal log every change (WAL durability); else snapshots alone */
    public StateFixture(Path root, boolean withWal) throws IOException {
        this(root, withWal, false);
    }

    /**
     * @param withWal      log every change (WAL durability); else snapshots alone
     * @param reservations answer allocations inside reservations, as a master runs; else each allocation is logged and
     *                     waited for on its own, so that the log holds exactly the records the tests count
     */
    public StateFixture(Path root, boolean withWal, boolean reservations) throws IOException {
        this.root = root;
        this.stateDir = root.resolve("master");
        this.layout = new BucketLayout(root, BUCKETS, PAGE, PAGES_PER_BUCKET * PAGE);
        Files.createDirectories(stateDir);
        this.layoutRecord = LayoutFile.loadOrCreate(layout);
        this.wal = withWal ? new WriteAheadLog(stateDir, layoutRecord.clusterId(), 0, 1 << 20, System::currentTimeMillis) : null;
        this.pages = PageService.builder(layout).allocationDeadline(Duration.ofHours(1)).readLease(Duration.ofHours(1))
                .changeLog(wal == null ? ChangeLog.NONE : wal.changeLog()).reservations(wal == null || reservations).build();
        this.snapshotter = new Snapshotter(pages, wal, stateDir, layoutRecord, 10, Map.of("durability", withWal ? "wal" : "snapshot",
                "read_lease", "1h"), 0);
    }

    public Placement allocate(String tenant, String key, long size) {
        Result<Placement> r = pages.allocate(tenant, key, size, false);
        assertTrue(r.isOk(), r::toString);
        inFlight++;
        pagesPerBucket[r.value().bucket()] += layout.pagesFor(size);
        return r.value();
    }

    public Placement commit(String tenant, String key, long size, int crc) {
        Placement p = allocate(tenant, key, size);
        Result<Void> r = pages.notifySuccess(tenant, key, p.withCrc(crc));
        assertTrue(r.isOk(), r::toString);
        if (wal != null) {
            wal.whenDurable().join(); // as a notify is answered: readers find the mapping once the log holds it
        }
        inFlight--;
        mappings++;
        return p.withCrc(crc);
    }

    /** Gives up an in-flight allocation: its pages are free at once. */
    public void free(String tenant, String key, Placement p) {
        Result<Void> r = pages.free(tenant, key, p);
        assertTrue(r.isOk(), r::toString);
        inFlight--;
        pagesPerBucket[p.bucket()] -= layout.pagesFor(p.size());
    }

    /** Removes a mapping nobody read: its pages are free at once. */
    public void remove(String tenant, String key, Placement p) {
        Result<Void> r = pages.remove(tenant, key);
        assertTrue(r.isOk(), r::toString);
        mappings--;
        pagesPerBucket[p.bucket()] -= layout.pagesFor(p.size());
    }

    /** Reads then removes a mapping: its pages wait in quarantine behind the read lease (an hour). */
    public void removeAfterRead(String tenant, String key, Placement p) {
        assertTrue(pages.getMapping(tenant, key).isOk());
        assertTrue(pages.remove(tenant, key).isOk());
        mappings--;
        quarantinedRanges++;
        quarantinedPages += layout.pagesFor(p.size());
    }

    /**
     * The standard state: tenant alpha with mappings a1 (2 pages), a2 (1 page), doc/a3 (3 pages), a4 removed
     * after a read (quarantined, 2 pages) and a5 removed unread; tenant beta with mappings b1 (1 page), doc/b2 (2 pages)
     * and an in-flight allocation b3 (2 pages).
     */
    public void standardState() {
        commit("alpha", "a1", 5000, 0x11);
        commit("alpha", "a2", 4096, 0x12);
        commit("alpha", "doc/a3", 9000, 0x13);
        Placement a4 = commit("alpha", "a4", 8000, 0x14);
        removeAfterRead("alpha", "a4", a4);
        Placement a5 = commit("alpha", "a5", 100, 0x15);
        remove("alpha", "a5", a5);
        commit("beta", "b1", 1, 0x21);
        commit("beta", "doc/b2", 8192, 0x22);
        allocate("beta", "b3", 4097);
    }

    public Path snapshot() throws Exception {
        if (wal != null) {
            wal.whenDurable().get();
        }
        return snapshotter.take().path();
    }

    public void durable() throws Exception {
        if (wal != null) {
            wal.whenDurable().get();
        }
    }

    public long usedPages() {
        long sum = 0;
        for (long p : pagesPerBucket) {
            sum += p;
        }
        return sum;
    }

    /** Closes the log, as a stopped master leaves it; {@link #close} after it does nothing. */
    public void stop() throws IOException {
        if (wal != null && !stopped) {
            wal.close();
        }
        stopped = true;
    }

    @Override
    public void close() throws IOException {
        stop();
    }

    // ---- files made by hand ----

    public static PlacementRecord placement(int bucket, long offset, long size, int crc) {
        return PlacementRecord.newBuilder().setBucket(bucket).setOffset(offset).setSize(size).setCrc32C(crc).build();
    }

    public static MappingRecord mapping(String tenant, String key, int bucket, long offset, long size) {
        return MappingRecord.newBuilder().setTenantId(tenant).setKey(key).setPlacement(placement(bucket, offset, size, 7)).build();
    }

    /** A snapshot written record by record with {@link SnapshotFile.Writer}, with the counts of its meta record right. */
    public static Path writeSnapshot(Path dir, long sequence, List<MappingRecord> mappings, List<PendingRecord> pending,
                              List<QuarantineRecord> quarantine) throws IOException {
        try (SnapshotFile.Writer writer = new SnapshotFile.Writer(dir, sequence)) {
            writer.beginSection(SnapshotFile.Section.MAPPINGS);
            for (MappingRecord m : mappings) {
                writer.add(m);
            }
            writer.beginSection(SnapshotFile.Section.PENDING);
            for (PendingRecord p : pending) {
                writer.add(p);
            }
            writer.beginSection(SnapshotFile.Section.QUARANTINE);
            for (QuarantineRecord q : quarantine) {
                writer.add(q);
            }
            writer.beginSection(SnapshotFile.Section.META);
            writer.add(SnapshotMeta.newBuilder().setFormatVersion(SnapshotFile.FORMAT_VERSION).setClusterId("hand-made")
                    .setRootDir(dir.toString()).setBucketCount(BUCKETS).setPageSize(PAGE).setBucketSize(PAGES_PER_BUCKET * PAGE)
                    .setWalSequence(sequence).setCreatedMs(1_700_000_000_000L).setMappings(mappings.size()).setInFlight(pending.size())
                    .setQuarantinedRanges(quarantine.size()).putSettings("made_by", "test").build());
            return writer.finish();
        }
    }

    /** The byte offsets of the frames of a log segment (after its header). */
    public static List<Long> frameOffsets(Path segment) throws IOException {
        byte[] bytes = Files.readAllBytes(segment);
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        List<Long> out = new ArrayList<>();
        int at = WalSegmentHeader.BYTES;
        while (at + 8 <= bytes.length) {
            out.add((long) at);
            at += 8 + buffer.getInt(at);
        }
        return out;
    }

    /** The only log segment. */
    public Path segment() throws IOException {
        List<WalSegments.Segment> segments = WalSegments.list(stateDir);
        assertTrue(segments.size() == 1, segments::toString);
        return segments.get(0).path();
    }

    // ---- the state of any page service ----

    /** 8 buckets of 1 MiB in 4 KiB pages; the page service never touches the files. */
    public static BucketLayout layout(Path root) {
        return new BucketLayout(root, 8, PAGE, 1 << 20);
    }

    public static LayoutFile.Record layoutRecord(BucketLayout layout) {
        return new LayoutFile.Record("test-cluster", LayoutFile.FORMAT_VERSION, layout.bucketCount(), layout.pageSize(), layout.bucketSize());
    }

    /** An Allocated record for {@code key}; sequence and time are set by the log. */
    public static WalRecord.Builder allocated(String key) {
        return WalRecord.newBuilder().setAllocated(Allocated.newBuilder().setTenantId("t").setKey(key)
                .setPlacement(PlacementRecord.newBuilder().setBucket(1).setOffset(4096).setSize(100)));
    }

    /**
     * Everything a page service holds, one sorted line per fact: every committed mapping, every in-flight
     * allocation (placement, deadline, overwrite), every quarantined range, each bucket's allocated count and
     * bitmap, and the counters. Two services with equal dumps answer every lookup alike.
     */
    public static List<String> dump(PageService pages) throws IOException {
        TreeSet<String> lines = new TreeSet<>();
        pages.visit(new StateVisitor() {
            @Override
            public void mapping(String tenant, String key, Placement p, boolean pinned) {
                lines.add("mapping " + tenant + "/" + key + " " + text(ChangeCodec.record(p)) + (pinned ? " pinned" : ""));
            }

            @Override
            public void inFlight(Change.Allocated a) {
                lines.add("in-flight " + a.tenant() + "/" + a.key() + " " + text(ChangeCodec.record(a.placement())) + " deadline " + a.deadlineMs()
                        + " overwrite " + a.overwrite());
            }

            @Override
            public void quarantined(QuarantinedRange q) {
                lines.add("quarantine bucket " + q.bucket() + " pages " + q.firstPage() + "+" + q.pages() + " until " + q.releaseMs());
            }

            @Override
            public void held(QuarantinedRange q) {
                lines.add(holdLine(q.bucket(), q.firstPage(), q.pages(), q.releaseMs()));
            }
        });
        pages.quotas().forEach((tenant, bytes) -> lines.add("quota " + tenant + " " + bytes));
        // Who holds a task is not logged (a restart queues every task again): only what is.
        pages.promotions().export().forEach(t -> lines.add("promotion " + t.tenant() + "/" + t.key() + " " + text(ChangeCodec.record(t.placement()))
                + " queued " + t.queuedMs()));
        lines.add("layout: buckets of " + pages.layout().bucketSize() + " bytes, " + pages.allocator(0).pageCount() + " pages");
        for (int b = 0; b < pages.layout().bucketCount(); b++) {
            lines.add(bucketLine(b, pages.allocator(b).bitmapWords(), pages.allocator(b).pageCount()));
        }
        lines.add("counts: mappings " + pages.mappingCount() + ", in flight " + pages.inFlightCount() + ", quarantined pages "
                + pages.quarantinedPageCount());
        return new ArrayList<>(mergeQuarantine(lines));
    }

    private static String holdLine(int bucket, long firstPage, long pages, long releaseMs) {
        return "hold bucket " + bucket + " pages " + firstPage + "+" + pages + " until " + releaseMs;
    }

    private static final java.util.regex.Pattern HOLD = java.util.regex.Pattern.compile("hold bucket (\\d+) pages (\\d+)\\+(\\d+) until (-?\\d+)");

    private static final java.util.regex.Pattern QUARANTINE = java.util.regex.Pattern.compile("quarantine bucket (\\d+) pages (\\d+)\\+(\\d+) until (-?\\d+)");

    /**
     * The quarantine lines with neighbouring ranges of one bucket and one release time as one: the same pages held as
     * long, whether a hold was split where a page was claimed when it was made (live) or made whole later (recovered).
     */
    public static TreeSet<String> mergeQuarantine(TreeSet<String> lines) {
        TreeSet<String> out = new TreeSet<>();
        List<long[]> ranges = new ArrayList<>();
        for (String line : lines) {
            java.util.regex.Matcher m = QUARANTINE.matcher(line);
            if (m.matches()) {
                ranges.add(new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3)), Long.parseLong(m.group(4))});
            } else {
                out.add(line);
            }
        }
        ranges.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
        long[] run = null;
        for (long[] r : ranges) {
            if (run != null && run[0] == r[0] && run[1] + run[2] == r[1] && run[3] == r[3]) {
                run[2] += r[2];
                continue;
            }
            if (run != null) {
                out.add("quarantine bucket " + run[0] + " pages " + run[1] + "+" + run[2] + " until " + run[3]);
            }
            run = r.clone();
        }
        if (run != null) {
            out.add("quarantine bucket " + run[0] + " pages " + run[1] + "+" + run[2] + " until " + run[3]);
        }
        return out;
    }

    /**
     * A live service's state as a crash leaves it for recovery: what {@link #dump} shows, plus its reservations not
     * closed and its bitmaps, from which {@link #afterCrash} derives what recovery must rebuild.
     */
    public record Captured(List<String> lines, List<Change.Reserved> reservations, long[][] bitmaps, long quarantinedPages) {

        /**
         * The dump a recovery at {@code recovered}'s clock must give: this state without the holds an earlier recovery
         * made (each recovery derives them afresh), and every reservation not closed whose hold is still ahead holding
         * its pages that nothing claims until its hold (the longest hold first, as {@link Restorer#finish}
         * does).
         */
        public List<String> afterCrash(PageService recovered) {
            long nowMs = recovered.nowWallMillis();
            TreeSet<String> out = new TreeSet<>();
            long[][] words = new long[bitmaps.length][];
            for (int b = 0; b < bitmaps.length; b++) {
                words[b] = bitmaps[b].clone();
            }
            long quarantinedPages = this.quarantinedPages;
            for (String line : lines) {
                java.util.regex.Matcher held = HOLD.matcher(line);
                if (held.matches()) {
                    int bucket = Integer.parseInt(held.group(1));
                    long first = Long.parseLong(held.group(2));
                    long count = Long.parseLong(held.group(3));
                    for (long p = first; p < first + count; p++) {
                        words[bucket][(int) (p >>> 6)] &= ~(1L << p);
                    }
                    quarantinedPages -= count;
                } else if (!line.startsWith("bucket ") && !line.startsWith("counts: ")) {
                    out.add(line);
                }
            }
            long pageCount = Long.parseLong(lines.stream().filter(l -> l.startsWith("layout: ")).findFirst().orElseThrow()
                    .replaceAll(".* (\\d+) pages$", "$1"));
            List<Change.Reserved> byHold = new ArrayList<>(reservations);
            byHold.sort((a, b) -> Long.compare(b.holdUntilMs(), a.holdUntilMs()));
            long held = 0;
            for (Change.Reserved r : byHold) {
                if (r.holdUntilMs() <= nowMs) {
                    continue;
                }
                long end = Math.min(r.firstPage() + r.pages(), pageCount);
                long runStart = -1;
                for (long page = r.firstPage(); page <= end; page++) {
                    boolean free = page < end && (words[r.bucket()][(int) (page >>> 6)] & (1L << page)) == 0;
                    if (free && runStart < 0) {
                        runStart = page;
                    } else if (!free && runStart >= 0) {
                        out.add(holdLine(r.bucket(), runStart, page - runStart, r.holdUntilMs()));
                        for (long p = runStart; p < page; p++) {
                            words[r.bucket()][(int) (p >>> 6)] |= 1L << p;
                        }
                        held += page - runStart;
                        runStart = -1;
                    }
                }
            }
            for (int b = 0; b < words.length; b++) {
                out.add(bucketLine(b, words[b], pageCount));
            }
            String counts = lines.stream().filter(l -> l.startsWith("counts: ")).findFirst().orElseThrow();
            out.add(counts.replaceAll("quarantined pages \\d+$", "quarantined pages " + (quarantinedPages + held)));
            return new ArrayList<>(mergeQuarantine(out));
        }
    }

    /** A live service's state, with what a crash would make recovery hold: compare {@link Captured#afterCrash} with the recovered dump. */
    public static Captured capture(PageService pages) throws IOException {
        List<Change.Reserved> reservations = pages.reservations();
        long[][] bitmaps = new long[pages.layout().bucketCount()][];
        for (int b = 0; b < bitmaps.length; b++) {
            bitmaps[b] = pages.allocator(b).bitmapWords();
        }
        return new Captured(dump(pages), reservations, bitmaps, pages.quarantinedPageCount());
    }

    private static String bucketLine(int bucket, long[] words, long pageCount) {
        long allocated = 0;
        for (long page = 0; page < pageCount; page++) {
            if ((words[(int) (page >>> 6)] & (1L << page)) != 0) {
                allocated++;
            }
        }
        return "bucket " + bucket + " allocated " + allocated + " bitmap " + Arrays.hashCode(words);
    }

    public static String text(PlacementRecord p) {
        return "bucket " + p.getBucket() + " @" + p.getOffset() + "+" + p.getSize() + " crc " + Integer.toHexString(p.getCrc32C());
    }

    /** Fails naming the first differences when the two dumps differ. */
    public static void assertSameState(List<String> expected, List<String> actual, String what) {
        if (expected.equals(actual)) {
            return;
        }
        TreeSet<String> missing = new TreeSet<>(expected);
        missing.removeAll(actual);
        TreeSet<String> extra = new TreeSet<>(actual);
        extra.removeAll(expected);
        fail(what + ": the recovered state differs from the live one\n  only live:      " + first(missing) + "\n  only recovered: " + first(extra));
    }

    private static String first(TreeSet<String> lines) {
        List<String> some = new ArrayList<>();
        for (String line : lines) {
            if (some.size() == 12) {
                some.add("... " + (lines.size() - 12) + " more");
                break;
            }
            some.add(line);
        }
        return lines.size() + " " + some;
    }

    /** What {@link io.mcctl.master.server.MasterServer#start} does before serving: recover straight into a new service. */
    public record Restored(StateRecovery.Recovered recovered, PageService pages) {
    }

    public static Restored recover(Path stateDir, BucketLayout layout, boolean wal) throws IOException {
        return recover(stateDir, layout, wal, System::nanoTime);
    }

    public static Restored recover(Path stateDir, BucketLayout layout, boolean wal, java.util.function.LongSupplier nanoClock) throws IOException {
        StateRecovery.Recovered recovered = StateRecovery.recover(stateDir, layout, wal,
                () -> PageService.builder(layout).allocationDeadline(Duration.ofSeconds(60)).readLease(Duration.ofSeconds(5)).nanoClock(nanoClock).build());
        return new Restored(recovered, recovered.pages);
    }
}
