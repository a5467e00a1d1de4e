package io.mcctl.tools.bitmap;

import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.StateRecovery;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.alloc.PageRangeException;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.mcctl.tools.snapshot.StateDirectory;
import io.mcctl.tools.snapshot.PageClaims;
import io.mcctl.tools.snapshot.SnapshotRecords;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Bucket bitmaps rebuilt from saved master state, as the master rebuilds them on restore: every page a
 * mapping, an in-flight allocation or a quarantined range claims is marked with
 * {@link BitmapPageAllocator#markAllocated}. A claim outside its bucket is skipped and counted; a claim
 * that overlaps another marks only its pages not yet marked and is counted, so the bitmap shows what the
 * master would hold and the claimed-page sum shows the overlap.
 *
 * <p>A state directory is recovered with {@link StateRecovery#recoverReadOnly}, which reports a torn log
 * tail without cutting it: the directory inspected does not change.
 *
 * <p>Not thread-safe: built by one thread, then read.
 */
public final class SavedBitmaps {

    private final Path source;
    private final boolean stateDir;
    private final BucketLayout layout;
    private final BitmapPageAllocator[] allocators;
    private final long[] claimedPages;
    private long claims;
    private long invalidClaims;
    private long overlappingClaims;

    private SavedBitmaps(Path source, boolean stateDir, BucketLayout layout) {
        if (layout.pagesPerBucket() > BitmapPageAllocator.MAX_PAGES) {
            throw new IllegalArgumentException("buckets of " + layout.pagesPerBucket() + " pages are more than a bitmap holds ("
                    + BitmapPageAllocator.MAX_PAGES + ")");
        }
        this.source = source;
        this.stateDir = stateDir;
        this.layout = layout;
        this.allocators = new BitmapPageAllocator[layout.bucketCount()];
        this.claimedPages = new long[layout.bucketCount()];
    }

    /** Rebuilds the bitmaps a snapshot file describes; a snapshot that does not read in full throws. */
    public static SavedBitmaps fromSnapshot(Path file) throws IOException {
        if (!Files.exists(file)) {
            throw new NoSuchFileException(file.toString());
        }
        if (Files.isDirectory(file)) {
            throw new IllegalArgumentException(file + " is a directory: --snapshot takes a snapshot file (snapshot-<sequence>.snap); "
                    + "use --state-dir for a state directory");
        }
        SnapshotFile.Reader reader = SnapshotFile.open(file);
        BucketLayout layout = SnapshotRecords.layout(reader);
        SavedBitmaps out = new SavedBitmaps(file, false, layout);
        SnapshotRecords.readStrict(reader, new SnapshotRecords.Visitor() {
            @Override
            public void mapping(MappingRecord m, long offset) {
                out.claim(PageClaims.placement(PageClaims.Kind.MAPPING, m.getTenantId(), m.getKey(), m.getPlacement(), layout.pageSize(), file, offset));
            }

            @Override
            public void pending(PendingRecord p, long offset) {
                out.claim(PageClaims.placement(PageClaims.Kind.IN_FLIGHT, p.getTenantId(), p.getKey(), p.getPlacement(), layout.pageSize(), file, offset));
            }

            @Override
            public void quarantine(QuarantineRecord q, long offset) {
                out.claim(PageClaims.quarantine(q, layout.pageSize(), file, offset));
            }
        });
        return out;
    }

    /** Rebuilds the bitmaps of the state a master would recover from {@code dir}, without changing {@code dir}. */
    public static SavedBitmaps fromStateDir(Path dir) throws IOException {
        StateDirectory stateDir = StateDirectory.open(dir);
        List<SnapshotFile.Listed> snapshots = stateDir.snapshots();
        List<WalSegments.Segment> segments = stateDir.segments();
        BucketLayout layout = layoutFor(dir, snapshots);
        {
            StateRecovery.Recovered recovered;
            try {
                recovered = StateRecovery.recoverReadOnly(dir, layout, !segments.isEmpty());
            } catch (CorruptStateException e) {
                throw new IOException("recovery of " + dir + " fails: " + e.getMessage(), e);
            }
            SavedBitmaps out = new SavedBitmaps(dir, true, layout);
            // Sorted, so that which of two overlapping claims is counted does not depend on hash order.
            for (MappingRecord m : recovered.mappings().values().stream()
                    .sorted(Comparator.comparing(MappingRecord::getTenantId).thenComparing(MappingRecord::getKey)).toList()) {
                out.claim(PageClaims.placement(PageClaims.Kind.MAPPING, m.getTenantId(), m.getKey(), m.getPlacement(), layout.pageSize(), null, -1));
            }
            for (PendingRecord p : recovered.pending().values().stream()
                    .sorted(Comparator.comparing(PendingRecord::getTenantId).thenComparing(PendingRecord::getKey)).toList()) {
                out.claim(PageClaims.placement(PageClaims.Kind.IN_FLIGHT, p.getTenantId(), p.getKey(), p.getPlacement(), layout.pageSize(), null, -1));
            }
            for (QuarantineRecord q : recovered.quarantine().values().stream()
                    .sorted(Comparator.comparingInt(QuarantineRecord::getBucket).thenComparingLong(QuarantineRecord::getFirstPage)).toList()) {
                out.claim(PageClaims.quarantine(q, layout.pageSize(), null, -1));
            }
            return out;
        }
    }

    private void claim(PageClaims.Claim c) {
        claims++;
        if (PageClaims.invalid(c, layout) != null) {
            invalidClaims++;
            return;
        }
        claimedPages[c.bucket()] += c.pages();
        BitmapPageAllocator bucket = allocator(c.bucket());
        try {
            bucket.markAllocated(c.firstPage(), c.pages()); // checks the whole range before it marks any page
        } catch (PageRangeException e) {
            overlappingClaims++;
            markFreePagesOf(bucket, c.firstPage(), c.pages());
        }
    }

    /** Marks the pages of the range that are still free, run by run. */
    private static void markFreePagesOf(BitmapPageAllocator bucket, long first, long pages) {
        long page = first;
        long end = first + pages;
        while (page < end) {
            if (bucket.isAllocated(page)) {
                page++;
                continue;
            }
            long runEnd = page + 1;
            while (runEnd < end && !bucket.isAllocated(runEnd)) {
                runEnd++;
            }
            bucket.markAllocated(page, runEnd - page);
            page = runEnd;
        }
    }

    private BitmapPageAllocator allocator(int bucket) {
        if (allocators[bucket] == null) {
            allocators[bucket] = new BitmapPageAllocator(layout.pagesPerBucket());
        }
        return allocators[bucket];
    }

    public Path source() {
        return source;
    }

    public boolean stateDir() {
        return stateDir;
    }

    public BucketLayout layout() {
        return layout;
    }

    /** The rebuilt bitmap of {@code bucket}. */
    public BucketBitmap bitmap(int bucket) {
        return BucketBitmap.of(allocator(bucket));
    }

    /** Pages the saved state claims in {@code bucket}, each claim counted in full (overlaps twice). */
    public long claimedPages(int bucket) {
        return claimedPages[bucket];
    }

    public long claims() {
        return claims;
    }

    public long invalidClaims() {
        return invalidClaims;
    }

    public long overlappingClaims() {
        return overlappingClaims;
    }

    /** The newest snapshot's layout that opens, else the layout record at the root the state directory sits in. */
    private static BucketLayout layoutFor(Path dir, List<SnapshotFile.Listed> snapshots) throws IOException {
        for (SnapshotFile.Listed listed : snapshots) {
            try {
                return SnapshotRecords.layout(SnapshotFile.open(listed.path()));
            } catch (CorruptStateException e) {
                // try the next older one
            }
        }
        Path parent = dir.toAbsolutePath().normalize().getParent();
        Path layoutFile = parent == null ? null : parent.resolve(LayoutFile.FILE_NAME);
        if (layoutFile == null || !Files.isRegularFile(layoutFile)) {
            throw new IllegalArgumentException("cannot tell the layout of " + dir + ": no snapshot in it opens and there is no "
                    + LayoutFile.FILE_NAME + " next to it");
        }
        LayoutFile.Record record = LayoutFile.read(layoutFile);
        return new BucketLayout(parent, record.bucketCount(), record.pageSize(), record.bucketSize());
    }
}
