package io.mcctl.master.durability;

import io.mcctl.master.service.StateVisitor;
import io.mcctl.master.service.Restorer;
import io.mcctl.master.service.QuarantinedRange;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.master.service.Change;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Rebuilds master state from a state directory into a page service: the newest snapshot whose checksums verify (a
 * corrupt one is reported and the one before it used), then every log record after it, each applied through the
 * same transition the master applied when it made the change ({@link Restorer#apply}). Applying a change
 * the snapshot already holds changes nothing, since each record names the placement it is about; that is what lets
 * a snapshot be taken while the master serves.
 */
public final class StateRecovery {

    /** What recovery found: the restored service, and where its state came from. */
    public static final class Recovered {
        /** The restored state. Serving only after {@link #recover} (which claims every page); tools only read it. */
        public final PageService pages;
        public Path snapshot;
        public long snapshotSequence;
        public long lastSequence;
        public long replayed;
        public WalReader.Outcome wal;
        /** Time spent reading the snapshot and replaying the log, for the start-up log line. */
        public long snapshotMillis;
        public long replayMillis;
        public final List<String> warnings = new ArrayList<>();
        private Map<String, MappingRecord> mappings;
        private Map<String, PendingRecord> pending;
        private Map<Long, QuarantineRecord> quarantine;

        Recovered(PageService pages) {
            this.pages = pages;
        }

        /** The committed mappings as records by scoped key: what the tools look at. */
        public Map<String, MappingRecord> mappings() {
            records();
            return mappings;
        }

        /** The in-flight allocations as records by scoped key. */
        public Map<String, PendingRecord> pending() {
            records();
            return pending;
        }

        /** The quarantined ranges as records by bucket and first page. */
        public Map<Long, QuarantineRecord> quarantine() {
            records();
            return quarantine;
        }

        private void records() {
            if (mappings != null) {
                return;
            }
            Map<String, MappingRecord> m = new HashMap<>();
            Map<String, PendingRecord> p = new HashMap<>();
            Map<Long, QuarantineRecord> q = new HashMap<>();
            pages.visit(new StateVisitor() {
                @Override
                public void mapping(String tenant, String key, Placement placement, boolean pinned) {
                    m.put(KeyRules.scopedKey(tenant, key), MappingRecord.newBuilder().setTenantId(tenant).setKey(key)
                            .setPlacement(ChangeCodec.record(placement)).setPinned(pinned).build());
                }

                @Override
                public void inFlight(Change.Allocated allocation) {
                    p.put(KeyRules.scopedKey(allocation.tenant(), allocation.key()), ChangeCodec.pendingRecord(allocation));
                }

                @Override
                public void quarantined(QuarantinedRange range) {
                    q.put(((long) range.bucket() << 40) | range.firstPage(), ChangeCodec.quarantineRecord(range));
                }
            });
            mappings = m;
            pending = p;
            quarantine = q;
        }
    }

    private StateRecovery() {
    }

    /**
     * Recovery for a starting master, into a fresh service from {@code services} (one for each snapshot tried), with
     * every page claimed: state where two claims share a page is refused.
     *
     * @param replayWal false under snapshot durability: the state is the newest snapshot's
     */
    public static Recovered recover(Path stateDir, BucketLayout layout, boolean replayWal, Supplier<PageService> services) throws IOException {
        return recover(stateDir, layout, replayWal, null, services);
    }

    /** Recovery as a starting master runs it: every log segment must belong to {@code clusterId} (null: not checked). */
    public static Recovered recover(Path stateDir, BucketLayout layout, boolean replayWal, String clusterId, Supplier<PageService> services)
            throws IOException {
        Recovered state = recover(stateDir, layout, replayWal, true, clusterId, services);
        try {
            state.pages.restorer().finish();
        } catch (IllegalStateException e) {
            throw new CorruptStateException(stateDir, 0, "recovered state is inconsistent: " + e.getMessage());
        }
        return state;
    }

    /** Recovery for a starting master with default timings (tests). */
    public static Recovered recover(Path stateDir, BucketLayout layout, boolean replayWal) throws IOException {
        return recover(stateDir, layout, replayWal, () -> toolService(layout));
    }

    /**
     * Recovery that changes nothing on disk (a torn tail is reported, not cut) and refuses nothing that it can read
     * (two claims on a page are left for the caller to report): for tools that look at the state directory of a
     * master that may still be running.
     */
    public static Recovered recoverReadOnly(Path stateDir, BucketLayout layout, boolean replayWal) throws IOException {
        Recovered state = recover(stateDir, layout, replayWal, false, null, () -> toolService(layout));
        state.pages.restorer().finishTables();
        return state;
    }

    private static PageService toolService(BucketLayout layout) {
        return PageService.builder(layout).allocationDeadline(Duration.ofSeconds(60)).readLease(Duration.ofSeconds(5)).build();
    }

    /**
     * @param clusterId when set, every log segment must belong to this cluster (a starting master's check); null for
     *                  tools, which read whatever is there
     */
    private static Recovered recover(Path stateDir, BucketLayout layout, boolean replayWal, boolean repair, String clusterId,
                                     Supplier<PageService> services) throws IOException {
        return recover(stateDir, layout, replayWal, repair, clusterId, services, true);
    }

    /** @param replayNow false: only the snapshot is loaded (with the log's fences applied to the choice of it) */
    private static Recovered recover(Path stateDir, BucketLayout layout, boolean replayWal, boolean repair, String clusterId,
                                     Supplier<PageService> services, boolean replayNow) throws IOException {
        Recovered state = new Recovered(services.get());
        state.pages.restorer();
        long begin = System.nanoTime();
        CorruptStateException newestUnusable = null;
        List<WalSegmentHeader.Fence> fences = replayWal ? WalReader.fences(stateDir) : List.of();
        for (SnapshotFile.Listed listed : SnapshotFile.list(stateDir)) {
            try {
                Recovered attempt = new Recovered(services.get());
                loadSnapshot(listed.path(), layout, attempt, fences);
                attempt.warnings.addAll(state.warnings);
                state = attempt;
                break;
            } catch (CorruptStateException e) {
                state.warnings.add("snapshot " + listed.path().getFileName() + " is unusable (" + e.getMessage() + "); trying an older one");
                newestUnusable = newestUnusable == null ? e : newestUnusable;
            }
        }
        if (state.snapshot == null && !state.warnings.isEmpty() && !replayWal) {
            throw new CorruptStateException(stateDir, 0, "no usable snapshot: " + String.join("; ", state.warnings));
        }
        state.lastSequence = state.snapshotSequence;
        state.snapshotMillis = (System.nanoTime() - begin) / 1_000_000;
        long replayBegin = System.nanoTime();
        if (replayWal && replayNow) {
            Recovered target = state;
            try {
                target.wal = WalReader.read(stateDir, state.snapshotSequence, repair, clusterId, applier(target));
                List<WalSegments.Segment> segments = WalSegments.list(stateDir);
                if (state.snapshot == null && target.replayed > 0 && !segments.isEmpty() && segments.get(0).firstSequence() > 1) {
                    throw new CorruptStateException(segments.get(0).path(), 0, "the log starts at record " + segments.get(0).firstSequence()
                            + " and no snapshot covers the records before it");
                }
            } catch (CorruptStateException e) {
                if (newestUnusable == null) {
                    throw e;
                }
                // What the log lacks is what the corrupt snapshot held: it is named first, being the cause and the way out.
                throw new CorruptStateException(newestUnusable.file(), newestUnusable.offset(), "snapshot is corrupt ("
                        + newestUnusable.what() + ") and the older snapshots and log cannot stand in for it: " + e.getMessage()
                        + " ('mcctl snapshot recover' shows what can be kept)");
            }
            state.lastSequence = target.wal.lastSequence();
            for (String fenced : state.wal.fenced()) {
                state.warnings.add("fenced: " + fenced);
            }
            for (String passed : state.wal.skipped()) {
                state.warnings.add("damaged log record passed over: " + passed);
            }
            if (state.wal.torn()) {
                state.warnings.add((repair ? "cut a torn record off the end of " : "a torn record ends ") + state.wal.tornFile().getFileName()
                        + " at byte " + state.wal.tornOffset());
            }
        }
        state.replayMillis = (System.nanoTime() - replayBegin) / 1_000_000;
        return state;
    }

    /**
     * Decodes each record and applies it to {@code state} through the transition serving used
     * ({@link Restorer#apply}), counting it: the one apply of replay and of a standby's follow.
     */
    public static WalReader.RecordConsumer applier(Recovered state) {
        Restorer restorer = state.pages.restorer();
        return (record, file, offset) -> {
            Change change;
            try {
                change = ChangeCodec.decode(record);
            } catch (IllegalArgumentException e) {
                throw new CorruptStateException(file, offset, "record " + record.getSequence() + " holds " + e.getMessage());
            }
            restorer.apply(change);
            state.pages.kvEventHistory().replayed(change, record.getSequence());
            state.replayed++;
            state.lastSequence = record.getSequence();
        };
    }

    /**
     * The start of a standby's follow: the newest usable snapshot (none: empty state) loaded into a fresh service,
     * not yet finished, so that the log's records can be applied to it as they are written ({@link #applier}, with
     * {@link WalReader#follow}); {@code lastSequence} is the snapshot's. Nothing on disk is changed.
     */
    public static Recovered startFollowing(Path stateDir, BucketLayout layout, Supplier<PageService> services) throws IOException {
        Recovered state = recover(stateDir, layout, true, false, null, services, false);
        state.lastSequence = state.snapshotSequence;
        return state;
    }

    private static void loadSnapshot(Path path, BucketLayout layout, Recovered state, List<WalSegmentHeader.Fence> fences) throws IOException {
        SnapshotFile.Reader reader = SnapshotFile.open(path);
        SnapshotMeta meta = reader.meta();
        for (WalSegmentHeader.Fence fence : fences) {
            if (fence.epoch() > meta.getLeaderEpoch() && fence.sequence() < meta.getWalSequence()) {
                throw new CorruptStateException(path, 0, "taken by the leader of epoch " + meta.getLeaderEpoch() + " at record "
                        + meta.getWalSequence() + ", past record " + fence.sequence() + " where the leader of epoch " + fence.epoch()
                        + " took over: a deposed leader's");
            }
        }
        // The bucket size may differ: a layout grow recorded in the log (or the root's record) but not yet in the other.
        // Buckets only grow, so the larger size is the one in force.
        if (meta.getBucketCount() != layout.bucketCount() || meta.getPageSize() != layout.pageSize()) {
            throw new io.mcctl.storage.layout.LayoutMismatchException(path + " was written for " + meta.getBucketCount() + " buckets of "
                    + meta.getBucketSize() + " bytes with pages of " + meta.getPageSize() + "; this master has " + layout.bucketCount()
                    + " buckets of " + layout.bucketSize() + " bytes with pages of " + layout.pageSize());
        }
        Restorer restorer = state.pages.restorer();
        restorer.apply(new Change.LayoutGrown(layout.bucketSize(), meta.getBucketSize()));
        loadMappings(reader, restorer);
        reader.read(SnapshotFile.Section.PENDING, PendingRecord.parser(), p -> restorer.inFlight(ChangeCodec.inFlight(p)));
        reader.read(SnapshotFile.Section.QUARANTINE, QuarantineRecord.parser(), q -> restorer.quarantined(ChangeCodec.quarantined(q)));
        meta.getTenantQuotasMap().forEach((tenant, bytes) -> restorer.apply(new Change.QuotaSet(tenant, bytes)));
        meta.getPromotionTasksList().forEach(task -> restorer.apply(ChangeCodec.promotionTask(task)));
        meta.getReservationsList().forEach(reserved -> restorer.reserved(ChangeCodec.reservation(reserved)));
        state.snapshot = path;
        state.snapshotSequence = meta.getWalSequence();
        state.pages.kvEventHistory().startFrom(meta.getWalSequence(), meta.getKvEventBatchesMap());
    }

    /** The snapshot's mappings, decoded on every core straight into the service's tables: a million are not built twice. */
    public static void loadMappings(SnapshotFile.Reader reader, Restorer restorer) throws IOException {
        final class Share implements SnapshotFile.RawRecordVisitor {
            final Restorer.Batch batch = restorer.newBatch();
            final MappingRecordDecoder decoder = new MappingRecordDecoder();

            @Override
            public void record(java.nio.ByteBuffer bytes, int offset, int length) throws com.google.protobuf.InvalidProtocolBufferException {
                decoder.decode(bytes, offset, length, batch::add);
            }
        }
        List<Share> shares = reader.readShares(SnapshotFile.Section.MAPPINGS, Runtime.getRuntime().availableProcessors(), i -> new Share());
        restorer.putAll(shares.stream().map(share -> share.batch).toList());
    }

    static String scoped(String tenant, String key) {
        return KeyRules.scopedKey(tenant, key);
    }
}
