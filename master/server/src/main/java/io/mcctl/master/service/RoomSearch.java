package io.mcctl.master.service;

import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.layout.BucketLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Where an allocation of P pages that found no free run can make one by eviction: a window of P consecutive pages of
 * one bucket in which every page is free or held by a committed mapping that eviction may take. Reads only; the caller
 * fences the window and evicts its objects ({@link PageService}).
 *
 * <p>How: around each of a few old mappings (the anchors, sampled by the caller), the pages of its bucket within P - 1
 * of it are read from the bitmap and from {@link PageOwners}; each run of pages noted as one key's is looked up as the
 * mapping that holds them, every shard's runs at once under its lock. A page held by nothing committed (in flight,
 * quarantined), fenced by another allocation making room, or held by a mapping eviction may not take (being promoted;
 * pinned while anything unpinned is left in the tier) blocks every window over it. Windows start where an object or a
 * free run starts (one starting inside either evicts no less), so every object a window evicts lies inside it except
 * the last, which may reach past its end.
 *
 * <p>Which window: first those whose objects are neither leased nor pinned, then those with leased objects (their pages
 * wait out the leases in quarantine), then those with pinned ones; within that, the window whose most recently used
 * object was used least recently; then the one that evicts the fewest pages.
 *
 * <p>Cost, bounded whatever the tier holds: at most {@value #MAX_PAGES_READ} pages read and {@value #MAX_OBJECTS}
 * objects looked up, one shard lock at a time. Not thread-safe: one search, one thread.
 */
final class RoomSearch {

    static final long MAX_PAGES_READ = 1 << 18;
    static final int MAX_OBJECTS = 4096;

    /** A mapping to look around: its bucket and pages. */
    record Anchor(int bucket, long firstPage, long pages) {
    }

    /** An object a window evicts, as it was looked up: found again by its key's hash and its pages. */
    record Victim(int hash, long offset, long size, long lastUsedNanos, boolean pinned) {
    }

    /**
     * A window of {@code pages} pages from {@code firstPage} of {@code bucket}, free once {@code victims} are evicted, or
     * with leased victims ({@code leased}) once their leases end at {@code freeAtNanos}.
     */
    record Room(int bucket, long firstPage, long pages, List<Victim> victims, boolean leased, long freeAtNanos) {
    }

    /** Whether mapping {@code m}, read under its shard's lock, is being promoted (eviction leaves it be). */
    @FunctionalInterface
    interface Promoting {
        boolean test(MappingTable table, int m);
    }

    private static final int FREE = -1;
    private static final int BLOCKED = -2;
    /** Held, by the page owners' note, by a key not yet looked up (or not found: then blocked). */
    private static final int NOTED = -3;
    /** Outside the pages read: known only as part of an object looked up. */
    private static final int UNREAD = -4;

    private final KeyTable keys;
    private final BucketSpace space;
    private final BucketLayout layout;
    private final Promoting promoting;
    private final long now;
    private final boolean pinnedAllowed;

    /** @param pinnedAllowed whether nothing unpinned is left, so that pinned objects may go */
    RoomSearch(KeyTable keys, BucketSpace space, BucketLayout layout, Promoting promoting, long now, boolean pinnedAllowed) {
        this.keys = keys;
        this.space = space;
        this.layout = layout;
        this.promoting = promoting;
        this.now = now;
        this.pinnedAllowed = pinnedAllowed;
    }

    /** The pages of one bucket read around an anchor, and the objects found there. */
    private static final class Region {
        final int bucket;
        final long from;
        final long to;
        final long[] words;
        final long[] fences;
        final int[] holders;
        final List<Found> found = new ArrayList<>();

        Region(int bucket, long from, long to, long[] words, long[] fences, int[] holders) {
            this.bucket = bucket;
            this.from = from;
            this.to = to;
            this.words = words;
            this.fences = fences;
            this.holders = holders;
        }

        boolean taken(long page) {
            long bit = page - (from & ~63L);
            return (words[(int) (bit >>> 6)] & (1L << bit)) != 0;
        }
    }

    /** A run of pages [first, end) that the page owners note as one key's: looked up as the mappings holding it. */
    private record Noted(Region region, long first, long end, int hash) {
    }

    /** A mapping looked up: its pages [first, end), whether eviction may take it, and whether it is leased. */
    private record Found(long first, long end, Victim victim, boolean takeable, long leaseUntilNanos) {
    }

    /** The best window for {@code pages} pages around {@code anchors} (the first ones first while the budget lasts), or null. */
    Room find(long pages, List<Anchor> anchors) {
        long pagesPerBucket = layout.pagesPerBucket();
        if (pages > pagesPerBucket) {
            return null;
        }
        List<Region> regions = new ArrayList<>();
        List<Noted> noted = new ArrayList<>();
        for (long[] span : spans(pages, anchors)) {
            int bucket = (int) span[0];
            long from = span[1];
            long to = span[2];
            BitmapPageAllocator allocator = space.allocators[bucket];
            Region region = new Region(bucket, from, to, allocator.words(from, to), allocator.fences(), space.owners.read(bucket, from, to));
            regions.add(region);
            for (long page = from; page < to; ) {
                int hash = region.taken(page) ? region.holders[(int) (page - from)] : 0;
                long end = page + 1;
                while (end < to && hash != 0 && region.taken(end) && region.holders[(int) (end - from)] == hash) {
                    end++;
                }
                if (hash != 0) {
                    noted.add(new Noted(region, page, end, hash));
                }
                page = end;
            }
        }
        lookUp(noted);
        Room best = null;
        long[] bestRank = null;
        for (Region region : regions) {
            Window window = bestWindow(region, pages);
            if (window != null && (best == null || compare(window.rank, bestRank) < 0)) {
                best = window.room;
                bestRank = window.rank;
            }
        }
        return best;
    }

    /**
     * The pages to read, as {bucket, from, to}: around each anchor those of every window over any of its pages, spans
     * that overlap merged, anchors taken in order while the pages read stay within {@value #MAX_PAGES_READ} (the first
     * always).
     */
    private List<long[]> spans(long pages, List<Anchor> anchors) {
        long pagesPerBucket = layout.pagesPerBucket();
        List<long[]> spans = new ArrayList<>();
        long read = 0;
        for (Anchor anchor : anchors) {
            if (!space.usable(anchor.bucket())) {
                continue; // its file is missing or replaced: room there is no room for an allocation
            }
            long from = Math.max(0, anchor.firstPage() - pages + 1);
            long to = Math.min(pagesPerBucket, anchor.firstPage() + anchor.pages() + pages - 1);
            long added = to - from;
            List<long[]> overlapping = new ArrayList<>();
            for (long[] span : spans) {
                if (span[0] == anchor.bucket() && span[1] <= to && from <= span[2]) {
                    overlapping.add(span);
                    added -= Math.max(0, Math.min(to, span[2]) - Math.max(from, span[1]));
                }
            }
            if (!spans.isEmpty() && read + added > MAX_PAGES_READ) {
                continue;
            }
            read += Math.max(0, added);
            for (long[] span : overlapping) {
                from = Math.min(from, span[1]);
                to = Math.max(to, span[2]);
                spans.remove(span);
            }
            spans.add(new long[] {anchor.bucket(), from, to});
        }
        return spans;
    }

    /**
     * Looks up the mappings holding every noted run, each shard's runs under one hold of its lock, at most
     * {@value #MAX_OBJECTS} of them; the runs not looked up stay noted, and block.
     */
    private void lookUp(List<Noted> noted) {
        long pageSize = layout.pageSize();
        int[] looked = {0};
        keys.eachShardOf(noted, Noted::hash, (shard, runs) -> {
            MappingTable table = shard.mappings;
            for (Noted run : runs) {
                for (long page = run.first(); page < run.end() && looked[0] < MAX_OBJECTS; ) {
                    int m = table.findHolding(run.hash(), run.region().bucket, page, pageSize);
                    if (m < 0) {
                        break; // what is left of the run stays noted, and blocks
                    }
                    long first = table.offset(m) / pageSize;
                    long end = first + layout.pagesFor(table.size(m));
                    boolean pinned = table.pinned(m);
                    boolean takeable = (!pinned || pinnedAllowed) && !promoting.test(table, m);
                    run.region().found.add(new Found(first, end,
                            new Victim(run.hash(), table.offset(m), table.size(m), table.lastUsedNanos(m), pinned), takeable,
                            table.leaseUntilNanos(m)));
                    looked[0]++;
                    page = end;
                }
            }
            return looked[0] < MAX_OBJECTS;
        });
    }

    /** A window and its rank: {class (0 plain, 1 leased, 2 pinned), youngest use (relative), pages evicted}; smaller is better. */
    private record Window(Room room, long[] rank) {
    }

    private static int compare(long[] a, long[] b) {
        if (a[0] != b[0]) {
            return Long.compare(a[0], b[0]);
        }
        if (a[1] != b[1]) {
            return a[1] - b[1] < 0 ? -1 : 1; // times of a nanosecond clock: compared as a difference
        }
        return Long.compare(a[2], b[2]);
    }

    /** The best window of {@code pages} pages among the pages of {@code region} and of the objects found there, or null. */
    private Window bestWindow(Region region, long pages) {
        long lo = region.from;
        long hi = region.to;
        for (Found f : region.found) {
            lo = Math.min(lo, f.first());
            hi = Math.max(hi, f.end());
        }
        // What each page is: FREE, BLOCKED, NOTED, UNREAD, or the index of the object found there.
        int[] kind = new int[(int) (hi - lo)];
        java.util.Arrays.fill(kind, UNREAD);
        for (long page = region.from; page < region.to; page++) {
            kind[(int) (page - lo)] = !region.taken(page) ? FREE : region.holders[(int) (page - region.from)] != 0 ? NOTED : BLOCKED;
        }
        for (int i = 0; i + 1 < region.fences.length; i += 2) {
            for (long page = Math.max(lo, region.fences[i]); page < Math.min(hi, region.fences[i + 1]); page++) {
                kind[(int) (page - lo)] = BLOCKED;
            }
        }
        int objects = region.found.size();
        boolean[] blocked = new boolean[objects];
        for (int k = 0; k < objects; k++) {
            Found f = region.found.get(k);
            blocked[k] |= !f.takeable();
            for (long page = f.first(); page < f.end(); page++) {
                int was = kind[(int) (page - lo)];
                if (was == NOTED || was == UNREAD) {
                    kind[(int) (page - lo)] = k;
                } else {
                    // Read at different moments, the bitmap, the notes and the mappings disagree: leave these pages be.
                    blocked[k] = true;
                    if (was >= 0) {
                        blocked[was] = true;
                    }
                }
            }
        }
        for (int i = 0; i < kind.length; i++) {
            if (kind[i] == NOTED || kind[i] == UNREAD || kind[i] >= 0 && blocked[kind[i]]) {
                kind[i] = BLOCKED;
            }
        }
        // Segments: runs of one kind (an object's pages are one run).
        List<long[]> segments = new ArrayList<>(); // {start, end, kind}
        for (int i = 0; i < kind.length; ) {
            int j = i + 1;
            while (j < kind.length && kind[j] == kind[i]) {
                j++;
            }
            segments.add(new long[] {lo + i, lo + j, kind[i]});
            i = j;
        }
        return slide(region, segments, pages, hi);
    }

    /**
     * Every window that starts where a free run or a takeable object starts and lies in the pages known, with the
     * counts over it kept as it slides (prefix sums, and a queue of its objects by last use for the youngest one).
     */
    private Window slide(Region region, List<long[]> segments, long pages, long knownEnd) {
        int n = segments.size();
        long[] blockedBefore = new long[n + 1];
        long[] leasedBefore = new long[n + 1];
        long[] pinnedBefore = new long[n + 1];
        long[] pagesBefore = new long[n + 1];
        for (int i = 0; i < n; i++) {
            long[] seg = segments.get(i);
            Found f = seg[2] >= 0 ? region.found.get((int) seg[2]) : null;
            blockedBefore[i + 1] = blockedBefore[i] + (seg[2] == BLOCKED ? 1 : 0);
            leasedBefore[i + 1] = leasedBefore[i] + (f != null && f.leaseUntilNanos() - now > 0 ? 1 : 0);
            pinnedBefore[i + 1] = pinnedBefore[i] + (f != null && f.victim().pinned() ? 1 : 0);
            pagesBefore[i + 1] = pagesBefore[i] + (f != null ? f.end() - f.first() : 0);
        }
        int[] youngest = new int[n]; // segment indexes of objects, most recently used first
        int head = 0;
        int tail = 0;
        int last = -1;
        long[] bestRank = null;
        int bestFirst = -1;
        int bestLast = -1;
        long bucketEnd = layout.pagesPerBucket();
        for (int i = 0; i < n; i++) {
            if (segments.get(i)[2] == BLOCKED) {
                continue;
            }
            long end = segments.get(i)[0] + pages;
            if (end > bucketEnd || end > knownEnd) {
                break;
            }
            while (last < i || segments.get(last)[1] < end) {
                last++;
                if (segments.get(last)[2] >= 0) {
                    long used = usedAt(region, segments, last);
                    while (tail > head && usedAt(region, segments, youngest[tail - 1]) - used <= 0) {
                        tail--;
                    }
                    youngest[tail++] = last;
                }
            }
            while (tail > head && youngest[head] < i) {
                head++;
            }
            if (blockedBefore[last + 1] - blockedBefore[i] > 0) {
                continue;
            }
            long pinned = pinnedBefore[last + 1] - pinnedBefore[i];
            long leased = leasedBefore[last + 1] - leasedBefore[i];
            long evicted = pagesBefore[last + 1] - pagesBefore[i];
            // A window of free pages only (another allocation's room let go) ranks before every other.
            long[] rank = {pinned > 0 ? 2 : leased > 0 ? 1 : evicted > 0 ? 0 : -1,
                    tail > head ? usedAt(region, segments, youngest[head]) - now : Long.MIN_VALUE / 2, evicted};
            if (bestRank == null || compare(rank, bestRank) < 0) {
                bestRank = rank;
                bestFirst = i;
                bestLast = last;
            }
        }
        if (bestRank == null) {
            return null;
        }
        List<Victim> victims = new ArrayList<>();
        boolean leased = false;
        long freeAt = now;
        for (int s = bestFirst; s <= bestLast; s++) {
            long k = segments.get(s)[2];
            if (k >= 0) {
                Found f = region.found.get((int) k);
                victims.add(f.victim());
                if (f.leaseUntilNanos() - now > 0) {
                    leased = true;
                    freeAt = f.leaseUntilNanos() - freeAt > 0 ? f.leaseUntilNanos() : freeAt;
                }
            }
        }
        return new Window(new Room(region.bucket, segments.get(bestFirst)[0], pages, victims, leased, freeAt), bestRank);
    }

    private static long usedAt(Region region, List<long[]> segments, int segment) {
        return region.found.get((int) segments.get(segment)[2]).victim().lastUsedNanos();
    }
}
