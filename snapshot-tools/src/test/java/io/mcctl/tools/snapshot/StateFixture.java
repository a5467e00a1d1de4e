package io.mcctl.tools.snapshot;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.Snapshotter;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.durability.WriteAheadLog;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.master.service.PageService;
import io.mcctl.master.service.Placement;
import io.mcctl.master.service.Result;
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
import java.util.List;
import java.util.Map;

/**
 * Real master state made with the real code: a {@link PageService} over a small layout (4 buckets of 16
 * pages of 4 KiB), changed through its page operations, logged by a real {@link WriteAheadLog} and
 * snapshotted by a real {@link Snapshotter}. Tracks what it did, so tests can state exact expectations.
 */
final class StateFixture implements AutoCloseable {

    static final long PAGE = 4096;
    static final int BUCKETS = 4;
    static final long PAGES_PER_BUCKET = 16;

    final Path root;
    final Path stateDir;
    final BucketLayout layout;
    final LayoutFile.Record layoutRecord;
    final PageService pages;
    final WriteAheadLog wal;
    final Snapshotter snapshotter;
    /** Pages used per bucket by what this fixture made: mappings, in-flight allocations and quarantined ranges. */
    final long[] pagesPerBucket = new long[BUCKETS];
    long mappings;
    long inFlight;
    long quarantinedRanges;
    long quarantinedPages;
    private boolean stopped;

    /** @param withWal log every change (WAL durability); else snapshots alone */
    StateFixture(Path root, boolean withWal) throws IOException {
        this(root, withWal, false);
    }

    /**
     * @param withWal      log every change (WAL durability); else snapshots alone
     * @param reservations answer allocations inside reservations, as a master runs; else each allocation is logged and
     *                     waited for on its own, so that the log holds exactly the records the tests count
     */
    StateFixture(Path root, boolean withWal, boolean reservations) throws IOException {
        this.root = root;
        this.stateDir = root.resolve("master");
        this.layout = new BucketLayout(root, BUCKETS, PAGE, PAGES_PER_BUCKET * PAGE);
        Files.createDirectories(stateDir);
        this.layoutRecord = LayoutFile.loadOrCreate(layout);
        this.wal = withWal ? new WriteAheadLog(stateDir, layoutRecord.clusterId(), 0, 1 << 20, System::currentTimeMillis) : null;
        this.pages = PageService.builder(layout).allocationDeadline(Duration.ofHours(1)).readLease(Duration.ofHours(1))
                .changeLog(wal == null ? io.mcctl.master.service.ChangeLog.NONE : wal.changeLog()).reservations(wal == null || reservations).build();
        this.snapshotter = new Snapshotter(pages, wal, stateDir, layoutRecord, 10, Map.of("durability", withWal ? "wal" : "snapshot",
                "read_lease", "1h"), 0);
    }

    Placement allocate(String tenant, String key, long size) {
        Result<Placement> r = pages.allocate(tenant, key, size, false);
        assertTrue(r.isOk(), r::toString);
        inFlight++;
        pagesPerBucket[r.value().bucket()] += layout.pagesFor(size);
        return r.value();
    }

    Placement commit(String tenant, String key, long size, int crc) {
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
    void free(String tenant, String key, Placement p) {
        Result<Void> r = pages.free(tenant, key, p);
        assertTrue(r.isOk(), r::toString);
        inFlight--;
        pagesPerBucket[p.bucket()] -= layout.pagesFor(p.size());
    }

    /** Removes a mapping nobody read: its pages are free at once. */
    void remove(String tenant, String key, Placement p) {
        Result<Void> r = pages.remove(tenant, key);
        assertTrue(r.isOk(), r::toString);
        mappings--;
        pagesPerBucket[p.bucket()] -= layout.pagesFor(p.size());
    }

    /** Reads then removes a mapping: its pages wait in quarantine behind the read lease (an hour). */
    void removeAfterRead(String tenant, String key, Placement p) {
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
    void standardState() {
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

    Path snapshot() throws Exception {
        if (wal != null) {
            wal.whenDurable().get();
        }
        return snapshotter.take().path();
    }

    void durable() throws Exception {
        if (wal != null) {
            wal.whenDurable().get();
        }
    }

    long usedPages() {
        long sum = 0;
        for (long p : pagesPerBucket) {
            sum += p;
        }
        return sum;
    }

    /** Closes the log, as a stopped master leaves it; {@link #close} after it does nothing. */
    void stop() throws IOException {
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

    static PlacementRecord placement(int bucket, long offset, long size, int crc) {
        return PlacementRecord.newBuilder().setBucket(bucket).setOffset(offset).setSize(size).setCrc32C(crc).build();
    }

    static MappingRecord mapping(String tenant, String key, int bucket, long offset, long size) {
        return MappingRecord.newBuilder().setTenantId(tenant).setKey(key).setPlacement(placement(bucket, offset, size, 7)).build();
    }

    /** A snapshot written record by record with {@link SnapshotFile.Writer}, with the counts of its meta record right. */
    static Path writeSnapshot(Path dir, long sequence, List<MappingRecord> mappings, List<PendingRecord> pending,
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

    static void flipByte(Path file, long offset) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(offset);
            int b = raf.read();
            raf.seek(offset);
            raf.write(b ^ 0x01);
        }
    }

    static void truncate(Path file, long size) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(size);
        }
    }

    /** The byte offsets of the frames of a log segment (after its header). */
    static List<Long> frameOffsets(Path segment) throws IOException {
        byte[] bytes = Files.readAllBytes(segment);
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        List<Long> out = new ArrayList<>();
        int at = io.mcctl.master.durability.WalSegmentHeader.BYTES;
        while (at + 8 <= bytes.length) {
            out.add((long) at);
            at += 8 + buffer.getInt(at);
        }
        return out;
    }

    /** The only log segment. */
    Path segment() throws IOException {
        List<WalSegments.Segment> segments = WalSegments.list(stateDir);
        assertTrue(segments.size() == 1, segments::toString);
        return segments.get(0).path();
    }
}
