package io.mcctl.master.durability;

import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.LayoutFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
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

    /** Where the snapshots go. */
    public Path stateDir() {
        return stateDir;
    }

    public synchronized Taken take() throws IOException {
        long start = System.nanoTime();
        // Under WAL durability: every record up to here is in the export (each was appended under the lock
        // of the shard the export copies later); records after it are replayed on top, changing nothing twice.
        long sequence = wal != null ? wal.lastAppended() : lastSequence + 1;
        if (wal != null && sequence == lastSequence && !SnapshotFile.list(stateDir).isEmpty()) {
            sequence = lastSequence; // nothing changed: rewrite the same name
        }
        long[] counts = new long[2];
        Path written;
        try (SnapshotFile.Writer writer = new SnapshotFile.Writer(stateDir, sequence)) {
            // Both sections stream from one pass over the shards: mappings first, in-flight after.
            java.util.List<io.mcctl.master.proto.v1.PendingRecord> pending = new java.util.ArrayList<>();
            writer.beginSection(SnapshotFile.Section.MAPPINGS);
            pages.exportState(new PageService.StateSink() {
                @Override
                public void mapping(String scopedKey, int bucket, long offset, long size, int crc32c) throws IOException {
                    writer.addMapping(scopedKey, bucket, offset, size, crc32c);
                    counts[0]++;
                }

                @Override
                public void pending(io.mcctl.master.proto.v1.PendingRecord record) {
                    pending.add(record);
                }
            });
            writer.beginSection(SnapshotFile.Section.PENDING);
            for (io.mcctl.master.proto.v1.PendingRecord record : pending) {
                writer.add(record);
            }
            counts[1] = pending.size();
            List<QuarantineRecord> quarantine = pages.exportQuarantine();
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
                    .setBucketSize(pages.layout().bucketSize())
                    .setWalSequence(sequence)
                    .setCreatedMs(System.currentTimeMillis())
                    .setMappings(counts[0])
                    .setInFlight(counts[1])
                    .setQuarantinedRanges(quarantine.size())
                    .putAllSettings(settings)
                    .build());
            written = writer.finish();
            lastSequence = sequence;
            Taken taken = new Taken(written, sequence, counts[0], counts[1], quarantine.size(), Files.size(written),
                    (System.nanoTime() - start) / 1_000_000);
            prune();
            LOG.info("snapshot {}: {} mappings, {} in flight, {} quarantined ranges, {} bytes in {} ms", written.getFileName(),
                    taken.mappings(), taken.inFlight(), taken.quarantined(), taken.bytes(), taken.millis());
            return taken;
        }
    }

    /** Keeps the newest {@code retention} snapshots and the log segments the oldest of them still needs. */
    private void prune() throws IOException {
        List<SnapshotFile.Listed> snapshots = SnapshotFile.list(stateDir);
        for (int i = retention; i < snapshots.size(); i++) {
            Files.deleteIfExists(snapshots.get(i).path());
        }
        if (wal != null && !snapshots.isEmpty()) {
            long oldestKept = snapshots.get(Math.min(retention, snapshots.size()) - 1).walSequence();
            wal.deleteSegmentsCoveredBy(oldestKept);
        }
    }
}
