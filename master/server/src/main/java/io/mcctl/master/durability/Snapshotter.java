package io.mcctl.master.durability;

import io.mcctl.master.service.ShardCopy;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.io.IoErrors;
import io.mcctl.storage.layout.LayoutFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes snapshots of a serving master and keeps the newest few. Under WAL durability a snapshot records
 * the last WAL sequence appended before the export began; recovery replays from there, and log segments
 * that the oldest kept snapshot covers are deleted. One snapshot at a time ({@code synchronized}).
 */
public final class Snapshotter {

    private static final Logger LOG = LoggerFactory.getLogger(Snapshotter.class);

    /** What one snapshot wrote. */
    public record Taken(Path path, long walSequence, long mappings, long inFlight, long quarantined, long bytes, long millis) {
    }

    private final PageService pages;
    private final WriteAheadLog wal;
    private final Path stateDir;
    private final LayoutFile.Record layoutRecord;
    private final int retention;
    private final Map<String, String> settings;
    private long lastSequence;
    /** The leader epoch written into each snapshot (0 without high availability). */
    private volatile long epoch;
    /** Asked before a snapshot is published and before anything is pruned: false once this master may not own the state. */
    private volatile java.util.function.BooleanSupplier owner = () -> true;

    /** @param wal the log under WAL durability, or null under snapshot durability */
    public Snapshotter(PageService pages, WriteAheadLog wal, Path stateDir, LayoutFile.Record layoutRecord, int retention,
                       Map<String, String> settings, long recoveredSequence) {
        this.pages = pages;
        this.wal = wal;
        this.stateDir = stateDir;
        this.layoutRecord = layoutRecord;
        this.retention = retention;
        this.settings = Map.copyOf(settings);
        this.lastSequence = recoveredSequence;
    }

    /**
     * Under high availability: snapshots carry {@code epoch}, and none is published, nor anything pruned, once
     * {@code owner} says this master is no longer the leader (docs/durability.md says what is left to the epoch).
     */
    public void fence(long epoch, java.util.function.BooleanSupplier owner) {
        this.epoch = epoch;
        this.owner = owner;
    }

    private void requireOwner(String what) throws IOException {
        if (!owner.getAsBoolean()) {
            throw new IOException("no " + what + ": this master no longer holds its leader lease (epoch " + epoch + ")");
        }
    }

    /** Where the snapshots go. */
    public Path stateDir() {
        return stateDir;
    }

    /**
     * Writes a snapshot. The calling thread copies the state, one shard (then the quarantine) at a time, each under
     * its own lock and followed by a rest twice as long as the copy took; a writer thread of its own encodes the
     * copies and writes the file, under {@link IdlePriority} where the system allows, so that the serving threads
     * never wait for it. No lock is ever held by the writer. Where the idle policy cannot be had, the writer rests
     * the same way between stretches of a few hundred mappings.
     */
    public synchronized Taken take() throws IOException {
        try {
            Taken taken = writeSnapshot();
            lastTaken = taken;
            lastTakenAtMillis = System.currentTimeMillis();
            takenTotal++;
            return taken;
        } catch (IOException | RuntimeException e) {
            failedTotal++;
            throw e;
        }
    }

    // What the metrics read when scraped, without the snapshot's lock: written under it, one field at a time.
    private volatile Taken lastTaken;
    private volatile long lastTakenAtMillis;
    private volatile long takenTotal;
    private volatile long failedTotal;

    /** The last snapshot written since start, or null. */
    public Taken lastTaken() {
        return lastTaken;
    }

    /** When the last snapshot since start was written, in milliseconds since the epoch; 0 before the first. */
    public long lastTakenAtMillis() {
        return lastTakenAtMillis;
    }

    /** Snapshots written since start. */
    public long takenTotal() {
        return takenTotal;
    }

    /** Snapshots that failed since start (a full disk, a deposed leader, an interrupted write). */
    public long failedTotal() {
        return failedTotal;
    }

