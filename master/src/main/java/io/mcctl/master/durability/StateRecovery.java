package io.mcctl.master.durability;

import io.mcctl.master.proto.v1.Allocated;
import io.mcctl.master.proto.v1.Committed;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingDropped;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.Released;
import io.mcctl.master.proto.v1.Removed;
import io.mcctl.master.proto.v1.Renewed;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.master.proto.v1.WalRecord;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Rebuilds master state from a state directory: the newest snapshot whose checksums verify (a corrupt
 * one is reported and the one before it used), then every WAL record after it. Replaying a change the
 * snapshot already holds changes nothing, since each record names the placement it is about; that is
 * what lets a snapshot be taken while the master serves.
 */
public final class StateRecovery {

    /** What recovery found. */
    public static final class Recovered {
        public final Map<String, PendingRecord> pending = new HashMap<>();
        public final Map<Long, QuarantineRecord> quarantine = new HashMap<>();
        public Path snapshot;
        public long snapshotSequence;
        public long lastSequence;
        public long replayed;
        public WalReader.Outcome wal;
        /** Time spent reading the snapshot and replaying the log, for the start-up log line. */
        public long snapshotMillis;
        public long replayMillis;
        public final List<String> warnings = new ArrayList<>();
        final long pageSize;
        /** Where the committed mappings went. */
        public final MappingTable table;

        Recovered(long pageSize, MappingTable table) {
            this.pageSize = pageSize;
            this.table = table;
        }

        /** The committed mappings, when recovered into records (the tools' recovery); empty otherwise. */
        public Map<String, MappingRecord> mappings() {
            return table instanceof MappingTable.Records records ? records.mappings() : Map.of();
        }
    }

    private StateRecovery() {
    }

    /**
     * @param replayWal false under snapshot durability: the state is the newest snapshot's
     */
    public static Recovered recover(Path stateDir, BucketLayout layout, boolean replayWal) throws IOException {
        return recover(stateDir, layout, replayWal, true, MappingTable.Records::new);
    }

    /**
     * Recovery as {@link #recover(Path, BucketLayout, boolean)}, with the committed mappings put into a table from
     * {@code tables} (a fresh one for each snapshot tried): a starting master passes its page service's.
     */
    public static Recovered recover(Path stateDir, BucketLayout layout, boolean replayWal, java.util.function.Supplier<MappingTable> tables)
            throws IOException {
        return recover(stateDir, layout, replayWal, true, tables);
    }

    /**
     * Recovery that changes nothing on disk (a torn tail is reported, not cut): for tools that look at the
     * state directory of a master that may still be running.
     */
    public static Recovered recoverReadOnly(Path stateDir, BucketLayout layout, boolean replayWal) throws IOException {
        return recover(stateDir, layout, replayWal, false, MappingTable.Records::new);
    }

    private static Recovered recover(Path stateDir, BucketLayout layout, boolean replayWal, boolean repair,
                                     java.util.function.Supplier<MappingTable> tables) throws IOException {
        Recovered state = new Recovered(layout.pageSize(), tables.get());
        long begin = System.nanoTime();
        for (SnapshotFile.Listed listed : SnapshotFile.list(stateDir)) {
            try {
                Recovered attempt = new Recovered(layout.pageSize(), tables.get());
                loadSnapshot(listed.path(), layout, attempt);
                attempt.warnings.addAll(state.warnings);
                state = attempt;
                break;
            } catch (CorruptStateException e) {
                state.warnings.add("snapshot " + listed.path().getFileName() + " is unusable (" + e.getMessage() + "); trying an older one");
            }
        }
        if (state.snapshot == null && !state.warnings.isEmpty() && !replayWal) {
            throw new CorruptStateException(stateDir, 0, "no usable snapshot: " + String.join("; ", state.warnings));
        }
        state.lastSequence = state.snapshotSequence;
        state.snapshotMillis = (System.nanoTime() - begin) / 1_000_000;
        long replayBegin = System.nanoTime();
        if (replayWal) {
            Recovered target = state;
            target.wal = WalReader.read(stateDir, state.snapshotSequence, repair, (record, file, offset) -> {
                apply(target, record);
                target.replayed++;
            });
            state.lastSequence = target.wal.lastSequence();
            if (state.wal.torn()) {
                state.warnings.add((repair ? "cut a torn record off the end of " : "a torn record ends ") + state.wal.tornFile().getFileName()
                        + " at byte " + state.wal.tornOffset());
            }
            List<WalSegments.Segment> segments = WalSegments.list(stateDir);
            if (state.snapshot == null && state.replayed > 0 && !segments.isEmpty() && segments.get(0).firstSequence() > 1) {
                throw new CorruptStateException(segments.get(0).path(), 0, "the log starts at record " + segments.get(0).firstSequence()
                        + " and no snapshot covers the records before it");
            }
        }
        state.replayMillis = (System.nanoTime() - replayBegin) / 1_000_000;
        return state;
    }

