package io.mcctl.master.service;

import io.mcctl.master.protocol.KeyRules;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.alloc.PageWords;
import io.mcctl.storage.layout.BucketLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

/**
 * One run of {@link PageService#checkPages}: every bucket's bitmap against the claims on its pages, exact although
 * calls go on while it runs, and without ever holding more than one shard's lock for long.
 *
 * <p>How it stays exact:
 * <ol>
 *   <li>Each bucket's bitmap is copied first, with its per-region change counts ({@link BitmapPageAllocator#copy}).</li>
 *   <li>Claims are read one shard at a time, each under its own lock, then the quarantine under its lock. A claim
 *       never leaves a shard except into quarantine, so reading quarantine last sees every claim at least once.</li>
 *   <li><b>False free</b> is judged claim by claim while the claim's lock is held: a claim whose pages the copy shows
 *       free is checked against the live bitmap under the bucket monitor, and (with repair) its free pages are marked
 *       allocated right there. The claim cannot go away meanwhile, so a page reported is one a live claim holds.</li>
 *   <li><b>Leaked</b> pages (allocated in the copy, claimed by nothing read) are judged only in regions whose change
 *       count is the same at the end as in the copy: with no allocation or free there, the bitmap is the copy and
 *       the claims on those pages are the ones read. Regions that changed are reported as unsettled, for the next
 *       check; a freshly allocated region is reported as young. Leaks are freed under the same monitor hold that
 *       confirmed the counts unchanged, so a concurrent allocation can never be freed.</li>
 *   <li><b>Overlaps</b> seen in the fuzzy read (a claim moving into quarantine can be read twice) are confirmed by
 *       taking the locks of all their claimants at once (shards in index order, then quarantine) and reading them
 *       again.</li>
 * </ol>
 *
 * <p>Not thread-safe: one instance, one run, one thread.
 */
final class PageChecker {

    /** Most claimants named per run. */
    static final int MAX_CLAIMANTS_NAMED = 4;

    private final CheckView view;
    private final BucketLayout layout;
    private final BitmapPageAllocator[] allocators;
    private final long minAgeNanos;
    private final boolean repair;
    private final int maxRanges;

    private final List<PageCheck.PageRun> leaked = new ArrayList<>();
    private final List<PageCheck.PageRun> young = new ArrayList<>();
    private final List<PageCheck.PageRun> falseFree = new ArrayList<>();
    private final List<PageCheck.PageRun> overlaps = new ArrayList<>();
    private long leakedPages;
    private long youngPages;
    private long unsettledPages;
    private long falseFreePages;
    private long overlapPages;
    private long repairedLeakedPages;
    private long repairedFalseFreePages;
    private long longestHoldNanos;

    PageChecker(CheckView view, long minAgeNanos, boolean repair, int maxRanges) {
        this.view = view;
        this.layout = view.layout();
        this.allocators = view.allocators();
        this.minAgeNanos = minAgeNanos;
        this.repair = repair;
        this.maxRanges = maxRanges;
    }

