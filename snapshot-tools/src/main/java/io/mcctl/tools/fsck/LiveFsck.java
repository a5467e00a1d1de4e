package io.mcctl.tools.fsck;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.proto.v1.BucketPageCounters;
import io.mcctl.master.proto.v1.CheckPagesResponse;
import io.mcctl.master.proto.v1.CreateSnapshotResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PageClaimant;
import io.mcctl.master.proto.v1.PageRun;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.storage.io.BucketIoSelector;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.tools.snapshot.Problem;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * fsck of a live master: the master compares every bucket's bitmap with the claims on its pages while it serves
 * (and, asked to repair, marks false-free pages allocated as it confirms them, then frees leaked ranges old enough); this
 * side turns its answer into findings and adds what only a node with the mount can see: every bucket file present,
 * long enough for the furthest claim, readable and writable, and nothing unexpected in the root.
 *
 * <p>With {@code deep}, the master writes a snapshot and every mapping it lists is read back against its CRC32C. A
 * mapping that fails is looked up again (which also takes a read lease on it) and read once more: only one still
 * mapped to the same place and still failing is reported, so a key removed or overwritten during the read is not.
 */
public final class LiveFsck {

    /**
     * @param repair         fix false-free pages and leaked ranges on the master
     * @param minAgeMs       unclaimed pages allocated from less than this ago are not leaked; negative: the master's
     *                       allocation deadline
     * @param deep           read every object back
     * @param rateLimitBytes with {@code deep}, the average read rate limit in bytes a second; 0 for none
     */
    public record Options(boolean repair, long minAgeMs, boolean deep, long rateLimitBytes, BucketIoSelector.Wanted io) {

        /** A run whose deep read goes through POSIX. */
        public Options(boolean repair, long minAgeMs, boolean deep, long rateLimitBytes) {
            this(repair, minAgeMs, deep, rateLimitBytes, BucketIoSelector.Wanted.POSIX);
        }
    }

    private LiveFsck() {
    }

    public static Fsck.Report run(MasterClient client, Options options, Fsck.DeepProgress progress) throws IOException {
        GetLayoutResponse wire = client.layout();
        BucketLayout layout = MasterClient.bucketLayout(wire);
        if (!Files.isDirectory(layout.root())) {
            throw new NoSuchFileException(layout.root().toString(), null,
                    "the master's root is not a directory on this node (check the mount: mcctl mount validate)");
        }
        CheckPagesResponse check = client.checkPages(options.repair(), options.minAgeMs(), Fsck.MAX_NAMED);
        List<FsckProblem> problems = new ArrayList<>();
        pageProblems(layout, check, problems);
        long[] lengths = Fsck.checkBucketFiles(layout, problems);
        for (BucketPageCounters c : check.getBucketsList()) {
            long length = lengths[c.getBucket()];
            if (length >= 0 && c.getClaimedEndBytes() > length) {
                problems.add(FsckProblem.error("range", layout.bucketPath(c.getBucket()), length, "claims on bucket " + c.getBucket()
                        + " reach byte " + c.getClaimedEndBytes() + ", past the end of its file (" + length + " bytes)"));
            }
        }
        Path stateDir = check.getStateDir().isEmpty() ? null : Path.of(check.getStateDir());
        Fsck.checkUnexpectedFiles(layout, stateDir, problems);
        long objectsRead = 0;
        if (options.deep()) {
            BucketIoSelector.Choice io = options.io().choose(wire.getFsType(), layout.root());
            objectsRead = deepRead(client, layout, io, lengths, options.rateLimitBytes(), progress, problems);
        }
        Fsck.LiveCheck live = new Fsck.LiveCheck(client.target(), check.getLeakedPages(), check.getYoungPages(), check.getFalseFreePages(),
                check.getOverlapPages(), check.getUnsettledPages(), check.getRepairedLeakedPages(), check.getRepairedFalseFreePages(),
                check.getLongestHoldMicros(),
                check.getMinAgeMs(), options.repair());
        return new Fsck.Report(layout.root(), layout, problems, check.getMappings(), check.getInFlight(), check.getQuarantinedRanges(),
                layout.bucketCount(), objectsRead, live);
    }

