package io.mcctl.master.service;

import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import java.util.ArrayList;
import java.util.List;

/**
 * Fills an empty page state before it serves: a snapshot's mappings in bulk from {@link Batch}es decoded on other
 * threads, its in-flight allocations and quarantine, then every logged change after it through the same
 * {@link PageState#apply} that serving uses; {@link #finish} then claims every page once (the one overlap check)
 * and derives the bitmaps. Not thread-safe: one thread calls it, except that separate batches may be filled on
 * separate threads. The snapshot side of durability ({@code io.mcctl.master.durability}) drives it; it lives here, beside
 * the tables it fills.
 */
public final class Restorer {

    private final PageContext context;
    private final PageState state;
    private final KeyTable keys;
    private final Quarantine quarantine;
    private final BucketSpace space;
    private final Promotions promotions;
    private final long readLeaseNanos;

    private boolean finished;

    Restorer(PageContext context, Promotions promotions) {
        this.context = context;
        this.state = context.state;
        this.keys = context.keys;
        this.quarantine = context.quarantine;
        this.space = context.space;
        this.promotions = promotions;
        this.readLeaseNanos = context.readLeaseNanos;
    }

    private io.mcctl.storage.layout.BucketLayout layout() {
        return state.layout;
    }

    /** One logged change, applied as it was when the master made it. */
    public void apply(Change change) {
        state.apply(change);
    }

    /** An in-flight allocation a snapshot holds. */
    public void inFlight(Change.Allocated allocation) {
        state.apply(allocation);
    }

    /** A reservation a snapshot holds (one not closed when it was taken). */
    public void reserved(Change.Reserved reservation) {
        state.apply(reservation);
    }

    /** A quarantined range a snapshot holds. */
    public void quarantined(QuarantinedRange range) {
        quarantine.add(new Quarantine.Range(state.clockOf(range.releaseMs()), range.bucket(), range.firstPage(), range.pages()));
    }

    public Batch newBatch() {
        return new Batch();
    }

    /** Adds a snapshot's mappings (later batches win for a key in several), each shard's table filled by one thread. */
    public void putAll(List<Batch> batches) {
        java.util.stream.IntStream.range(0, KeyTable.SHARDS).parallel().forEach(i -> {
            int adding = 0;
            long keyBytes = 0;
            for (Batch batch : batches) {
                if (batch.shards[i] != null) {
                    adding += batch.shards[i].size();
                    keyBytes += batch.shards[i].keyBytesHeld();
                }
            }
            KeyTable.Shard shard = keys.shard(i);
            if (adding == 0) {
                return;
            }
            if (shard.mappings.size() == 0) {
                // Sized once: no growth while filling.
                shard.mappings = new MappingTable(adding, (int) Math.min(Integer.MAX_VALUE, (keyBytes + adding - 1) / adding));
            }
            for (Batch batch : batches) {
                MappingTable from = batch.shards[i];
                if (from != null) {
                    for (int m = 0; m < from.size(); m++) {
                        shard.mappings.putFrom(from, m);
                    }
                }
            }
        });
    }

    /**
     * Counts what was restored, claims every page (refusing state where two claims share a page), derives the
     * bitmaps, and lets the service serve. In-flight allocations keep their deadlines and quarantined ranges their
     * release times, on the wall clock, so a writer still writing after a restart keeps its pages; ones already
     * past are reclaimed by the next {@link #reap}.
     *
     * @throws IllegalStateException when two pieces of state claim the same page (names both)
     */
    public void finish() {
        finishTables();
        ClaimedPages claims = claimAll();
        holdReserved(claims);
        java.util.stream.IntStream.range(0, space.allocators.length).parallel()
                .forEach(b -> space.allocators[b].restoreAllocated(claims.claimed(b)));
        java.util.stream.IntStream.range(0, KeyTable.SHARDS).parallel()
                .forEach(s -> space.owners.holdAll(keys.shard(s).mappings, layout().pageSize()));
        state.finishRestore();
    }