    PageCheck run() {
        long pageSize = layout.pageSize();
        BitmapPageAllocator.Copy[] before = new BitmapPageAllocator.Copy[allocators.length];
        for (int b = 0; b < allocators.length; b++) {
            before[b] = allocators[b].copy();
        }

        ClaimedPages claims = new ClaimedPages(allocators.length, layout.pagesPerBucket());
        long[] counts = new long[2]; // mappings, in flight
        for (int s = 0; s < view.shardCount(); s++) {
            KeyTable.Shard shard = view.shard(s);
            shard.lock.lock();
            long held = System.nanoTime();
            try {
                KeyTable.forEachClaim(shard, (kind, key, bucket, offset, size) -> {
                    counts[kind == KeyTable.ClaimKind.MAPPING ? 0 : 1]++;
                    claim(claims, before, kindName(kind), key, bucket, offset / pageSize, layout.pagesFor(size));
                });
            } finally {
                hold(held);
                shard.lock.unlock();
            }
        }
        long mappings = counts[0];
        long inFlight = counts[1];
        long quarantinedRanges;
        view.quarantineLock().lock();
        long held = System.nanoTime();
        try {
            List<Quarantine.Range> ranges = view.quarantinedRanges();
            for (Quarantine.Range q : ranges) {
                claim(claims, before, PageCheck.Claimant.QUARANTINE, null, q.bucket(), q.firstPage(), q.pages());
            }
            quarantinedRanges = ranges.size();
        } finally {
            hold(held);
            view.quarantineLock().unlock();
        }

        List<PageCheck.BucketCounters> counters = new ArrayList<>(allocators.length);
        List<PageCheck.PageRun> overlapCandidates = new ArrayList<>();
        for (int b = 0; b < allocators.length; b++) {
            counters.add(judgeLeaks(b, before[b], claims));
            long[] twice = claims.twice(b);
            if (twice != null) {
                int bucket = b;
                ClaimedPages.forEachRun(twice, null, layout.pagesPerBucket(), (t, unused) -> t,
                        (first, n) -> overlapCandidates.add(new PageCheck.PageRun(bucket, first, n, List.of(), false)));
            }
        }
        if (!overlapCandidates.isEmpty()) {
            confirmOverlaps(overlapCandidates);
        }
        return new PageCheck(mappings, inFlight, quarantinedRanges, List.copyOf(leaked), List.copyOf(young), List.copyOf(falseFree),
                List.copyOf(overlaps), leakedPages, youngPages, unsettledPages, falseFreePages, overlapPages, repairedLeakedPages,
                repairedFalseFreePages, List.copyOf(counters), maxRanges, longestHoldNanos, minAgeNanos);
    }

    private void hold(long since) {
        longestHoldNanos = Math.max(longestHoldNanos, System.nanoTime() - since);
    }

    // ---- false free: claim by claim, under the claim's own lock ----

    /** Records a claim; when the early copy shows any of its pages free, checks them live. Caller holds the claim's lock. */
    private void claim(ClaimedPages claims, BitmapPageAllocator.Copy[] before, String kind, KeyTable.ClaimKey key, int bucket, long first,
                       long pages) {
        claims.add(bucket, first, pages);
        if (PageWords.allSet(before[bucket].words(), first, pages)) {
            return;
        }
        BitmapPageAllocator allocator = allocators[bucket];
        synchronized (allocator) {
            long runStart = -1;
            for (long page = first; page <= first + pages; page++) {
                boolean free = page < first + pages && !allocator.isAllocated(page);
                if (free && runStart < 0) {
                    runStart = page;
                } else if (!free && runStart >= 0) {
                    long n = page - runStart;
                    if (repair) {
                        allocator.markAllocated(runStart, n);
                        repairedFalseFreePages += n;
                    }
                    falseFreePages += n;
                    if (falseFree.size() < maxRanges) {
                        falseFree.add(new PageCheck.PageRun(bucket, runStart, n, List.of(claimant(kind, key == null ? null : key.get())), repair));
                    }
                    runStart = -1;
                }
            }
        }
    }

    private static String kindName(KeyTable.ClaimKind kind) {
        return kind == KeyTable.ClaimKind.MAPPING ? PageCheck.Claimant.MAPPING : PageCheck.Claimant.IN_FLIGHT;
    }

    private static PageCheck.Claimant claimant(String kind, String scopedKey) {
        if (scopedKey == null) {
            return new PageCheck.Claimant(kind, "", "");
        }
        return new PageCheck.Claimant(kind, KeyRules.tenantOf(scopedKey), KeyRules.keyOf(scopedKey));
    }

    // ---- leaks: only where nothing changed since the copy ----

    private PageCheck.BucketCounters judgeLeaks(int bucket, BitmapPageAllocator.Copy before, ClaimedPages claims) {
        long pagesPerBucket = layout.pagesPerBucket();
        List<long[]> candidates = new ArrayList<>();
        ClaimedPages.forEachRun(before.words(), claims.claimed(bucket), pagesPerBucket, (a, c) -> a & ~c, (first, n) -> candidates.add(new long[] {first, n}));
        BitmapPageAllocator allocator = allocators[bucket];
        long now = view.now();
        synchronized (allocator) {
            long held = System.nanoTime();
            BitmapPageAllocator.Copy after = allocator.copy();
            for (long[] run : candidates) {
                judgeRun(bucket, allocator, before, after, run[0], run[1], now);
            }
            long popcount = 0;
            long[] words = repair ? allocator.bitmapWords() : after.words(); // as the counter is now, after any frees
            for (int w = 0; w < words.length; w++) {
                long base = (long) w << 6;
                if (base >= pagesPerBucket) {
                    break;
                }
                long valid = base + 64 <= pagesPerBucket ? -1L : (1L << (pagesPerBucket - base)) - 1;
                popcount += Long.bitCount(words[w] & valid);
            }
            PageCheck.BucketCounters counters = new PageCheck.BucketCounters(bucket, allocator.allocatedCount(), popcount,
                    claims.claimedPages(bucket), claims.claimedEndPage(bucket) * layout.pageSize());
            hold(held);
            return counters;
        }
    }