    // ---- the master's page check ----

    static void pageProblems(BucketLayout layout, CheckPagesResponse check, List<FsckProblem> problems) {
        long pageSize = check.getPageSize();
        for (PageRun run : check.getFalseFreeList()) {
            problems.add(runProblem(layout, pageSize, "false_free", run, "free in the bitmap but claimed by " + claimants(run)
                    + " (false free: the next allocation could overwrite live data)" + (run.getRepaired() ? "; marked allocated" : ""), run.getRepaired()));
        }
        for (PageRun run : check.getOverlapsList()) {
            problems.add(runProblem(layout, pageSize, "overlap", run, "claimed twice, by " + claimants(run)
                    + " (overlap: never repaired; read the keys, remove the wrong one with mcctl rm)", false));
        }
        for (PageRun run : check.getLeakedList()) {
            problems.add(runProblem(layout, pageSize, "leaked", run, "allocated but claimed by nothing (leaked)"
                    + (run.getRepaired() ? "; freed" : ""), run.getRepaired()));
        }
        for (PageRun run : check.getYoungList()) {
            problems.add(new FsckProblem(Problem.warning(layout.bucketPath(run.getBucket()), run.getFirstPage() * pageSize, describe(run)
                    + " allocated and claimed by nothing, but in a region allocated from less than the minimum age ("
                    + check.getMinAgeMs() + " ms) ago: not counted as leaked; check again later"), "young", null, null));
        }
        if (check.getUnsettledPages() > 0) {
            problems.add(new FsckProblem(Problem.warning(null, -1, check.getUnsettledPages() + " unclaimed pages lie in regions that "
                    + "changed while the check ran and were not judged; check again to judge them"), "unsettled", null, null));
        }
        unlisted(problems, "false_free", check.getFalseFreePages(), check.getFalseFreeList(), check.getRepairedFalseFreePages() == check.getFalseFreePages());
        unlisted(problems, "overlap", check.getOverlapPages(), check.getOverlapsList(), false);
        unlisted(problems, "leaked", check.getLeakedPages(), check.getLeakedList(), check.getRepairedLeakedPages() == check.getLeakedPages());
        for (BucketPageCounters c : check.getBucketsList()) {
            if (c.getAllocatedCounter() != c.getAllocatedPopcount()) {
                problems.add(FsckProblem.error("counter", layout.bucketPath(c.getBucket()), -1, "bucket " + c.getBucket() + "'s allocator counts "
                        + c.getAllocatedCounter() + " allocated pages but its bitmap has " + c.getAllocatedPopcount()));
            }
        }
    }

    private static FsckProblem runProblem(BucketLayout layout, long pageSize, String check, PageRun run, String what, boolean corrected) {
        PageClaimant first = run.getClaimantsCount() == 0 ? null : run.getClaimants(0);
        boolean named = first != null && !first.getKey().isEmpty();
        return new FsckProblem(Problem.error(layout.bucketPath(run.getBucket()), run.getFirstPage() * pageSize, describe(run) + " " + what),
                check, named ? first.getTenantId() : null, named ? first.getKey() : null, corrected);
    }

    private static String describe(PageRun run) {
        return (run.getPages() == 1 ? "page " + run.getFirstPage() : "pages " + run.getFirstPage() + ".." + (run.getFirstPage() + run.getPages() - 1))
                + " of bucket " + run.getBucket();
    }

    private static String claimants(PageRun run) {
        if (run.getClaimantsCount() == 0) {
            return "a claim the master could not name";
        }
        return run.getClaimantsList().stream().map(c -> switch (c.getKind()) {
            case "quarantine" -> "a quarantined range";
            case "in_flight" -> "the in-flight allocation of key " + io.mcctl.tools.snapshot.Formats.quote(c.getKey()) + " of tenant "
                    + io.mcctl.tools.snapshot.Formats.quote(c.getTenantId());
            default -> "the mapping of key " + io.mcctl.tools.snapshot.Formats.quote(c.getKey()) + " of tenant "
                    + io.mcctl.tools.snapshot.Formats.quote(c.getTenantId());
        }).collect(Collectors.joining(" and "));
    }