    private Taken writeSnapshot() throws IOException {
        long start = System.nanoTime();
        deleteUnfinished();
        // Under WAL durability: every record up to here is in the export (each was appended under the lock
        // of the shard the export copies later); records after it are replayed on top, changing nothing twice.
        // The layout with it, read with no grow in between: the snapshot carries the bucket size its sequence was
        // taken at, and a grow logged after that sequence is replayed on top.
        long[] read = pages.withSteadyLayout(() -> new long[] {wal != null ? wal.lastAppended() : lastSequence + 1, pages.layout().bucketSize()});
        long sequence = read[0];
        long bucketSize = read[1];
        if (wal != null && sequence == lastSequence && !SnapshotFile.list(stateDir).isEmpty()) {
            sequence = lastSequence; // nothing changed: rewrite the same name
        }
        BlockingQueue<Object> copies = new ArrayBlockingQueue<>(COPIES_AHEAD);
        long fileSequence = sequence;
        FutureTask<Written> writing = new FutureTask<>(() -> write(fileSequence, bucketSize, copies));
        Thread writer = new Thread(writing, "mcctl-snapshot-writer");
        writer.setDaemon(true);
        writer.start();
        Written written;
        try {
            boolean handedOver = true;
            for (int s = 0; s < pages.shardCount() && handedOver; s++) {
                long began = System.nanoTime();
                ShardCopy copy = pages.copyShard(s);
                // The copy runs at normal priority (it holds the shard's lock): rest after each, as the writer does
                // when it cannot run at idle priority.
                rest(System.nanoTime() - began);
                handedOver = handOver(copies, copy, writing);
            }
            if (handedOver) {
                handOver(copies, new Rest(pages.exportQuarantine().stream().map(ChangeCodec::quarantineRecord).toList()), writing);
            }
            written = writing.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("snapshot interrupted");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IOException("snapshot writer failed: " + e.getCause(), e.getCause());
        } finally {
            // On any way out before the writer finished (interrupt, a failed copy), stop it: its file is removed.
            writing.cancel(true);
        }
        lastSequence = sequence;
        Taken taken = new Taken(written.path(), sequence, written.mappings(), written.inFlight(), written.quarantined(),
                Files.size(written.path()), (System.nanoTime() - start) / 1_000_000);
        prune();
        LOG.info("snapshot {}: {} mappings, {} in flight, {} quarantined ranges, {} bytes in {} ms{}", written.path().getFileName(),
                taken.mappings(), taken.inFlight(), taken.quarantined(), taken.bytes(), taken.millis(),
                written.idlePriority() ? "" : " (written at normal priority, resting between stretches: chrt --idle was not available)");
        return taken;
    }

    /** Shard copies waiting for the writer: a bound on the memory a snapshot holds beyond the file itself. */
    private static final int COPIES_AHEAD = 4;

    /** Mappings written between rests when the writer runs at normal priority: some tens of microseconds of work. */
    private static final int STRETCH = 256;

    /** The last hand-over: everything after the shards. */
    private record Rest(List<QuarantineRecord> quarantine) {
    }

    private record Written(Path path, long mappings, long inFlight, long quarantined, boolean idlePriority) {
    }

    /** Puts {@code item} on the queue; false if the writer ended first (its failure is what {@code get} reports). */
    private static boolean handOver(BlockingQueue<Object> copies, Object item, FutureTask<Written> writing) throws InterruptedException {
        while (!copies.offer(item, 20, TimeUnit.MILLISECONDS)) {
            if (writing.isDone()) {
                return false;
            }
        }
        return true;
    }

    /** The writer thread: encodes the copies as they come and writes, fsyncs and renames the file. */
    private Written write(long sequence, long bucketSize, BlockingQueue<Object> copies) throws IOException, InterruptedException {
        boolean idle = IdlePriority.lowerCurrentThread();
        long[] mappings = new long[1];
        try (SnapshotFile.Writer writer = new SnapshotFile.Writer(stateDir, sequence)) {
            // Both sections stream from one pass over the shards: mappings first, in-flight after.
            List<PendingRecord> pending = new ArrayList<>();
            writer.beginSection(SnapshotFile.Section.MAPPINGS);
            ShardCopy.MappingSink sink = (scopedKey, bucket, offset, size, crc32c, pinned, blockHashes) -> {
                writer.addMapping(scopedKey, bucket, offset, size, crc32c, pinned, blockHashes);
                mappings[0]++;
            };
            List<QuarantineRecord> quarantine;
            while (true) {
                Object next = copies.take();
                if (next instanceof Rest rest) {
                    quarantine = rest.quarantine();
                    break;
                }
                ShardCopy copy = (ShardCopy) next;
                for (int from = 0; from < copy.entries(); from += STRETCH) {
                    long began = System.nanoTime();
                    copy.emitMappings(from, Math.min(copy.entries(), from + STRETCH), sink);
                    if (!idle) {
                        rest(System.nanoTime() - began);
                    }
                }
                for (io.mcctl.master.service.Change.Allocated allocation : copy.inFlight()) {
                    pending.add(ChangeCodec.pendingRecord(allocation));
                }
            }
            writer.beginSection(SnapshotFile.Section.PENDING);
            for (PendingRecord record : pending) {
                writer.add(record);
            }
            writer.beginSection(SnapshotFile.Section.QUARANTINE);
            for (QuarantineRecord record : quarantine) {
                writer.add(record);
            }
            writer.beginSection(SnapshotFile.Section.META);
            writer.add(SnapshotMeta.newBuilder()
                    .setFormatVersion(SnapshotFile.FORMAT_VERSION)
                    .setClusterId(layoutRecord.clusterId())
                    .setRootDir(pages.layout().root().toString())
                    .setBucketCount(pages.layout().bucketCount())
                    .setPageSize(pages.layout().pageSize())
                    .setBucketSize(bucketSize)
                    .setWalSequence(sequence)
                    .setCreatedMs(System.currentTimeMillis())
                    .setMappings(mappings[0])
                    .setInFlight(pending.size())
                    .setQuarantinedRanges(quarantine.size())
                    .putAllSettings(settings)
                    .putAllTenantQuotas(pages.quotas())
                    .addAllPromotionTasks(pages.promotions().export().stream().map(ChangeCodec::promotionRecord).toList())
                    // Read after the covered sequence: every reservation logged up to it and not closed is here.
                    .addAllReservations(pages.reservations().stream().map(ChangeCodec::reservationRecord).toList())
                    .setLeaderEpoch(epoch)
                    // Read after the copy: at least every batch number sealed up to the covered sequence (a later one is
                    // durable before the snapshot is: awaitLogged below), so a restart never numbers a batch again.
                    .putAllKvEventBatches(pages.kvEventHistory().lastBatches())
                    .build());
            if (wal != null) {
                awaitLogged(wal.lastAppended());
            }
            requireOwner("snapshot published");
            return new Written(writer.finish(), mappings[0], pending.size(), quarantine.size(), idle);
        }
    }