    private static void loadSnapshot(Path path, BucketLayout layout, Recovered state) throws IOException {
        SnapshotFile.Reader reader = SnapshotFile.open(path);
        SnapshotMeta meta = reader.meta();
        if (meta.getBucketCount() != layout.bucketCount() || meta.getPageSize() != layout.pageSize() || meta.getBucketSize() != layout.bucketSize()) {
            throw new io.mcctl.storage.layout.LayoutMismatchException(path + " was written for " + meta.getBucketCount() + " buckets of "
                    + meta.getBucketSize() + " bytes with pages of " + meta.getPageSize() + "; this master has " + layout.bucketCount()
                    + " buckets of " + layout.bucketSize() + " bytes with pages of " + layout.pageSize());
        }
        state.table.load(reader);
        reader.read(SnapshotFile.Section.PENDING, PendingRecord.parser(), p -> state.pending.put(scoped(p.getTenantId(), p.getKey()), p));
        reader.read(SnapshotFile.Section.QUARANTINE, QuarantineRecord.parser(), q -> state.quarantine.put(rangeKey(q.getBucket(), q.getFirstPage()), q));
        state.snapshot = path;
        state.snapshotSequence = meta.getWalSequence();
    }

    /** Applies one logged change; a change already in the state is a no-op. */
    static void apply(Recovered state, WalRecord record) {
        switch (record.getChangeCase()) {
            case ALLOCATED -> {
                Allocated a = record.getAllocated();
                state.pending.put(scoped(a.getTenantId(), a.getKey()), PendingRecord.newBuilder().setTenantId(a.getTenantId())
                        .setKey(a.getKey()).setPlacement(a.getPlacement()).setDeadlineMs(a.getDeadlineMs()).setOverwrite(a.getOverwrite()).build());
            }
            case COMMITTED -> {
                Committed c = record.getCommitted();
                String key = scoped(c.getTenantId(), c.getKey());
                // The allocation this commit ends is in flight no more, even when the snapshot already holds the
                // commit: its Allocated record, replayed just before, has put it back.
                PendingRecord pending = state.pending.get(key);
                if (pending != null && sameRange(pending.getPlacement(), c.getPlacement())) {
                    state.pending.remove(key);
                }
                PlacementRecord current = state.table.get(key);
                if (current != null && current.equals(c.getPlacement())) {
                    return;
                }
                if (c.hasReplaced() && current != null && sameRange(current, c.getReplaced())) {
                    quarantine(state, c.getReplaced(), c.getReplacedReleaseMs());
                }
                state.table.put(key, c.getTenantId(), c.getKey(), c.getPlacement());
            }
            case PENDING_DROPPED -> {
                PendingDropped d = record.getPendingDropped();
                String key = scoped(d.getTenantId(), d.getKey());
                PendingRecord pending = state.pending.get(key);
                if (pending != null && sameRange(pending.getPlacement(), d.getPlacement())) {
                    state.pending.remove(key);
                    // An expired or dropped allocation's pages wait out the grace, as they did in the master that logged it.
                    quarantine(state, d.getPlacement(), d.getReleaseMs());
                }
            }
            case RENEWED -> {
                Renewed r = record.getRenewed();
                String key = scoped(r.getTenantId(), r.getKey());
                PendingRecord pending = state.pending.get(key);
                if (pending != null && sameRange(pending.getPlacement(), r.getPlacement())) {
                    state.pending.put(key, pending.toBuilder().setDeadlineMs(r.getDeadlineMs()).build());
                }
            }
            case REMOVED -> {
                Removed r = record.getRemoved();
                String key = scoped(r.getTenantId(), r.getKey());
                PlacementRecord current = state.table.get(key);
                if (current != null && sameRange(current, r.getPlacement())) {
                    state.table.remove(key);
                    quarantine(state, r.getPlacement(), r.getReleaseMs());
                }
            }
            case RELEASED -> {
                Released r = record.getReleased();
                state.quarantine.remove(rangeKey(r.getBucket(), r.getFirstPage()));
            }
            case CHANGE_NOT_SET -> {
                // A record from a newer mcctl with a change this one does not know: nothing to apply.
            }
        }
    }

    /**
     * A removed or replaced mapping's pages, or an ended allocation's: quarantined until their release time (a read lease,
     * or an allocation's deadline plus grace) when the master quarantined them, which it logs as a release time; 0 means
     * freed at once. Decided on that alone, not on the record's wall-clock time: the master decided on its own monotonic
     * clock, and a wall clock that stepped either way must not turn a quarantine into a free. A release time already past
     * is released by the restarted master's first reap, as the master that logged it would have.
     */
    private static void quarantine(Recovered state, PlacementRecord placement, long releaseMs) {
        if (releaseMs > 0) {
            long firstPage = placement.getOffset() / state.pageSize;
            long pages = (placement.getSize() + state.pageSize - 1) / state.pageSize;
            state.quarantine.put(rangeKey(placement.getBucket(), firstPage), QuarantineRecord.newBuilder().setBucket(placement.getBucket())
                    .setFirstPage(firstPage).setPages(pages).setReleaseMs(releaseMs).build());
        }
    }

    static boolean sameRange(PlacementRecord a, PlacementRecord b) {
        return a.getBucket() == b.getBucket() && a.getOffset() == b.getOffset() && a.getSize() == b.getSize();
    }

    static String scoped(String tenant, String key) {
        return io.mcctl.master.service.KeyRules.scopedKey(tenant, key);
    }

    static long rangeKey(int bucket, long firstPage) {
        return ((long) bucket << 40) | firstPage;
    }
}
