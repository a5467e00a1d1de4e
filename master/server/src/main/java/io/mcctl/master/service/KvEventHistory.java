package io.mcctl.master.service;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the log says about KV event batches (docs/wire-protocol.md, "KV events"): each tenant's last batch number sealed,
 * and its last batches in full, rebuilt by recovery and by a standby's follow from the records they replay, so that
 * the master that serves next numbers its first batch after the last one logged and answers replay requests for the
 * batches before it. Replay only: nothing here is ever published.
 *
 * <p>Thread-safety: {@link #replayed} is called by one thread (recovery, or the follower); {@link #lastBatches} and
 * {@link #noteSealed} may be called from any thread (the numbers are a concurrent map; a number only grows).
 */
public final class KvEventHistory {

    /** One tenant's batch: its number in the tenant's stream and its events (commits and removals), in log order. */
    public record Batch(String tenant, long number, List<Event> events, long sealedMs) {
    }

    /** One announced change and its log sequence. */
    public record Event(long sequence, Change change) {
    }

    /** Batches kept per tenant. */
    private final int keep;
    private final ConcurrentHashMap<String, Long> lastBatch = new ConcurrentHashMap<>();
    /** Records at or below it were in the snapshot recovery started from: a group that began there is not whole here. */
    private long snapshotSequence;
    /** Announcing changes replayed and not yet sealed, by log sequence. */
    private final TreeMap<Long, Change> pending = new TreeMap<>();
    private final Map<String, ArrayDeque<Batch>> kept = new LinkedHashMap<>();

    public KvEventHistory(int keep) {
        this.keep = Math.max(0, keep);
    }

    /** Recovery loaded a snapshot covering records up to {@code sequence}, with these last sealed batch numbers. */
    public void startFrom(long sequence, Map<String, Long> sealed) {
        snapshotSequence = sequence;
        sealed.forEach(this::noteSealed);
    }

    /** One record replayed (after its change was applied), in log order. */
    public void replayed(Change change, long sequence) {
        if (change instanceof Change.EventsSealed sealed) {
            sealed(sealed, sequence);
        } else if (Change.announcesEvent(change)) {
            pending.put(sequence, change);
        }
    }

    private void sealed(Change.EventsSealed sealed, long sequence) {
        SortedMap<Long, Change> group = pending.subMap(sealed.firstSequence(), sequence);
        // A group that began at or before the snapshot lost its first records to it: its number counts, its batch is not kept.
        boolean whole = sealed.firstSequence() > snapshotSequence;
        Map<String, List<Event>> byTenant = byTenant(group);
        for (Change.TenantBatch batch : sealed.batches()) {
            noteSealed(batch.tenant(), batch.batch());
            List<Event> events = byTenant.getOrDefault(batch.tenant(), List.of());
            if (whole && events.size() == batch.events() && keep > 0) {
                ArrayDeque<Batch> tenantBatches = kept.computeIfAbsent(batch.tenant(), t -> new ArrayDeque<>());
                tenantBatches.addLast(new Batch(batch.tenant(), batch.batch(), events, sealed.sealedMs()));
                while (tenantBatches.size() > keep) {
                    tenantBatches.removeFirst();
                }
            }
        }
        pending.headMap(sequence).clear();
    }

    /** The announcing changes of {@code group} (by log sequence) by tenant, each tenant's in log order. */
    public static Map<String, List<Event>> byTenant(SortedMap<Long, Change> group) {
        Map<String, List<Event>> byTenant = new LinkedHashMap<>();
        group.forEach((sequence, change) -> byTenant.computeIfAbsent(tenantOf(change), t -> new ArrayList<>()).add(new Event(sequence, change)));
        return byTenant;
    }

    /** The tenant of an announcing change. */
    public static String tenantOf(Change change) {
        return change instanceof Change.Committed c ? c.tenant() : ((Change.Removed) change).tenant();
    }

    /** Batch {@code number} of {@code tenant} was sealed (in the log, or by this master's log as it serves). */
    public void noteSealed(String tenant, long number) {
        lastBatch.merge(tenant, number, Math::max);
    }

    /** Each tenant's last batch number sealed: a snapshot records them, and the next batch is numbered after. */
    public Map<String, Long> lastBatches() {
        return Map.copyOf(lastBatch);
    }

    /** The kept batches of {@code tenant}, oldest first. */
    public List<Batch> kept(String tenant) {
        ArrayDeque<Batch> batches = kept.get(tenant);
        return batches == null ? List.of() : List.copyOf(batches);
    }
}
