package io.mcctl.master.service;

import io.mcctl.master.protocol.Placement;

/**
 * One transition of the master's page state, as the write-ahead log records it and as {@link PageState#apply}
 * carries it out: the live path builds a change after validating a request, logs it, then applies it; recovery
 * decodes the same change from the log and applies it the same way. Times are wall-clock milliseconds, as
 * logged, so that a change means the same on replay as when it was made.
 *
 * <p>Every change names the full placement it is about, so that applying a change that a (fuzzy) snapshot
 * already holds changes nothing.
 */
public sealed interface Change permits Change.Allocated, Change.Renewed, Change.Committed, Change.AllocationDropped, Change.Removed,
        Change.QuotaSet, Change.Released, Change.LayoutGrown, Change.PromotionQueued, Change.PromotionEnded, Change.Reserved,
        Change.ReservationClosed, Change.EventsSealed {

    /** Why an in-flight allocation ended without a commit. */
    enum DropReason {
        /** The writer gave it up: it wrote nothing more, so its pages are free at once. */
        FREED,
        /** Its deadline passed; the pages wait out the grace period, since a late writer may still write. */
        EXPIRED,
        /** An operator dropped it; the pages wait until its deadline plus the grace period. */
        DROPPED
    }

    /** An allocation handed out; its pages are the writer's until {@code deadlineMs}; {@code pin}: its commit is soft-pinned. */
    record Allocated(String tenant, String key, Placement placement, long deadlineMs, boolean overwrite, boolean pin) implements Change {

        public Allocated(String tenant, String key, Placement placement, long deadlineMs, boolean overwrite) {
            this(tenant, key, placement, deadlineMs, overwrite, false);
        }
    }

    /** An allocation's deadline moved to {@code deadlineMs} (a long write renewing it). */
    record Renewed(String tenant, String key, Placement placement, long deadlineMs) implements Change {
    }

    /**
     * An in-flight allocation committed as the key's mapping. {@code replaced} is the mapping it took the place of
     * (null when there was none): its pages are freed at once when {@code replacedReleaseMs} is 0, else held in
     * quarantine until then.
     */
    record Committed(String tenant, String key, Placement placement, Placement replaced, long replacedReleaseMs, boolean pinned,
                     KvBlocks blocks, long[] replacedBlockHashes)
            implements Change {

        public Committed(String tenant, String key, Placement placement, Placement replaced, long replacedReleaseMs, boolean pinned) {
            this(tenant, key, placement, replaced, replacedReleaseMs, pinned, null, null);
        }

        public Committed(String tenant, String key, Placement placement, Placement replaced, long replacedReleaseMs) {
            this(tenant, key, placement, replaced, replacedReleaseMs, false);
        }

        /** Whether it announces a KV event: the object or the one it replaced has engine block hashes. */
        public boolean announces() {
            return blocks != null || replacedBlockHashes != null;
        }
    }

    /** An in-flight allocation ended without a commit; its pages are free at once ({@code releaseMs} 0) or quarantined until then. */
    record AllocationDropped(String tenant, String key, Placement placement, DropReason reason, long releaseMs) implements Change {
    }

    /** Why a committed mapping went. */
    enum RemoveReason {
        /** A client removed it. */
        REMOVED,
        /** Evicted by the background evictor: used pages above the high watermark. */
        EVICTED_WATERMARK,
        /** Evicted to make room for an allocation that found no run of free pages. */
        EVICTED_ALLOCATION,
        /** Evicted to make room within its tenant's byte quota. */
        EVICTED_QUOTA
    }

    /** A committed mapping removed or evicted; its pages are free at once ({@code releaseMs} 0) or quarantined until then. */
    record Removed(String tenant, String key, Placement placement, long releaseMs, RemoveReason reason, long[] blockHashes) implements Change {

        public Removed(String tenant, String key, Placement placement, long releaseMs, RemoveReason reason) {
            this(tenant, key, placement, releaseMs, reason, null);
        }

        /** A client's remove. */
        public Removed(String tenant, String key, Placement placement, long releaseMs) {
            this(tenant, key, placement, releaseMs, RemoveReason.REMOVED);
        }

        /** Whether it announces a KV event: the mapping had engine block hashes. */
        public boolean announces() {
            return blockHashes != null;
        }
    }

    /** A tenant's byte quota set; 0 removes it. */
    record QuotaSet(String tenant, long maxBytes) implements Change {
    }

    /** A quarantined range returned to the free pages. */
    record Released(int bucket, long firstPage, long pages) implements Change {
    }

    /**
     * Every bucket grew from {@code previousBucketSize} to {@code bucketSize} bytes (the files were extended before it
     * was logged). Applying it to a state whose buckets are already that large changes nothing.
     */
    record LayoutGrown(long previousBucketSize, long bucketSize) implements Change {
    }

    /**
     * The committed mapping {@code placement} of a key was queued for promotion into the DRAM tier at {@code queuedMs}.
     * Until the task ends the mapping is pinned; a remove or overwrite of that mapping ends the task with it.
     */
    record PromotionQueued(String tenant, String key, Placement placement, long queuedMs) implements Change {
    }

    /** How a promotion task ended. */
    enum PromotionOutcome {
        /** The taker copied the object into its segment: the MEMORY replica is complete. */
        SUCCEEDED,
        /** The taker notified a failure, died, or held the task too long. */
        FAILED,
        /** Nothing to do any more: the object is in DRAM already, or no node with a segment is left. */
        CANCELLED
    }

    /** The promotion task of the mapping {@code placement} ended; its pin goes. */
    record PromotionEnded(String tenant, String key, Placement placement, PromotionOutcome outcome) implements Change {
    }

    /**
     * Pages [{@code firstPage}, {@code firstPage + pages}) of {@code bucket}, in which allocations are answered before
     * their own records are durable, until {@code openUntilMs}. Until a {@link ReservationClosed} names it, recovery holds
     * the range's unclaimed pages until {@code holdUntilMs}: an allocation answered there before a crash, whose record
     * was lost, has a writer that may write until its deadline (at most {@code openUntilMs} plus the allocation deadline),
     * and the grace period after it.
     */
    record Reserved(int bucket, long firstPage, long pages, long openUntilMs, long holdUntilMs) implements Change {
    }

    /**
     * A reservation closed: every allocation answered in it was appended to the log before this change, so recovery,
     * which replays the log in order, finds them all and holds nothing for it.
     */
    record ReservationClosed(int bucket, long firstPage, long pages, long openUntilMs) implements Change {
    }

    /**
     * The records of one group commit from {@code firstSequence} up to this one that announce KV events, numbered as
     * each tenant's next batch ({@code batches}: tenant, batch number, events). Changes no page state: recovery and a
     * standby rebuild the announced batches from it, and a restart numbers the next after the last logged.
     */
    record EventsSealed(long firstSequence, java.util.List<TenantBatch> batches, long sealedMs) implements Change {
    }

    /** One tenant's batch of a {@link EventsSealed}. */
    record TenantBatch(String tenant, long batch, int events) {
    }

    /** Whether {@code change} announces a KV event (a commit or removal of an object with engine block hashes). */
    static boolean announcesEvent(Change change) {
        return change instanceof Committed c ? c.announces() : change instanceof Removed r && r.announces();
    }
}
