package io.mcctl.master.service;

import io.mcctl.master.protocol.Placement;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.alloc.PageAllocator;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * The free and used pages of every bucket: one allocator per bucket (its own monitor guards its bitmap and its
 * fences), which committed mapping holds each page ({@link PageOwners}), the bucket files' paths, each bucket's
 * {@link BucketHealth} (allocation skips a bucket whose file is missing or replaced), and when each region of pages
 * last saw an allocation, so a check can tell a leak from pages handed out moments ago.
 */
final class BucketSpace {

    static final int STAMP_REGION_PAGES = 512;

    /** The layout in force; replaced by {@link #grow}. Page size and paths never change. */
    private volatile BucketLayout layout;
    private final String[] bucketPaths;
    private final Map<String, Integer> bucketByPath = new HashMap<>();
    final BitmapPageAllocator[] allocators;
    final PageOwners owners;
    /**
     * Per bucket, per region of {@value #STAMP_REGION_PAGES} pages: the second on the service's clock (rounded up,
     * plus one so that 0 means never) of the latest allocation there. Written under the allocating key's shard lock
     * (two shards may race on one slot, both with "about now"), read by a check after it has taken every shard lock
     * once, which orders it after every write made before the check began. One array per bucket, replaced by a grow.
     */
    private volatile int[][] allocationStamps;

    /**
     * Per bucket, the highest log sequence of a change that freed pages in it (0: none since the start). Written under
     * the bucket's allocator monitor before the pages are freed, so that an allocation, which takes that monitor to find
     * its run, then reads a value at least as high as the sequence that freed any page it got: an answer that does not
     * wait for the log waits for that sequence instead, and never hands out pages whose freeing a crash could undo.
     */
    private final long[] lastFreeSequence;

    /** Per bucket, as the master's last check of its file found it; written by that check, read by every allocation. */
    private final AtomicReferenceArray<BucketHealth> health;

    private final LongAdder pageAllocations = new LongAdder();
    private final LongAdder pageFrees = new LongAdder();
    private final LongAdder allocationFailures = new LongAdder();
    private final LongAdder spills = new LongAdder();

    BucketSpace(BucketLayout layout) {
        this.layout = layout;
        this.bucketPaths = new String[layout.bucketCount()];
        this.allocators = new BitmapPageAllocator[layout.bucketCount()];
        this.lastFreeSequence = new long[layout.bucketCount()];
        this.health = new AtomicReferenceArray<>(layout.bucketCount());
        for (int b = 0; b < layout.bucketCount(); b++) {
            bucketPaths[b] = layout.bucketPath(b).toString();
            bucketByPath.put(bucketPaths[b], b);
            allocators[b] = new BitmapPageAllocator(layout.pagesPerBucket());
            health.set(b, BucketHealth.HEALTHY);
        }
        this.allocationStamps = new int[layout.bucketCount()][stampRegions(layout)];
        this.owners = new PageOwners(layout.bucketCount(), layout.pagesPerBucket());
    }

    private static int stampRegions(BucketLayout layout) {
        return (int) ((layout.pagesPerBucket() + STAMP_REGION_PAGES - 1) / STAMP_REGION_PAGES);
    }

    /**
     * Grows the stamps, then every bucket's allocator to {@code grown}'s pages, while allocations go on (each allocator
     * grows under its own monitor). The larger stamp arrays are published first, so an allocation in the added pages
     * (which follows its allocator's grow) stamps into them. A stamp written into an old array by an allocation racing
     * the swap is carried over: every shard lock is taken once after the swap (a stamp is written under its key's shard
     * lock, so every write to an old array is then visible), and the old stamps are merged in; so are the page owners'
     * chunks. Caller holds the layout lock, before any shard lock.
     */
    void grow(BucketLayout grown, KeyTable keys) {
        java.util.concurrent.atomic.AtomicReferenceArray<int[]>[] oldOwners = owners.grow(grown.pagesPerBucket());
        int[][] old = allocationStamps;
        int[][] stamps = new int[old.length][];
        for (int b = 0; b < old.length; b++) {
            stamps[b] = java.util.Arrays.copyOf(old[b], stampRegions(grown));
        }
        allocationStamps = stamps;
        for (BitmapPageAllocator allocator : allocators) {
            allocator.grow(grown.pagesPerBucket());
        }
        layout = grown;
        for (int s = 0; s < KeyTable.SHARDS; s++) {
            KeyTable.Shard shard = keys.shard(s);
            shard.lock.lock();
            shard.lock.unlock();
        }
        for (int b = 0; b < old.length; b++) {
            for (int r = 0; r < old[b].length; r++) {
                stamps[b][r] = Math.max(stamps[b][r], old[b][r]);
            }
        }
        owners.carryOver(oldOwners);
    }

    String path(int bucket) {
        return bucketPaths[bucket];
    }

    /** The bucket a descriptor's file path names, or -1. */
    int bucketOfPath(String filePath) {
        Integer bucket = bucketByPath.get(filePath);
        if (bucket != null) {
            return bucket;
        }
        try {
            return layout.bucketOf(Path.of(filePath)).orElse(-1); // the same file spelled another way
        } catch (java.nio.file.InvalidPathException e) {
            return -1;
        }
    }