    /**
     * Counts what was restored and lets the tables be read, without claiming pages: for tools that report
     * overlaps rather than refuse them. The service must not serve after this.
     */
    public void finishTables() {
        if (finished) {
            return;
        }
        finished = true;
        long restoredLeaseUntil = state.now() + readLeaseNanos;
        long[] committed = new long[KeyTable.SHARDS];
        long[] pinned = new long[KeyTable.SHARDS];
        // Quotas were set by the snapshot and the log: kept; what is counted is counted again from the tables.
        state.tenants.values().forEach(u -> {
            u.keys.reset();
            u.bytes.reset();
            u.inFlight.reset();
            u.inFlightBytes.reset();
        });
        state.pinnedBytes.reset();
        java.util.stream.IntStream.range(0, KeyTable.SHARDS).parallel().forEach(i -> {
            KeyTable.Shard shard = keys.shard(i);
            List<KeyTable.InFlight> inFlight = new ArrayList<>();
            MappingTable table = shard.mappings;
            String tenantPrefix = null; // the last mapping's tenant and NUL: most neighbours share it, so few keys are decoded
            PageState.TenantUsage usage = null;
            for (int m = 0; m < table.size(); m++) {
                // Leases granted before a restart are not logged: every mapping counts as read just now, so a
                // reader that looked it up before the crash still has its pages for one lease period. Use
                // times are not logged either: eviction starts afresh.
                table.setLeaseUntilNanos(m, restoredLeaseUntil);
                table.setLastUsedNanos(m, restoredLeaseUntil - readLeaseNanos);
                committed[i]++;
                if (tenantPrefix == null || !table.keyStartsWith(m, tenantPrefix)) {
                    String tenant = KeyRules.tenantOf(table.key(m));
                    usage = state.usage(tenant);
                    tenantPrefix = tenant + '\0';
                }
                usage.keys.increment();
                usage.bytes.add(table.size(m));
                if (table.pinned(m)) {
                    pinned[i]++;
                    state.pinnedBytes.add(table.size(m));
                }
            }
            for (KeyTable.InFlight pending : shard.inFlight) {
                inFlight.add(pending);
                PageState.TenantUsage owner = state.usage(KeyRules.tenantOf(pending.scopedKey));
                owner.inFlight.increment();
                owner.inFlightBytes.add(pending.placement.size());
            }
            // Replay appended in log order and the snapshot in table order: put each shard's list in deadline order.
            inFlight.sort((a, b) -> Long.compare(a.deadlineNanos, b.deadlineNanos));
            shard.head = null;
            shard.tail = null;
            for (KeyTable.InFlight pending : inFlight) {
                pending.prev = null;
                pending.next = null;
                shard.append(pending);
            }
        });
        promotions.dropOrphans();
        state.mappings.set(java.util.Arrays.stream(committed).sum());
        state.pinnedMappings.set(java.util.Arrays.stream(pinned).sum());
        long inFlightCount = 0;
        for (int i = 0; i < KeyTable.SHARDS; i++) {
            for (KeyTable.InFlight p = keys.shard(i).head; p != null; p = p.next) {
                inFlightCount++;
            }
        }
        state.inFlight.set(inFlightCount);
    }

    /**
     * Every claim on pages (mappings, in-flight allocations, quarantined ranges) in one map of claimed pages, the one
     * overlap check of a restore. Recovery's thread alone: nothing serves yet.
     *
     * @throws IllegalStateException naming a claim outside the layout, or two claims that share a page
     */
    private ClaimedPages claimAll() {
        long pageSize = layout().pageSize();
        ClaimedPages claims = new ClaimedPages(layout().bucketCount(), layout().pagesPerBucket());
        for (int s = 0; s < KeyTable.SHARDS; s++) {
            KeyTable.forEachClaim(keys.shard(s), (kind, key, bucket, offset, size) -> {
                Placement p = new Placement(bucket, offset, size, 0);
                if (!inLayout(p)) { // named only then: a restore visits every claim
                    throw outsideLayout(p, (kind == KeyTable.ClaimKind.MAPPING ? "mapping of " : "in-flight allocation of ") + PageContext.describeKey(key.get()));
                }
                claims.add(bucket, offset / pageSize, layout().pagesFor(size));
            });
        }
        for (Quarantine.Range q : quarantine.ranges()) {
            Placement p = new Placement(q.bucket(), q.firstPage() * pageSize, q.pages() * pageSize, 0);
            if (!inLayout(p)) {
                throw outsideLayout(p, "quarantined range");
            }
            claims.add(q.bucket(), q.firstPage(), q.pages());
        }
        for (int b = 0; b < layout().bucketCount(); b++) {
            long[] twice = claims.twice(b);
            if (twice != null) {
                long page = firstSetBit(twice);
                List<String> owners = ownersOf(b, page);
                throw new IllegalStateException(String.join(" overlaps ", owners) + " at page " + page + " of bucket " + b);
            }
        }
        return claims;
    }