    /** When more pages of a kind were found than the listed ranges hold, one more finding says how many in all. */
    private static void unlisted(List<FsckProblem> problems, String check, long totalPages, List<PageRun> listed, boolean allCorrected) {
        long listedPages = listed.stream().mapToLong(PageRun::getPages).sum();
        if (totalPages > listedPages) {
            problems.add(new FsckProblem(Problem.error(null, -1, totalPages + " " + check.replace('_', ' ') + " pages in all; only the first "
                    + listed.size() + " ranges (" + listedPages + " pages) are listed"), check, null, null, allCorrected));
        }
    }

    // ---- deep ----

    private static long deepRead(MasterClient client, BucketLayout layout, BucketIoSelector.Choice io, long[] lengths, long rateLimitBytes,
                                 Fsck.DeepProgress progress,
                                 List<FsckProblem> problems) throws IOException {
        CreateSnapshotResponse snapshot = client.createSnapshot();
        Path file = Path.of(snapshot.getPath());
        if (!Files.isReadable(file)) {
            throw new NoSuchFileException(file.toString(), null, "the master wrote a snapshot for the deep read that this node cannot read "
                    + "(is its state directory on the shared mount?)");
        }
        List<MappingRecord> mappings = Fsck.fromSnapshot(file, layout.root()).mappings();
        List<FsckProblem> found = new ArrayList<>();
        long read = Fsck.readObjects(layout, io, mappings, lengths, rateLimitBytes, progress, found);
        java.util.Set<String> failed = new java.util.HashSet<>();
        for (FsckProblem problem : found) {
            if (problem.key() != null) {
                failed.add(KeyRules.scopedKey(problem.tenant(), problem.key()));
            }
        }
        java.util.Map<String, MappingRecord> recordedOfFailed = new java.util.HashMap<>();
        if (!failed.isEmpty()) {
            for (MappingRecord m : mappings) {
                String scoped = KeyRules.scopedKey(m.getTenantId(), m.getKey());
                if (failed.contains(scoped)) {
                    recordedOfFailed.put(scoped, m);
                }
            }
        }
        for (FsckProblem problem : found) {
            if (problem.key() == null || !problem.isError()) {
                problems.add(problem);
                continue;
            }
            MappingRecord now = stillMapped(client, layout, recordedOfFailed.get(KeyRules.scopedKey(problem.tenant(), problem.key())), problem);
            if (now == null) {
                continue; // removed or moved since the snapshot: what was read is no longer that key's
            }
            List<FsckProblem> again = new ArrayList<>();
            Fsck.readObjects(layout, io, List.of(now), lengths, 0, Fsck.DeepProgress.NONE, again);
            problems.addAll(again);
        }
        return read;
    }

    /** The snapshot's mapping of the problem's key when the master still maps the key there (a lease is taken), else null. */
    private static MappingRecord stillMapped(MasterClient client, BucketLayout layout, MappingRecord recorded, FsckProblem problem) {
        if (recorded == null) {
            return null;
        }
        DistributedDiskDescriptor now;
        try {
            now = client.getMapping(problem.tenant(), problem.key()).getDistributedDisk();
        } catch (MasterException e) {
            if (e.code() == ErrorCode.OBJECT_NOT_FOUND || e.code() == ErrorCode.REPLICA_IS_NOT_READY) {
                return null;
            }
            throw e;
        }
        PlacementRecord p = recorded.getPlacement();
        boolean same = now.getFilePath().equals(layout.bucketPath(p.getBucket()).toString()) && now.getOffset() == p.getOffset()
                && now.getObjectSize() == p.getSize() && now.getCrc32C() == p.getCrc32C();
        return same ? recorded : null;
    }
}