    /** How long a snapshot waits for the log to hold what it copied before it gives up. */
    private static final long LOG_WAIT_SECONDS = 30;

    /**
     * Waits until the log holds every change up to {@code sequence}: each change the snapshot copied was appended before
     * it was applied, so before the copy could see it. A snapshot published earlier could hold changes that a failing log
     * then never holds, and a restart would bring them back from the snapshot (their callers were told their outcome is
     * unknown; readers never saw them). So when the log fails first, the snapshot is not published.
     */
    private void awaitLogged(long sequence) throws IOException, InterruptedException {
        try {
            wal.whenDurable(sequence).get(LOG_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() instanceof java.util.concurrent.CompletionException && e.getCause().getCause() != null
                    ? e.getCause().getCause() : e.getCause();
            throw new IOException("snapshot not published: the log does not hold every change it copied (" + cause.getMessage() + ")", cause);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IOException("snapshot not published: the log did not make the changes it copied durable within " + LOG_WAIT_SECONDS + " s");
        }
    }

    /**
     * Rests twice as long as the last stretch of work took (at most 20 ms), for work at normal priority: it then uses
     * at most a third of a core, in stretches shorter than a time slice.
     */
    private static void rest(long workedNanos) throws java.io.InterruptedIOException {
        long nanos = Math.min(2 * workedNanos, 20_000_000L);
        if (nanos < 10_000) {
            return;
        }
        // parkNanos, not Thread.sleep: on Java 17 a sleep of a fraction of a millisecond lasts a whole one.
        LockSupport.parkNanos(nanos);
        if (Thread.interrupted()) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("snapshot interrupted");
        }
    }

    /**
     * Deletes the temp files of snapshots that a killed master never finished: nothing reads them, and each can be as
     * large as a snapshot, so they would pile up on the state directory's filesystem, one per kill during a snapshot.
     * Done before writing, so that a nearly full filesystem has their room for this one. No snapshot of this master is
     * being written now (one at a time); under high availability only the leader deletes them, and a deposed leader
     * still writing one could not publish it anyway.
     */
    private void deleteUnfinished() throws IOException {
        if (!owner.getAsBoolean()) {
            return; // this snapshot is refused when it would be published, saying why
        }
        for (Path unfinished : SnapshotFile.listUnfinished(stateDir)) {
            try {
                Files.deleteIfExists(unfinished);
            } catch (IOException e) {
                throw IoErrors.named("delete unfinished snapshot file", unfinished, e);
            }
        }
    }

    /** Keeps the newest {@code retention} snapshots and the log segments the oldest of them still needs. */
    private void prune() throws IOException {
        requireOwner("snapshots or log segments pruned");
        List<SnapshotFile.Listed> snapshots = SnapshotFile.list(stateDir);
        for (int i = retention; i < snapshots.size(); i++) {
            try {
                Files.deleteIfExists(snapshots.get(i).path());
            } catch (IOException e) {
                throw IoErrors.named("delete old snapshot", snapshots.get(i).path(), e);
            }
        }
        if (wal != null && !snapshots.isEmpty()) {
            long oldestKept = snapshots.get(Math.min(retention, snapshots.size()) - 1).walSequence();
            wal.deleteSegmentsCoveredBy(oldestKept);
        }
    }
}