    BucketHealth health(int bucket) {
        return health.get(bucket);
    }

    /** @return the health it replaced */
    BucketHealth setHealth(int bucket, BucketHealth now) {
        return health.getAndSet(bucket, now);
    }

    /** Whether allocations may land in {@code bucket}: its file is the one laid out. */
    boolean usable(int bucket) {
        return health.get(bucket) == BucketHealth.HEALTHY;
    }

    int unusableCount() {
        int count = 0;
        for (int b = 0; b < allocators.length; b++) {
            count += usable(b) ? 0 : 1;
        }
        return count;
    }

    /**
     * A run of {@code pages} in bucket {@code home} or, when none fits there, in the next bucket (home+1, home+2, ...
     * wrapping) that has one, as a placement of {@code size} bytes; null when no bucket has room. A bucket whose file is
     * missing or replaced is passed over like a full one.
     */
    Placement allocate(int home, long pages, long size, long nowNanos) {
        for (int i = 0; i < allocators.length; i++) {
            int bucket = (home + i) % allocators.length;
            if (!usable(bucket)) {
                continue;
            }
            long first = allocators[bucket].allocate(pages);
            if (first != PageAllocator.NO_RUN_FITS) {
                if (i > 0) {
                    spills.increment();
                }
                pageAllocations.add(pages);
                stamp(bucket, first, pages, nowNanos);
                return new Placement(bucket, first * layout.pageSize(), size, 0);
            }
        }
        allocationFailures.increment();
        return null;
    }

    /**
     * The run [firstPage, firstPage + pages) of {@code bucket} that {@link BitmapPageAllocator#fence} kept for this
     * allocation, as a placement of {@code size} bytes; null when not all of it is free.
     */
    Placement allocateFenced(int home, int bucket, long firstPage, long pages, long size, long nowNanos) {
        if (!usable(bucket) || !allocators[bucket].allocateFenced(firstPage, pages)) {
            return null;
        }
        if (bucket != home) {
            spills.increment();
        }
        pageAllocations.add(pages);
        stamp(bucket, firstPage, pages, nowNanos);
        return new Placement(bucket, firstPage * layout.pageSize(), size, 0);
    }

    /** Whether some bucket that takes allocations has a run of {@code pages} free pages that no fence keeps. */
    boolean roomFor(long pages) {
        for (int b = 0; b < allocators.length; b++) {
            if (usable(b) && allocators[b].fits(pages)) {
                return true;
            }
        }
        return false;
    }

    /** Returns the pages of a placement to the free pages. */
    void free(Placement placement) {
        free(placement.bucket(), placement.offset() / layout.pageSize(), layout.pagesFor(placement.size()));
    }

    void free(int bucket, long firstPage, long pages) {
        free(bucket, firstPage, pages, 0);
    }

    /** @param sequence the log sequence of the change that frees them (0: none, the pages were never handed out) */
    void free(int bucket, long firstPage, long pages, long sequence) {
        BitmapPageAllocator allocator = allocators[bucket];
        synchronized (allocator) {
            if (sequence > lastFreeSequence[bucket]) {
                lastFreeSequence[bucket] = sequence;
            }
            allocator.free(firstPage, pages);
        }
        pageFrees.add(pages);
    }

    /**
     * The highest log sequence that freed pages of {@code bucket}, read after an allocation there: at least the one that
     * freed any page of the allocation (see {@link #lastFreeSequence}'s field).
     */
    long lastFreeSequence(int bucket) {
        return lastFreeSequence[bucket];
    }

    private void stamp(int bucket, long firstPage, long pages, long nowNanos) {
        int stamp = (int) Math.min(Integer.MAX_VALUE, nowNanos / 1_000_000_000L + 2);
        int[] stamps = allocationStamps[bucket];
        int last = (int) ((firstPage + pages - 1) / STAMP_REGION_PAGES);
        for (int region = (int) (firstPage / STAMP_REGION_PAGES); region <= last; region++) {
            stamps[region] = stamp;
        }
    }

    /** Whether a region saw an allocation less than {@code minAgeNanos} before {@code nowNanos}. */
    boolean youngRegion(int bucket, int region, long nowNanos, long minAgeNanos) {
        int[] stamps = allocationStamps[bucket];
        int stamp = region < stamps.length ? stamps[region] : 0;
        // stamp - 1 seconds is at or after the allocation, so the age it gives is never more than the real one.
        return minAgeNanos > 0 && stamp != 0 && nowNanos - (stamp - 1L) * 1_000_000_000L < minAgeNanos;
    }

    long allocatedPages() {
        long allocated = 0;
        for (BitmapPageAllocator allocator : allocators) {
            allocated += allocator.allocatedCount();
        }
        return allocated;
    }

    long pageAllocationsTotal() { return pageAllocations.sum(); }

    long pageFreesTotal() { return pageFrees.sum(); }

    long allocationFailuresTotal() { return allocationFailures.sum(); }

    long spillsTotal() { return spills.sum(); }
}