    private enum RegionState { SETTLED, YOUNG, UNSETTLED }

    /** Splits a candidate run at region edges into settled, young and unsettled pieces. Caller holds the bucket monitor. */
    private void judgeRun(int bucket, BitmapPageAllocator allocator, BitmapPageAllocator.Copy before, BitmapPageAllocator.Copy after,
                          long first, long pages, long now) {
        int per = BitmapPageAllocator.PAGES_PER_VERSION;
        long end = first + pages;
        long pieceStart = first;
        RegionState pieceState = null;
        for (long page = first; page < end; ) {
            int region = (int) (page / per);
            long regionEnd = Math.min(end, (long) (region + 1) * per);
            RegionState state = before.versions()[region] != after.versions()[region] ? RegionState.UNSETTLED
                    : view.youngRegion(bucket, region, now, minAgeNanos) ? RegionState.YOUNG : RegionState.SETTLED;
            if (pieceState != null && state != pieceState) {
                piece(bucket, allocator, pieceState, pieceStart, page - pieceStart);
                pieceStart = page;
            }
            pieceState = state;
            page = regionEnd;
        }
        piece(bucket, allocator, pieceState, pieceStart, end - pieceStart);
    }

    private void piece(int bucket, BitmapPageAllocator allocator, RegionState state, long first, long n) {
        switch (state) {
            case UNSETTLED -> unsettledPages += n;
            case YOUNG -> {
                youngPages += n;
                if (young.size() < maxRanges) {
                    young.add(new PageCheck.PageRun(bucket, first, n, List.of(), false));
                }
            }
            case SETTLED -> {
                if (repair) {
                    allocator.free(first, n);
                    repairedLeakedPages += n;
                }
                leakedPages += n;
                if (leaked.size() < maxRanges) {
                    leaked.add(new PageCheck.PageRun(bucket, first, n, List.of(), repair));
                }
            }
        }
    }

    // ---- overlaps: confirmed with every claimant's lock held ----

    /** A claim found on a candidate run's pages: where it lives, so it can be read again under its lock. */
    private record Found(PageCheck.Claimant claimant, KeyTable.ClaimKind kind, String scopedKey, int shard, int bucket, long firstPage,
                         long pages, long offset, long size) {
    }

    private void confirmOverlaps(List<PageCheck.PageRun> candidates) {
        List<List<Found>> found = new ArrayList<>();
        long[][] candidatePages = new long[allocators.length][];
        for (PageCheck.PageRun run : candidates) {
            if (candidatePages[run.bucket()] == null) {
                candidatePages[run.bucket()] = new long[(int) ((layout.pagesPerBucket() + 63) >>> 6)];
            }
            PageWords.set(candidatePages[run.bucket()], run.firstPage(), run.pages());
            found.add(new ArrayList<>());
        }
        long pageSize = layout.pageSize();
        for (int s = 0; s < view.shardCount(); s++) {
            KeyTable.Shard shard = view.shard(s);
            int shardIndex = s;
            shard.lock.lock();
            long held = System.nanoTime();
            try {
                KeyTable.forEachClaim(shard, (kind, key, bucket, offset, size) -> collect(candidates, candidatePages, found, kind,
                        key, shardIndex, bucket, offset / pageSize, layout.pagesFor(size), offset, size));
            } finally {
                hold(held);
                shard.lock.unlock();
            }
        }
        view.quarantineLock().lock();
        try {
            for (Quarantine.Range q : view.quarantinedRanges()) {
                collect(candidates, candidatePages, found, null, null, -1, q.bucket(), q.firstPage(), q.pages(), 0, 0);
            }
        } finally {
            view.quarantineLock().unlock();
        }
        for (int i = 0; i < candidates.size(); i++) {
            confirm(candidates.get(i), found.get(i));
        }
    }

