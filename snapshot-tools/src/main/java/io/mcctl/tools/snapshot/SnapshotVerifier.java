package io.mcctl.tools.snapshot;

import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.StateRecovery;
import io.mcctl.master.durability.WalReader;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.mcctl.storage.layout.LayoutMismatchException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Checks a snapshot file, or a whole state directory, without changing anything.
 *
 * <p>A snapshot: it opens (magic, version, footer, meta), every section's checksum and record count
 * holds and every record decodes, the meta record's counts match the sections, every range lies inside
 * its bucket on page boundaries, and no two of its mappings, in-flight allocations and quarantined ranges
 * share a page ({@link PageClaims}).
 *
 * <p>A state directory: every snapshot in it as above; the write-ahead log read in full with
 * {@link WalReader} (a torn tail is a warning, anything else that does not read an error) and starting
 * no later than the newest usable snapshot needs; then {@link StateRecovery#recover} run on a working
 * copy (recovery cuts a torn tail off, and the live directory must not change), and the state it rebuilds
 * checked like a snapshot.
 */
public final class SnapshotVerifier {

    /** One snapshot's check. */
    public record SnapshotResult(Path file, long walSequence, boolean ok, long mappings, long inFlight, long quarantinedRanges,
                                 long quarantinedPages) {
        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("file", file.toString());
            out.put("wal_sequence", walSequence);
            out.put("ok", ok);
            out.put("mappings", mappings);
            out.put("in_flight", inFlight);
            out.put("quarantined_ranges", quarantinedRanges);
            out.put("quarantined_pages", quarantinedPages);
            return out;
        }
    }

    /** The log's check. {@code firstSequence} and {@code lastSequence} are 0 when it holds no record. */
    public record WalResult(int segments, long records, long firstSequence, long lastSequence, Path tornFile, long tornOffset, boolean ok) {
        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("segments", segments);
            out.put("records", records);
            out.put("first_sequence", records == 0 ? null : firstSequence);
            out.put("last_sequence", records == 0 ? null : lastSequence);
            out.put("torn", tornFile != null);
            out.put("torn_file", tornFile == null ? null : tornFile.toString());
            out.put("torn_offset", tornFile == null ? null : tornOffset);
            out.put("ok", ok);
            return out;
        }
    }

    /** The recovery's check; {@code skipped} says why it did not run, else null. */
    public record RecoveryResult(String skipped, Path snapshot, long snapshotSequence, long replayed, long lastSequence, long mappings,
                                 long inFlight, long quarantinedRanges, boolean ok) {
        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("ran", skipped == null);
            out.put("skipped", skipped);
            out.put("snapshot", snapshot == null ? null : snapshot.getFileName().toString());
            out.put("snapshot_sequence", snapshotSequence);
            out.put("replayed", replayed);
            out.put("last_sequence", lastSequence);
            out.put("mappings", mappings);
            out.put("in_flight", inFlight);
            out.put("quarantined_ranges", quarantinedRanges);
            out.put("ok", ok);
            return out;
        }
    }

    /** Everything one verify found; {@code wal} and {@code recovery} are null for a single snapshot file or a directory without a log. */
    public record Report(Path target, boolean stateDir, List<SnapshotResult> snapshots, WalResult wal, RecoveryResult recovery,
                         List<Problem> problems) {

        public long errors() {
            return problems.stream().filter(Problem::isError).count();
        }

        public long warnings() {
            return problems.size() - errors();
        }

        public boolean passed() {
            return errors() == 0;
        }

        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("target", target.toString());
            out.put("kind", stateDir ? "state_dir" : "snapshot");
            out.put("passed", passed());
            out.put("errors", errors());
            out.put("warnings", warnings());
            out.put("snapshots", snapshots.stream().map(SnapshotResult::json).toList());
            out.put("wal", wal == null ? null : wal.json());
            out.put("recovery", recovery == null ? null : recovery.json());
            out.put("problems", problems.stream().map(Problem::json).toList());
            return out;
        }
    }

    private SnapshotVerifier() {
    }

    /** Verifies {@code target}: a snapshot file or a state directory. */
    public static Report verify(Path target) throws IOException {
        if (Files.isDirectory(target)) {
            return verifyStateDir(target);
        }
        if (!Files.exists(target)) {
            throw new NoSuchFileException(target.toString());
        }
        List<Problem> problems = new ArrayList<>();
        Checked checked = checkSnapshot(target, problems);
        return new Report(target, false, List.of(checked.result()), null, null, problems);
    }

    /**
     * A snapshot's result and, when it opened, its meta and layout; {@code loadable} when recovery would load it
     * (it opens and its sections read), whatever else is wrong with it.
     */
    private record Checked(SnapshotResult result, SnapshotMeta meta, BucketLayout layout, boolean loadable) {
    }

    private static final java.util.regex.Pattern SNAPSHOT_NAME = java.util.regex.Pattern.compile("snapshot-(\\d{20})\\.snap");

    private static Checked checkSnapshot(Path file, List<Problem> problems) throws IOException {
        int before = problems.size();
        java.util.regex.Matcher name = SNAPSHOT_NAME.matcher(file.getFileName().toString());
        long named = name.matches() ? Long.parseLong(name.group(1)) : -1;
        SnapshotFile.Reader reader;
        BucketLayout layout;
        try {
            reader = SnapshotFile.open(file);
            layout = SnapshotRecords.layout(reader);
        } catch (CorruptStateException e) {
            problems.add(Problem.of(e));
            return new Checked(new SnapshotResult(file, Math.max(named, 0), false, 0, 0, 0, 0), null, null, false);
        }
        SnapshotMeta meta = reader.meta();
        if (meta.getFormatVersion() != reader.formatVersion()) {
            problems.add(Problem.error(file, metaOffset(reader), "meta record says format version " + meta.getFormatVersion()
                    + ", the header " + reader.formatVersion()));
        }
        if (named >= 0 && named != meta.getWalSequence()) {
            problems.add(Problem.error(file, metaOffset(reader), "file is named for WAL sequence " + named + " but its meta record covers "
                    + meta.getWalSequence()));
        }
        // The overlap check reads the sections twice when it has overlaps to name: count and collect read problems once.
        long[] counts = new long[4]; // mappings, in flight, quarantined ranges, quarantined pages
        List<Problem> readProblems = new ArrayList<>();
        boolean[] firstPass = {true};
        PageClaims.Result claims = PageClaims.check(layout, sink -> {
            boolean counting = firstPass[0];
            firstPass[0] = false;
            List<Problem> found = SnapshotRecords.readAll(reader, new SnapshotRecords.Visitor() {
                @Override
                public void mapping(MappingRecord m, long offset) {
                    emit(PageClaims.placement(PageClaims.Kind.MAPPING, m.getTenantId(), m.getKey(), m.getPlacement(), layout.pageSize(),
                            file, offset));
                }

                @Override
                public void pending(PendingRecord p, long offset) {
                    emit(PageClaims.placement(PageClaims.Kind.IN_FLIGHT, p.getTenantId(), p.getKey(), p.getPlacement(), layout.pageSize(),
                            file, offset));
                }

                @Override
                public void quarantine(QuarantineRecord q, long offset) {
                    emit(PageClaims.quarantine(q, layout.pageSize(), file, offset));
                }

                private void emit(PageClaims.Claim claim) {
                    if (counting) {
                        counts[claim.kind().ordinal()]++;
                        if (claim.kind() == PageClaims.Kind.QUARANTINE) {
                            counts[3] += Math.max(0, claim.pages());
                        }
                    }
                    sink.accept(claim);
                }
            });
            if (counting) {
                readProblems.addAll(found);
            }
        }, "");
        problems.addAll(readProblems);
        problems.addAll(claims.problems());
        if (readProblems.isEmpty()) {
            checkCount(file, reader, "mappings", meta.getMappings(), counts[0], problems);
            checkCount(file, reader, "in-flight allocations", meta.getInFlight(), counts[1], problems);
            checkCount(file, reader, "quarantined ranges", meta.getQuarantinedRanges(), counts[2], problems);
        }
        boolean ok = problems.subList(before, problems.size()).stream().noneMatch(Problem::isError);
        return new Checked(new SnapshotResult(file, meta.getWalSequence(), ok, counts[0], counts[1], counts[2], counts[3]), meta, layout,
                readProblems.isEmpty());
    }

    private static void checkCount(Path file, SnapshotFile.Reader reader, String what, long inMeta, long inSections, List<Problem> problems) {
        if (inMeta != inSections) {
            problems.add(Problem.error(file, metaOffset(reader), "meta record counts " + inMeta + " " + what + ", the sections hold " + inSections));
        }
    }

    private static long metaOffset(SnapshotFile.Reader reader) {
        SnapshotFile.SectionInfo info = reader.info(SnapshotFile.Section.META);
        return info == null ? -1 : info.offset();
    }

    // ---- state directory ----

    private static Report verifyStateDir(Path dir) throws IOException {
        List<Problem> problems = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path leftover : files.filter(f -> f.getFileName().toString().matches("snapshot-\\d{20}\\.snap\\.tmp")).sorted().toList()) {
                problems.add(Problem.warning(leftover, -1, "left by a snapshot that did not finish; nothing reads it, and it can be deleted"));
            }
        }
        List<SnapshotResult> snapshots = new ArrayList<>();
        Checked newestLoadable = null;
        for (SnapshotFile.Listed listed : SnapshotFile.list(dir)) {
            Checked checked = checkSnapshot(listed.path(), problems);
            snapshots.add(checked.result());
            if (checked.meta() != null) {
                checkAgainstLayoutFile(listed.path(), checked.meta(), problems);
            }
            if (newestLoadable == null && checked.loadable()) {
                newestLoadable = checked;
            }
        }
        List<WalSegments.Segment> segments = WalSegments.list(dir);
        WalResult wal = segments.isEmpty() ? null : checkWal(dir, segments, newestLoadable == null ? 0 : newestLoadable.result().walSequence(), problems);
        if (snapshots.isEmpty() && segments.isEmpty()) {
            problems.add(Problem.error(dir, -1, "holds no snapshot (snapshot-<sequence>.snap) and no log segment (wal-<sequence>.log): "
                    + "is it the master's state directory (default <root>/master)?"));
        }
        RecoveryResult recovery = snapshots.isEmpty() && segments.isEmpty() ? null
                : checkRecovery(dir, !segments.isEmpty(), layoutFor(dir, snapshots, newestLoadable), problems);
        return new Report(dir, true, snapshots, wal, recovery, problems);
    }

    /** A snapshot whose layout or cluster differs from the layout record at its root would not load, or is another cluster's. */
    private static void checkAgainstLayoutFile(Path file, SnapshotMeta meta, List<Problem> problems) {
        Path layoutFile;
        try {
            layoutFile = Path.of(meta.getRootDir()).resolve(LayoutFile.FILE_NAME);
        } catch (java.nio.file.InvalidPathException e) {
            return;
        }
        if (meta.getRootDir().isEmpty() || !Files.isRegularFile(layoutFile)) {
            return; // a snapshot copied away from its root: nothing to compare with
        }
        LayoutFile.Record record;
        try {
            record = LayoutFile.read(layoutFile);
        } catch (IOException | LayoutMismatchException e) {
            problems.add(Problem.warning(layoutFile, -1, "cannot be read to compare with " + file.getFileName() + ": " + e.getMessage()));
            return;
        }
        // The bucket sizes may differ: a layout grow reaches the log, the snapshots and the record one after another.
        if (record.bucketCount() != meta.getBucketCount() || record.pageSize() != meta.getPageSize()) {
            problems.add(Problem.error(file, -1, "written for " + meta.getBucketCount() + " buckets of " + meta.getBucketSize()
                    + " bytes with pages of " + meta.getPageSize() + ", but " + layoutFile + " records " + record.bucketCount() + " buckets of "
                    + record.bucketSize() + " bytes with pages of " + record.pageSize() + ": a master on that root cannot load it"));
        } else if (!record.clusterId().equals(meta.getClusterId())) {
            problems.add(Problem.warning(file, -1, "belongs to cluster " + meta.getClusterId() + ", but " + layoutFile + " records cluster "
                    + record.clusterId()));
        }
    }

    private static WalResult checkWal(Path dir, List<WalSegments.Segment> segments, long snapshotSequence, List<Problem> problems)
            throws IOException {
        long first = segments.get(0).firstSequence();
        long[] seen = {0, 0, 0}; // first sequence read, records, last sequence read
        Path[] lastFile = {null};
        boolean ok = true;
        WalReader.Outcome outcome = null;
        try {
            // Segments older than the first were deleted once a snapshot covered them: read what is there, from its start.
            outcome = WalReader.read(dir, Math.max(0, first - 1), false, (record, file, offset) -> {
                if (seen[1]++ == 0) {
                    seen[0] = record.getSequence();
                }
                seen[2] = record.getSequence();
                if (!file.equals(lastFile[0])) {
                    lastFile[0] = file;
                    for (WalSegments.Segment s : segments) {
                        if (s.path().equals(file) && offset == 0 && s.firstSequence() != record.getSequence()) {
                            problems.add(Problem.error(file, 0, "segment is named for record " + s.firstSequence() + " but starts with record "
                                    + record.getSequence()));
                        }
                    }
                }
            });
        } catch (CorruptStateException e) {
            problems.add(Problem.of(e));
            ok = false;
        }
        if (outcome != null && outcome.torn()) {
            problems.add(Problem.warning(outcome.tornFile(), outcome.tornOffset(), "torn tail: the last record was cut short by a crash; "
                    + "the master cuts it off when it next starts (nothing acknowledged is lost)"));
        }
        if (first > snapshotSequence + 1) {
            ok = false;
            problems.add(Problem.error(segments.get(0).path(), 0, snapshotSequence == 0
                    ? "the log starts at record " + first + " and no usable snapshot covers records 1 to " + (first - 1)
                    : "the log starts at record " + first + " but the newest usable snapshot covers records up to " + snapshotSequence
                    + ": records " + (snapshotSequence + 1) + " to " + (first - 1) + " are missing"));
        }
        return new WalResult(segments.size(), seen[1], seen[0], seen[2], outcome == null ? null : outcome.tornFile(),
                outcome == null ? -1 : outcome.tornOffset(), ok);
    }

    /** The layout recovery loads with: the newest loadable snapshot's, else any snapshot's, else the layout record next to the state directory. */
    private static BucketLayout layoutFor(Path dir, List<SnapshotResult> snapshots, Checked newestLoadable) {
        if (newestLoadable != null) {
            return newestLoadable.layout();
        }
        for (SnapshotResult s : snapshots) {
            try {
                return SnapshotRecords.layout(SnapshotFile.open(s.file()));
            } catch (IOException e) {
                // try the next
            }
        }
        Path parent = dir.toAbsolutePath().getParent();
        if (parent != null && Files.isRegularFile(parent.resolve(LayoutFile.FILE_NAME))) {
            try {
                LayoutFile.Record record = LayoutFile.read(parent.resolve(LayoutFile.FILE_NAME));
                return new BucketLayout(parent, record.bucketCount(), record.pageSize(), record.bucketSize());
            } catch (IOException | RuntimeException e) {
                return null;
            }
        }
        return null;
    }

    private static RecoveryResult checkRecovery(Path dir, boolean replayWal, BucketLayout layout, List<Problem> problems) throws IOException {
        if (layout == null) {
            String why = "no snapshot opens and there is no " + LayoutFile.FILE_NAME + " next to " + dir + " to give the layout";
            problems.add(Problem.warning(dir, -1, "recovery not checked: " + why));
            return new RecoveryResult(why, null, 0, 0, 0, 0, 0, 0, false);
        }
        StateRecovery.Recovered recovered;
        try {
            recovered = StateRecovery.recoverReadOnly(dir, layout, replayWal);
        } catch (CorruptStateException e) {
            Problem problem = Problem.error(e.file(), e.offset(), "recovery fails: " + Problem.what(e));
            if (problems.stream().noneMatch(p -> p.isError() && p.file() != null && p.file().equals(problem.file()) && p.offset() == problem.offset())) {
                problems.add(problem);
            }
            return new RecoveryResult(null, null, 0, 0, 0, 0, 0, 0, false);
        } catch (LayoutMismatchException e) {
            problems.add(Problem.error(dir, -1, "recovery fails: " + e.getMessage()));
            return new RecoveryResult(null, null, 0, 0, 0, 0, 0, 0, false);
        }
        PageClaims.Result claims = PageClaims.check(layout, sink -> {
            for (MappingRecord m : sorted(recovered.mappings().values())) {
                sink.accept(PageClaims.placement(PageClaims.Kind.MAPPING, m.getTenantId(), m.getKey(), m.getPlacement(), layout.pageSize(), null, -1));
            }
            for (PendingRecord p : sortedPending(recovered.pending().values())) {
                sink.accept(PageClaims.placement(PageClaims.Kind.IN_FLIGHT, p.getTenantId(), p.getKey(), p.getPlacement(), layout.pageSize(), null, -1));
            }
            for (QuarantineRecord q : recovered.quarantine().values().stream()
                    .sorted(Comparator.comparingInt(QuarantineRecord::getBucket).thenComparingLong(QuarantineRecord::getFirstPage)).toList()) {
                sink.accept(PageClaims.quarantine(q, layout.pageSize(), null, -1));
            }
        }, "after recovery" + (recovered.snapshot == null ? "" : " from " + recovered.snapshot.getFileName())
                + (replayWal ? " and " + recovered.replayed + " log records" : "") + ": ");
        for (Problem p : claims.problems()) {
            problems.add(new Problem(p.severity(), p.file() == null ? dir : p.file(), p.offset(), p.message()));
        }
        return new RecoveryResult(null, recovered.snapshot, recovered.snapshotSequence, recovered.replayed, recovered.lastSequence,
                recovered.mappings().size(), recovered.pending().size(), recovered.quarantine().size(), claims.ok());
    }

    private static List<MappingRecord> sorted(java.util.Collection<MappingRecord> records) {
        return records.stream().sorted(Comparator.comparing(MappingRecord::getTenantId).thenComparing(MappingRecord::getKey)).toList();
    }

    private static List<PendingRecord> sortedPending(java.util.Collection<PendingRecord> records) {
        return records.stream().sorted(Comparator.comparing(PendingRecord::getTenantId).thenComparing(PendingRecord::getKey)).toList();
    }
}