    /**
     * Holds the pages of every reservation left unclosed that nothing claims, until its hold time, as quarantined ranges
     * (claimed in {@code claims} too): an allocation answered there before the crash may have lost its record, and its
     * writer may write until its deadline and grace. Reservations whose hold has passed hold nothing. The longest holds
     * go first, so a page two reservations cover waits for the later time. The reservations stay, never closed, until
     * their holds pass: what they hold is quarantine that is not logged, which a crash before a snapshot would lose, and
     * the next recovery then holds their pages again.
     */
    private void holdReserved(ClaimedPages claims) {
        long nowMs = context.nowWallMillis();
        List<Change.Reserved> unclosed = new ArrayList<>(state.reservations.all());
        unclosed.sort((a, b) -> Long.compare(b.holdUntilMs(), a.holdUntilMs()));
        for (Change.Reserved r : unclosed) {
            if (r.holdUntilMs() <= nowMs || r.bucket() < 0 || r.bucket() >= layout().bucketCount()) {
                continue;
            }
            long end = Math.min(r.firstPage() + r.pages(), layout().pagesPerBucket());
            long[] claimed = claims.claimed(r.bucket());
            long runStart = -1;
            for (long page = Math.max(0, r.firstPage()); page <= end; page++) {
                boolean free = page < end && (claimed[(int) (page >>> 6)] & (1L << page)) == 0;
                if (free && runStart < 0) {
                    runStart = page;
                } else if (!free && runStart >= 0) {
                    quarantine.add(new Quarantine.Range(state.clockOf(r.holdUntilMs()), r.bucket(), runStart, page - runStart, true));
                    claims.add(r.bucket(), runStart, page - runStart);
                    runStart = -1;
                }
            }
        }
    }

    private boolean inLayout(Placement p) {
        return p.bucket() >= 0 && p.bucket() < layout().bucketCount() && p.offset() >= 0 && p.offset() % layout().pageSize() == 0 && p.size() > 0
                && p.offset() + p.size() <= layout().bucketSize();
    }

    private IllegalStateException outsideLayout(Placement p, String what) {
        return new IllegalStateException(what + " at " + context.describe(p) + " is outside the layout (" + layout().bucketCount()
                + " buckets of " + layout().bucketSize() + " bytes, pages of " + layout().pageSize() + ")");
    }

    private static long firstSetBit(long[] words) {
        for (int w = 0; w < words.length; w++) {
            if (words[w] != 0) {
                return ((long) w << 6) + Long.numberOfTrailingZeros(words[w]);
            }
        }
        return -1;
    }

    /** Who holds a page, for an overlap report: a slow scan, only on that path. */
    private List<String> ownersOf(int bucket, long page) {
        long pageSize = layout().pageSize();
        List<String> owners = new ArrayList<>();
        for (int s = 0; s < KeyTable.SHARDS; s++) {
            KeyTable.forEachClaim(keys.shard(s), (kind, key, b, offset, size) -> {
                if (b == bucket && page >= offset / pageSize && page < offset / pageSize + layout().pagesFor(size)) {
                    owners.add((kind == KeyTable.ClaimKind.MAPPING ? "the mapping of " : "the in-flight allocation of ") + PageContext.describeKey(key.get())
                            + " at " + context.describe(new Placement(b, offset, size, 0)));
                }
            });
        }
        for (Quarantine.Range q : quarantine.ranges()) {
            if (q.bucket() == bucket && page >= q.firstPage() && page < q.firstPage() + q.pages()) {
                owners.add("a quarantined range at pages " + q.firstPage() + "+" + q.pages());
            }
        }
        return owners;
    }

    /**
     * Mappings decoded by one thread for {@link Restorer#putAll}, already sorted by shard so that the shards can be
     * filled in parallel. Not thread-safe: one per decoding thread.
     */
    public static final class Batch {
        /** Per shard, the mappings this batch decoded for it (a later one of a key in place of an earlier). */
        private final MappingTable[] shards = new MappingTable[KeyTable.SHARDS];

        private Batch() {
        }

        public void add(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pinned) {
            add(scopedKey, bucket, offset, size, crc32c, pinned, null);
        }

        /** A mapping with the engine block hashes it was committed with ({@code null}: none). */
        public void add(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pinned, long[] blockHashes) {
            int shard = KeyTable.shardIndex(scopedKey);
            if (shards[shard] == null) {
                shards[shard] = new MappingTable();
            }
            shards[shard].put(scopedKey, bucket, offset, size, crc32c, pinned, blockHashes);
        }
    }
}