    /** {@code kind} null: a quarantined range. */
    private void collect(List<PageCheck.PageRun> candidates, long[][] candidatePages, List<List<Found>> found, KeyTable.ClaimKind kind,
                         KeyTable.ClaimKey key, int shard, int bucket, long first, long pages, long offset, long size) {
        if (candidatePages[bucket] == null || !PageWords.anySet(candidatePages[bucket], first, pages)) {
            return;
        }
        String scopedKey = key == null ? null : key.get();
        for (int i = 0; i < candidates.size(); i++) {
            PageCheck.PageRun run = candidates.get(i);
            if (run.bucket() == bucket && first < run.firstPage() + run.pages() && first + pages > run.firstPage()) {
                String kindName = kind == null ? PageCheck.Claimant.QUARANTINE : kindName(kind);
                found.get(i).add(new Found(claimant(kindName, scopedKey), kind, scopedKey, shard, bucket, first, pages, offset, size));
            }
        }
    }

    /** Reads every claimant of a candidate again with all their locks held; an overlap when two still share pages. */
    private void confirm(PageCheck.PageRun candidate, List<Found> claimants) {
        if (claimants.size() < 2) {
            return;
        }
        TreeSet<Integer> shardIndexes = new TreeSet<>();
        boolean quarantine = false;
        for (Found f : claimants) {
            if (f.shard() >= 0) {
                shardIndexes.add(f.shard());
            } else {
                quarantine = true;
            }
        }
        List<KeyTable.Shard> locked = new ArrayList<>();
        try {
            for (int s : shardIndexes) {
                KeyTable.Shard shard = view.shard(s);
                shard.lock.lock();
                locked.add(shard);
            }
            if (quarantine) {
                view.quarantineLock().lock();
            }
            long held = System.nanoTime();
            try {
                List<Found> still = new ArrayList<>();
                List<Quarantine.Range> quarantined = quarantine ? view.quarantinedRanges() : List.of();
                for (Found f : claimants) {
                    if (stillClaims(f, quarantined)) {
                        still.add(f);
                    }
                }
                long[] shared = sharedPages(candidate, still);
                if (shared != null) {
                    overlapPages += shared[1];
                    if (overlaps.size() < maxRanges) {
                        overlaps.add(new PageCheck.PageRun(candidate.bucket(), shared[0], shared[1],
                                still.stream().limit(MAX_CLAIMANTS_NAMED).map(Found::claimant).toList(), false));
                    }
                }
            } finally {
                hold(held);
                if (quarantine) {
                    view.quarantineLock().unlock();
                }
            }
        } finally {
            for (int i = locked.size() - 1; i >= 0; i--) {
                locked.get(i).lock.unlock();
            }
        }
    }

    private boolean stillClaims(Found f, List<Quarantine.Range> quarantined) {
        if (f.shard() < 0) {
            for (Quarantine.Range q : quarantined) {
                if (q.bucket() == f.bucket() && q.firstPage() == f.firstPage() && q.pages() == f.pages()) {
                    return true;
                }
            }
            return false;
        }
        return KeyTable.holds(view.shard(f.shard()), f.scopedKey(), f.kind(), f.bucket(), f.offset(), f.size());
    }

    /** The pages of the candidate claimed by two or more of {@code claimants}, as {first, count} of the span, or null. */
    private static long[] sharedPages(PageCheck.PageRun candidate, List<Found> claimants) {
        long lo = Long.MAX_VALUE;
        long hi = Long.MIN_VALUE;
        for (int i = 0; i < claimants.size(); i++) {
            for (int j = i + 1; j < claimants.size(); j++) {
                Found a = claimants.get(i);
                Found b = claimants.get(j);
                long start = Math.max(Math.max(a.firstPage(), b.firstPage()), candidate.firstPage());
                long end = Math.min(Math.min(a.firstPage() + a.pages(), b.firstPage() + b.pages()), candidate.firstPage() + candidate.pages());
                if (start < end) {
                    lo = Math.min(lo, start);
                    hi = Math.max(hi, end);
                }
            }
        }
        return lo < hi ? new long[] {lo, hi - lo} : null;
    }
}
