package io.mcctl.tools.fsck;

import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.StateRecovery;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.storage.io.BucketFileIo;
import io.mcctl.storage.io.BucketIo;
import io.mcctl.storage.io.BucketIoSelector;
import io.mcctl.storage.mount.MountValidator;
import io.mcctl.storage.io.ChecksumMismatchException;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.mcctl.storage.layout.LayoutMismatchException;
import io.mcctl.tools.snapshot.StateDirectory;
import io.mcctl.tools.snapshot.Formats;
import io.mcctl.tools.snapshot.PageClaims;
import io.mcctl.tools.snapshot.Problem;
import io.mcctl.tools.snapshot.SnapshotRecords;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * The offline, check-only fsck: the saved master state against the bucket files it describes. Nothing it
 * looks at is changed: a state directory is recovered with {@link StateRecovery#recoverReadOnly}, bucket files
 * are opened for reading only.
 *
 * <p>Checks: every mapping, in-flight allocation and quarantined range through {@link PageClaims} (inside its
 * bucket, on page boundaries, no page claimed twice, both claimants named); every range inside the real length of
 * its bucket file; every bucket file present, at least the bucket size, readable and writable; nothing else in the
 * root (warnings); with {@code deep}, every mapping's bytes read back against their CRC32C.
 *
 * <p>Input that cannot be checked at all (no such state directory or root, state that does not recover, no layout)
 * is thrown as an exception: fsck(8)'s operational error, not a finding.
 *
 * <p>Not thread-safe: one run per instance of its inputs.
 */
public final class Fsck {

    /** fsck(8) exit codes this version uses. */
    public static final int EXIT_CLEAN = 0;
    public static final int EXIT_CORRECTED = 1;
    public static final int EXIT_UNCORRECTED = 4;
    public static final int EXIT_OPERATIONAL = 8;

    /** At most this many range and object findings are named; the rest are counted in one more. */
    static final int MAX_NAMED = 1000;

    /**
     * What to check.
     *
     * @param stateDir       a master state directory, or null
     * @param snapshot       a snapshot file, or null (exactly one of the two)
     * @param root           the root with the bucket files, or null for the default (the state directory's parent, or the
     *                       snapshot's recorded root)
     * @param deep           read every mapping's object and check its CRC32C
     * @param rateLimitBytes with {@code deep}, keep the average read rate under this many bytes a second; 0 for no limit
     * @param io             with {@code deep}, the IO the objects are read through (the io setting)
     * @param fsType         the filesystem under the root (fs_type), for {@code io} auto
     */
    public record Options(Path stateDir, Path snapshot, Path root, boolean deep, long rateLimitBytes, BucketIoSelector.Wanted io,
                          String fsType) {

        /** A run whose deep read goes through POSIX. */
        public Options(Path stateDir, Path snapshot, Path root, boolean deep, long rateLimitBytes) {
            this(stateDir, snapshot, root, deep, rateLimitBytes, BucketIoSelector.Wanted.POSIX, "posix");
        }
    }

    /** Told how the deep read goes, for a progress bar. */
    public interface DeepProgress {
        void begin(long objects);

        void read(long objects);

        DeepProgress NONE = new DeepProgress() {
            @Override
            public void begin(long objects) {
            }

            @Override
            public void read(long objects) {
            }
        };
    }

    /**
     * Everything one run found.
     *
     * @param live what the live master's page check said, or null for an offline run
     */
    public record Report(Path root, BucketLayout layout, List<FsckProblem> problems, long mappings, long inFlight, long quarantinedRanges,
                         long bucketFiles, long objectsRead, LiveCheck live) {

        /** Errors still there after the run. */
        public List<FsckProblem> errors() {
            return problems.stream().filter(FsckProblem::isError).toList();
        }

        public List<FsckProblem> corrected() {
            return problems.stream().filter(FsckProblem::corrected).toList();
        }

        public List<FsckProblem> warnings() {
            return problems.stream().filter(FsckProblem::isWarning).toList();
        }

        /** fsck(8): 4 while any error is left, else 1 when something was corrected, else 0. */
        public int exitCode() {
            if (!errors().isEmpty()) {
                return EXIT_UNCORRECTED;
            }
            return corrected().isEmpty() ? EXIT_CLEAN : EXIT_CORRECTED;
        }

        public Map<String, Object> json() {
            Map<String, Object> checked = new LinkedHashMap<>();
            checked.put("mappings", mappings);
            checked.put("in_flight", inFlight);
            checked.put("quarantined_ranges", quarantinedRanges);
            checked.put("bucket_files", bucketFiles);
            checked.put("objects_read", objectsRead);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("root", root.toString());
            out.put("errors", errors().stream().map(FsckProblem::json).toList());
            out.put("corrected", corrected().stream().map(FsckProblem::json).toList());
            out.put("warnings", warnings().stream().map(FsckProblem::json).toList());
            out.put("checked", checked);
            if (live != null) {
                out.put("master", live.json());
            }
            out.put("exit_code", exitCode());
            return out;
        }
    }

    /** The page totals of a live master's check. */
    public record LiveCheck(String master, long leakedPages, long youngPages, long falseFreePages, long overlapPages, long unsettledPages,
                            long repairedLeakedPages, long repairedFalseFreePages, long longestHoldMicros, long minAgeMs, boolean repair) {

        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("address", master);
            out.put("repair", repair);
            out.put("min_age_ms", minAgeMs);
            out.put("leaked_pages", leakedPages);
            out.put("young_pages", youngPages);
            out.put("false_free_pages", falseFreePages);
            out.put("overlap_pages", overlapPages);
            out.put("unsettled_pages", unsettledPages);
            out.put("repaired_leaked_pages", repairedLeakedPages);
            out.put("repaired_false_free_pages", repairedFalseFreePages);
            out.put("longest_lock_hold_micros", longestHoldMicros);
            return out;
        }
    }

    /** The state to check, whichever way it was read. */
    record State(BucketLayout layout, Path stateDir, List<MappingRecord> mappings, List<PendingRecord> pending,
                         List<QuarantineRecord> quarantine, List<FsckProblem> warnings) {

        /** Every mapping, in-flight allocation and quarantined range, as claims on pages. */
        void claims(java.util.function.Consumer<PageClaims.Claim> sink) {
            long pageSize = layout.pageSize();
            for (MappingRecord m : mappings) {
                sink.accept(PageClaims.placement(PageClaims.Kind.MAPPING, m.getTenantId(), m.getKey(), m.getPlacement(), pageSize, null, -1));
            }
            for (PendingRecord p : pending) {
                sink.accept(PageClaims.placement(PageClaims.Kind.IN_FLIGHT, p.getTenantId(), p.getKey(), p.getPlacement(), pageSize, null, -1));
            }
            for (QuarantineRecord q : quarantine) {
                sink.accept(PageClaims.quarantine(q, pageSize, null, -1));
            }
        }

        /** The same state with claims in a fixed order: mappings and in-flight by tenant and key, quarantine by place. */
        State sorted() {
            return new State(layout, stateDir,
                    mappings.stream().sorted(Comparator.comparing(MappingRecord::getTenantId).thenComparing(MappingRecord::getKey)).toList(),
                    pending.stream().sorted(Comparator.comparing(PendingRecord::getTenantId).thenComparing(PendingRecord::getKey)).toList(),
                    quarantine.stream().sorted(Comparator.comparingInt(QuarantineRecord::getBucket).thenComparingLong(QuarantineRecord::getFirstPage)).toList(),
                    warnings);
        }
    }

    private Fsck() {
    }

    public static Report run(Options options, DeepProgress progress) throws IOException {
        if ((options.stateDir() == null) == (options.snapshot() == null)) {
            throw new IllegalArgumentException("give exactly one of --state-dir DIR and --snapshot FILE");
        }
        State state = options.stateDir() != null ? fromStateDir(options.stateDir(), options.root()) : fromSnapshot(options.snapshot(), options.root());
        BucketLayout layout = state.layout();
        if (!Files.isDirectory(layout.root())) {
            throw new NoSuchFileException(layout.root().toString(), null, "the root is not a directory");
        }
        List<FsckProblem> problems = new ArrayList<>(state.warnings());

        PageClaims.Result claims = checkClaims(state);
        if (claims.overlapping() > 0) {
            claims = checkClaims(state.sorted());
        }
        for (Problem p : claims.problems()) {
            problems.add(new FsckProblem(p, "claims", null, null));
        }

        long[] lengths = checkBucketFiles(layout, problems);
        checkRanges(layout, state, lengths, problems);
        checkUnexpectedFiles(layout, state.stateDir(), problems);
        long objectsRead = 0;
        if (options.deep()) {
            BucketIoSelector.Choice io = options.io().choose(options.fsType(), layout.root());
            objectsRead = readObjects(layout, io, state.mappings(), lengths, options.rateLimitBytes(), progress, problems);
        }
        return new Report(layout.root(), layout, problems, state.mappings().size(), state.pending().size(), state.quarantine().size(),
                layout.bucketCount(), objectsRead, null);
    }

    private static PageClaims.Result checkClaims(State state) throws IOException {
        return PageClaims.check(state.layout(), state::claims, "");
    }

    // ---- reading the state ----

    private static State fromStateDir(Path dir, Path rootOption) throws IOException {
        StateDirectory stateDir = StateDirectory.open(dir);
        List<SnapshotFile.Listed> snapshots = stateDir.snapshots();
        List<WalSegments.Segment> segments = stateDir.segments();
        Path parent = dir.toAbsolutePath().normalize().getParent();
        Path root = rootOption != null ? rootOption : parent;
        if (root == null) {
            throw new IllegalArgumentException("cannot tell the root of " + dir + ": give --root DIR");
        }
        BucketLayout layout = null;
        for (SnapshotFile.Listed listed : snapshots) {
            try {
                layout = withRoot(SnapshotRecords.layout(SnapshotFile.open(listed.path())), root);
                break;
            } catch (CorruptStateException e) {
                // the next older one; recovery reports the unusable one
            }
        }
        if (layout == null) {
            layout = fromLayoutFile(root, "no snapshot in " + dir + " opens");
        }
        StateRecovery.Recovered recovered;
        try {
            recovered = StateRecovery.recoverReadOnly(dir, layout, !segments.isEmpty());
        } catch (CorruptStateException | LayoutMismatchException e) {
            throw new IOException("the state in " + dir + " does not recover: " + e.getMessage(), e);
        }
        List<FsckProblem> warnings = new ArrayList<>();
        for (String warning : recovered.warnings) {
            warnings.add(FsckProblem.warning("recovery", dir, -1, "recovery: " + warning));
        }
        // In hash order: sorting a million keys costs as much as the rest of the check. A run that finds overlaps
        // sorts and checks again (see run), so which claim of a pair is named first never depends on hash order.
        List<MappingRecord> mappings = new ArrayList<>(recovered.mappings().values());
        List<PendingRecord> pending = new ArrayList<>(recovered.pending().values());
        List<QuarantineRecord> quarantine = new ArrayList<>(recovered.quarantine().values());
        return new State(layout, dir.toAbsolutePath().normalize(), mappings, pending, quarantine, warnings);
    }

    static State fromSnapshot(Path file, Path rootOption) throws IOException {
        if (!Files.exists(file)) {
            throw new NoSuchFileException(file.toString(), null, "no such snapshot file");
        }
        if (Files.isDirectory(file)) {
            throw new IllegalArgumentException(file + " is a directory: --snapshot takes a snapshot file (snapshot-<sequence>.snap); "
                    + "use --state-dir for a state directory");
        }
        List<MappingRecord> mappings = new ArrayList<>();
        List<PendingRecord> pending = new ArrayList<>();
        List<QuarantineRecord> quarantine = new ArrayList<>();
        BucketLayout recorded;
        try {
            SnapshotFile.Reader reader = SnapshotFile.open(file);
            SnapshotRecords.checkChecksums(reader);
            recorded = SnapshotRecords.layout(reader);
            SnapshotRecords.readStrict(reader, new SnapshotRecords.Visitor() {
                @Override
                public void mapping(MappingRecord record, long offset) {
                    mappings.add(record);
                }

                @Override
                public void pending(PendingRecord record, long offset) {
                    pending.add(record);
                }

                @Override
                public void quarantine(QuarantineRecord record, long offset) {
                    quarantine.add(record);
                }
            });
        } catch (CorruptStateException e) {
            throw new IOException("the snapshot " + file + " does not read: " + e.getMessage(), e);
        }
        boolean recordedRoot = !SnapshotFile.open(file).meta().getRootDir().isEmpty();
        if (rootOption == null && !recordedRoot) {
            throw new IllegalArgumentException("the snapshot " + file + " records no root: give --root DIR");
        }
        BucketLayout layout = withRoot(recorded, rootOption != null ? rootOption : recorded.root());
        Path parent = file.toAbsolutePath().normalize().getParent();
        return new State(layout, parent, mappings, pending, quarantine, List.of());
    }

    private static BucketLayout withRoot(BucketLayout layout, Path root) {
        return new BucketLayout(root, layout.bucketCount(), layout.pageSize(), layout.bucketSize());
    }

    private static BucketLayout fromLayoutFile(Path root, String why) throws IOException {
        Path layoutFile = root.resolve(LayoutFile.FILE_NAME);
        if (!Files.isRegularFile(layoutFile)) {
            throw new IllegalArgumentException("cannot tell the layout: " + why + " and there is no " + layoutFile);
        }
        LayoutFile.Record record = LayoutFile.read(layoutFile);
        return new BucketLayout(root, record.bucketCount(), record.pageSize(), record.bucketSize());
    }

    // ---- bucket files ----

    /** Checks every bucket file; returns each one's real length (-1 when it is missing or not a file). */
    static long[] checkBucketFiles(BucketLayout layout, List<FsckProblem> problems) throws IOException {
        long[] lengths = new long[layout.bucketCount()];
        for (int b = 0; b < layout.bucketCount(); b++) {
            Path file = layout.bucketPath(b);
            lengths[b] = -1;
            if (!Files.exists(file)) {
                problems.add(FsckProblem.error("bucket_file", file, -1, "bucket file " + b + " is missing"));
                continue;
            }
            if (!Files.isRegularFile(file)) {
                problems.add(FsckProblem.error("bucket_file", file, -1, "bucket file " + b + " is not a regular file"));
                continue;
            }
            lengths[b] = Files.size(file);
            if (lengths[b] < layout.bucketSize()) {
                problems.add(FsckProblem.error("bucket_file", file, -1, "bucket file " + b + " is " + lengths[b]
                        + " bytes, shorter than the bucket size (" + layout.bucketSize() + " bytes)"));
            }
            if (!Files.isReadable(file)) {
                problems.add(FsckProblem.error("bucket_file", file, -1, "bucket file " + b + " is not readable"));
            }
            if (!Files.isWritable(file)) {
                problems.add(FsckProblem.error("bucket_file", file, -1, "bucket file " + b + " is not writable"));
            }
        }
        return lengths;
    }

    /** Every valid claim must lie inside the real length of its bucket file (a missing file was reported once already). */
    private static void checkRanges(BucketLayout layout, State state, long[] lengths, List<FsckProblem> problems) {
        long[] past = {0};
        state.claims(c -> {
            if (PageClaims.invalid(c, layout) != null || lengths[c.bucket()] < 0) {
                return;
            }
            long end = c.offset() + c.size();
            if (end > lengths[c.bucket()] && past[0]++ < MAX_NAMED) {
                Path file = layout.bucketPath(c.bucket());
                problems.add(new FsckProblem(Problem.error(file, c.offset(), c.describe() + " ends at byte " + end
                        + ", past the end of the file (" + lengths[c.bucket()] + " bytes)"), "range", c.tenant(), c.key()));
            }
        });
        if (past[0] > MAX_NAMED) {
            problems.add(FsckProblem.error("range", null, -1, past[0] + " ranges end past their bucket file in all; only the first "
                    + MAX_NAMED + " are named"));
        }
    }

    /** Anything in the root that is not one of this layout's bucket files, the layout record or the state directory. */
    static void checkUnexpectedFiles(BucketLayout layout, Path stateDir, List<FsckProblem> problems) throws IOException {
        Set<String> expected = new HashSet<>();
        for (int b = 0; b < layout.bucketCount(); b++) {
            expected.add(BucketLayout.bucketFileName(b));
        }
        expected.add(LayoutFile.FILE_NAME);
        expected.add(MountValidator.THREEFS_VIRT); // a root at the top of a 3FS mount holds 3FS's own directory
        if (stateDir != null && layout.root().equals(stateDir.getParent())) {
            expected.add(stateDir.getFileName().toString());
        }
        try (Stream<Path> entries = Files.list(layout.root())) {
            for (Path entry : entries.sorted().toList()) {
                String name = entry.getFileName().toString();
                if (!expected.contains(name)) {
                    problems.add(FsckProblem.warning("unexpected_file", entry, -1, (Files.isDirectory(entry) ? "directory" : "file")
                            + " in the root that is not a bucket file of this layout, " + LayoutFile.FILE_NAME + " or the state directory"));
                }
            }
        }
    }

    // ---- deep ----

    /** Most bytes of objects one submission of the deep read carries (one round of a USRBIO ring). */
    static final int DEEP_BATCH_BYTES = 16 << 20;
    /** Most objects one submission of the deep read carries. */
    static final int DEEP_BATCH_OBJECTS = 64;

    /**
     * Reads every mapping's object back through {@code io} and checks its CRC32C, in file order, the objects submitted
     * together in batches of at most {@link #DEEP_BATCH_OBJECTS} objects and {@link #DEEP_BATCH_BYTES} bytes (or one
     * larger object alone).
     */
    static long readObjects(BucketLayout layout, BucketIoSelector.Choice io, List<MappingRecord> mappings, long[] lengths, long rateLimitBytes,
                                    DeepProgress progress, List<FsckProblem> problems) throws IOException {
        // In file order, so that the reads run forward through each bucket file.
        List<MappingRecord> readable = new ArrayList<>();
        for (MappingRecord m : mappings) {
            PageClaims.Claim c = PageClaims.placement(PageClaims.Kind.MAPPING, m.getTenantId(), m.getKey(), m.getPlacement(), layout.pageSize(), null, -1);
            // An invalid range, a missing file or a range past the file's end is an error already; there is nothing to read.
            if (PageClaims.invalid(c, layout) == null && lengths[c.bucket()] >= c.offset() + c.size()) {
                readable.add(m);
            }
        }
        readable.sort(Comparator.comparingInt((MappingRecord m) -> m.getPlacement().getBucket()).thenComparingLong(m -> m.getPlacement().getOffset()));
        progress.begin(readable.size());
        DeepRead deep = new DeepRead(layout, problems);
        long start = System.nanoTime();
        try (BucketIo bucketIo = io.open(false)) {
            BucketFileIo objects = new BucketFileIo(bucketIo, layout.bucketSize());
            BucketFileIo.Batch batch = objects.batch();
            List<MappingRecord> inBatch = new ArrayList<>();
            ByteBuffer area = ByteBuffer.allocate(DEEP_BATCH_BYTES);
            int i = 0;
            while (i < readable.size()) {
                MappingRecord first = readable.get(i);
                if (first.getPlacement().getSize() > Integer.MAX_VALUE - 8) {
                    problems.add(new FsckProblem(Problem.warning(layout.bucketPath(first.getPlacement().getBucket()), first.getPlacement().getOffset(),
                            "object " + Formats.quote(first.getKey()) + " of tenant " + Formats.quote(first.getTenantId())
                                    + " not read: larger than 2 GiB"), "object", first.getTenantId(), first.getKey()));
                    progress.read(1);
                    i++;
                    continue;
                }
                if (area.capacity() < first.getPlacement().getSize()) {
                    area = ByteBuffer.allocate((int) first.getPlacement().getSize());
                }
                area.clear();
                batch.clear();
                inBatch.clear();
                long bytes = 0;
                while (i < readable.size() && inBatch.size() < DEEP_BATCH_OBJECTS) {
                    MappingRecord m = readable.get(i);
                    long size = m.getPlacement().getSize();
                    if (size > area.remaining()) {
                        break;
                    }
                    ByteBuffer window = area.slice(area.position(), (int) size);
                    area.position(area.position() + (int) size);
                    batch.read(layout.bucketPath(m.getPlacement().getBucket()), m.getPlacement().getOffset(), window, m.getPlacement().getCrc32C());
                    inBatch.add(m);
                    bytes += size;
                    i++;
                }
                IOException whole = null;
                try {
                    batch.run();
                } catch (IOException e) {
                    whole = e;
                }
                for (int op = 0; op < inBatch.size(); op++) {
                    deep.outcome(inBatch.get(op), whole != null ? whole : batch.failure(op));
                }
                deep.bytesRead += bytes;
                progress.read(inBatch.size());
                throttle(start, deep.bytesRead, rateLimitBytes);
            }
        }
        deep.summarise();
        return deep.objectsRead;
    }

    /** What the deep read found so far: objects read and failed, per bucket, and the findings named. Not thread-safe. */
    private static final class DeepRead {
        private final BucketLayout layout;
        private final List<FsckProblem> problems;
        long objectsRead;
        long bytesRead;
        long corrupt;
        // Per bucket, objects read and objects that failed their checksums: a file whose every object fails was replaced.
        final long[] readIn;
        final long[] failedIn;

        DeepRead(BucketLayout layout, List<FsckProblem> problems) {
            this.layout = layout;
            this.problems = problems;
            this.readIn = new long[layout.bucketCount()];
            this.failedIn = new long[layout.bucketCount()];
        }

        /** One object's read: {@code failure} null when it checked out. */
        void outcome(MappingRecord m, IOException failure) {
            var p = m.getPlacement();
            Path file = layout.bucketPath(p.getBucket());
            readIn[p.getBucket()]++;
            if (failure == null) {
                objectsRead++;
            } else if (failure instanceof ChecksumMismatchException mismatch) {
                objectsRead++;
                failedIn[p.getBucket()]++;
                if (corrupt++ < MAX_NAMED) {
                    problems.add(new FsckProblem(Problem.error(file, p.getOffset(), "object " + Formats.quote(m.getKey()) + " of tenant "
                            + Formats.quote(m.getTenantId()) + " (" + p.getSize() + " bytes) fails its checksum: CRC32C "
                            + Formats.hex(p.getCrc32C()) + " recorded, " + Formats.hex(mismatch.actual()) + " read"), "object", m.getTenantId(),
                            m.getKey()));
                }
            } else if (corrupt++ < MAX_NAMED) {
                problems.add(new FsckProblem(Problem.error(file, p.getOffset(), "object " + Formats.quote(m.getKey()) + " of tenant "
                        + Formats.quote(m.getTenantId()) + " cannot be read: " + failure.getMessage()), "object", m.getTenantId(), m.getKey()));
            }
        }

        void summarise() {
            if (corrupt > MAX_NAMED) {
                problems.add(FsckProblem.error("object", null, -1, corrupt + " objects fail to read back in all; only the first " + MAX_NAMED
                        + " are named"));
            }
            for (int b = 0; b < layout.bucketCount(); b++) {
                if (readIn[b] >= MIN_OBJECTS_FOR_A_REPLACED_FILE && failedIn[b] == readIn[b]) {
                    problems.add(FsckProblem.error("bucket_file", layout.bucketPath(b), -1, "bucket file " + b + ": every one of its " + readIn[b]
                            + " objects fails its checksum: the file is not the one they were written into (deleted and created again "
                            + "empty, as a master start does with a missing bucket file, or replaced); its objects are lost, and read as misses"));
                }
            }
        }
    }

    /** Objects of a bucket that must all fail their checksums before fsck says the file itself was replaced: one may just be torn. */
    static final int MIN_OBJECTS_FOR_A_REPLACED_FILE = 2;

    /** Sleeps until reading {@code bytes} since {@code start} keeps the average rate at or under the limit. */
    private static void throttle(long start, long bytes, long rateLimitBytes) throws IOException {
        if (rateLimitBytes <= 0) {
            return;
        }
        long dueNanos = (long) (bytes * 1e9 / rateLimitBytes);
        long aheadNanos = dueNanos - (System.nanoTime() - start);
        if (aheadNanos > 1_000_000) {
            try {
                Thread.sleep(aheadNanos / 1_000_000, (int) (aheadNanos % 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("fsck interrupted during the deep read");
            }
        }
    }
}
