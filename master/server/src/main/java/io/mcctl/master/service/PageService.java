package io.mcctl.master.service;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.eviction.EvictionPolicy;
import io.mcctl.master.service.eviction.LeastRecentlyUsed;
import io.mcctl.master.service.eviction.VictimOrder;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.layout.BucketLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.IntConsumer;
import java.util.function.LongSupplier;

/**
 * The master's page RPCs: a facade over its {@link PageState}, whose {@link PageState#apply} is the one transition both
 * serving and recovery use. Each call validates its request under the key's shard lock, logs the change it makes, then
 * applies it. No network and no file IO. Built with {@link #builder}: its log, eviction policy, reservations and
 * promotion admission are given then, and fixed for its life.
 *
 * <p>Every allocated page is, at any moment, in exactly one of: a committed mapping; an in-flight allocation with a
 * deadline; a quarantined range with a release time. Pages return to the allocators only from a freed in-flight
 * allocation, or from quarantine once the last read lease on them (or an expired allocation's grace period) has
 * run out, so no reader ever sees a page reused under it and no late writer writes over another object.
 *
 * <p>The rooms, each in its own class: {@link Offloads} (allocate, free, notify, renew, drop, remove),
 * {@link Lookups} (lookups and read leases), {@link KeyListing}, {@link ReservationKeeper} (allocations answered inside
 * reservations), {@link Reaper} (expiry, quarantine release, reservation close), {@link Evictor} (the mechanism; policy in
 * {@code io.mcctl.master.service.eviction}), {@link TenantQuotas}, {@link Promotions}, {@link Restorer} and
 * {@link ShardCopy} (what recovery fills and snapshots copy), and {@link PageContext}, the validate-log-apply step they
 * share. The state: {@link KeyTable} (mappings and in-flight allocations, in shards), {@link Quarantine},
 * {@link Reservations}, {@link BucketSpace} (the allocators).
 *
 * <p>Locks, and how they nest: {@link #layoutLock} (only a layout grow, a snapshot's start and a page check take it),
 * then a shard lock (one at a time; see {@link KeyTable}), then a bucket's reservations monitor (around an allocation's
 * record; the reaper takes it alone to close reservations) or {@link Quarantine#lock}, then a bucket allocator's monitor
 * (which guards its fences too); the log's lock is innermost. The quota lock ({@link TenantQuotas}) nests inside nothing.
 * Making room adds no lock: a run is fenced under its allocator's monitor alone, and its objects are evicted one shard
 * lock at a time. A change is logged and applied under the same shard lock, so the log's order is the order changes of
 * one key were applied in.
 *
 * <p>Longer than 800 lines on purpose: it is the door of the rooms above, one short delegating method per call and view
 * (with their documentation) and the builder; the logic lives in the rooms.
 */
public final class PageService {

    public static final int MAX_LIST_PAGE = 10_000;

    /** How long an expired allocation's pages are held past its deadline unless set otherwise. */
    public static final Duration DEFAULT_ALLOCATION_GRACE = Duration.ofSeconds(10);

    private final PageContext context;
    private final PageState state;
    private final Quarantine quarantine;
    private final BucketSpace space;
    private final ReservationKeeper reservations;
    private final Reaper reaper;
    private final Evictor evictor;
    private final Offloads offloads;
    private final Lookups lookups;
    private final KeyListing listing;
    private final TenantQuotas quotas;
    private final Promotions promotions;
    private final PromotionAdmission admission;
    /**
     * What the log says about KV event batches: rebuilt by replay (recovery, a standby's follow) and kept up to date by
     * the log as it seals batches; its numbers go into every snapshot. Carried over to the service that serves the state.
     */
    private final KvEventHistory kvEventHistory;
    private final Builder settings;

    /**
     * Write-held while a {@link Change.LayoutGrown} is logged and applied; read-held by what must see the layout and the
     * log agree (a snapshot reading its covered sequence) or the allocators keep their size (a page check). Nests
     * outside the shard locks; the serving path never takes it.
     */
    private final java.util.concurrent.locks.ReentrantReadWriteLock layoutLock;

    /** Set by the first {@link #restorer} call. */
    private Restorer restoring;

    /** A page service over a new, empty state of {@code layout}; set the rest on the builder. */
    public static Builder builder(BucketLayout layout) {
        return new Builder(layout, null);
    }

    /**
     * A page service that serves the state {@code restored} holds (recovered, or followed as a standby), with the same
     * times and clocks unless set otherwise and the collaborators set on the builder. {@code restored} is not used after.
     */
    public static Builder serving(PageService restored) {
        Builder b = restored.settings.copy();
        b.state = restored.state;
        b.layoutLock = restored.layoutLock;
        b.kvEventHistory = restored.kvEventHistory;
        return b;
    }

    /** What a page service is built with: the allocation deadline and the read lease must be given; the rest has defaults. */
    public static final class Builder {
        private final BucketLayout layout;
        private PageState state;
        private java.util.concurrent.locks.ReentrantReadWriteLock layoutLock;
        private Duration allocationDeadline;
        private Duration readLease;
        private Duration allocationGrace = DEFAULT_ALLOCATION_GRACE;
        private LongSupplier nanoClock = System::nanoTime;
        private LongSupplier wallClock = System::currentTimeMillis;
        private ChangeLog changeLog = ChangeLog.NONE;
        private EvictionPolicy eviction = EvictionPolicy.OFF;
        private VictimOrder victimOrder = LeastRecentlyUsed.INSTANCE;
        private boolean reservations = true;
        private int promotionAdmissionReads;
        private int promotionMaxTasks = Promotions.DEFAULT_MAX_TASKS;
        private IntConsumer failedWrites = bucket -> { };
        private KvEventSink kvEventSink = KvEventSink.NONE;
        private int keptKvEventBatches;
        private KvEventHistory kvEventHistory;

        private Builder(BucketLayout layout, PageState state) {
            this.layout = layout;
            this.state = state;
        }

        private Builder copy() {
            Builder b = new Builder(layout, state);
            b.allocationDeadline = allocationDeadline;
            b.readLease = readLease;
            b.allocationGrace = allocationGrace;
            b.nanoClock = nanoClock;
            b.wallClock = wallClock;
            b.victimOrder = victimOrder;
            b.promotionMaxTasks = promotionMaxTasks;
            return b;
        }

        /** How long an allocation may be written before it expires. */
        public Builder allocationDeadline(Duration deadline) {
            this.allocationDeadline = deadline;
            return this;
        }

        /** How long a lookup's read lease keeps a removed or evicted object's pages from reuse. */
        public Builder readLease(Duration lease) {
            this.readLease = lease;
            return this;
        }

        /** How long an expired or dropped allocation's pages are held past its deadline before reuse; positive. */
        public Builder allocationGrace(Duration grace) {
            this.allocationGrace = grace;
            return this;
        }

        /** The monotonic clock deadlines and leases are read from. */
        public Builder nanoClock(LongSupplier clock) {
            this.nanoClock = clock;
            return this;
        }

        /** Read once, to tie the nano clock to the wall clock that logged times are in. */
        public Builder wallClock(LongSupplier clock) {
            this.wallClock = clock;
            return this;
        }

        /** Where every change goes before it is applied; none by default (tests, tools, recovery). */
        public Builder changeLog(ChangeLog log) {
            this.changeLog = log;
            return this;
        }

        /** When the tier evicts; off by default (a full tier answers NO_AVAILABLE_HANDLE). */
        public Builder eviction(EvictionPolicy policy) {
            this.eviction = policy;
            return this;
        }

        /** Which objects eviction takes first; least recently used by default. */
        public Builder victimOrder(VictimOrder order) {
            this.victimOrder = order;
            return this;
        }

        /**
         * Whether allocations are answered inside reservations, before their own records are durable (the default), or
         * each waits for its own record and no reservation is opened: the log then holds nothing but the page changes
         * themselves, and a crash holds no pages beyond the allocations in flight.
         */
        public Builder reservations(boolean on) {
            this.reservations = on;
            return this;
        }

        /** Reads within the admission window that queue an object for promotion; 0 (the default): only an operator queues. */
        public Builder promotionAdmissionReads(int reads) {
            this.promotionAdmissionReads = reads;
            return this;
        }

        /** The most promotion tasks queued or held at once. */
        public Builder promotionMaxTasks(int maxTasks) {
            this.promotionMaxTasks = maxTasks;
            return this;
        }

        /** Told the bucket of every allocation its writer gave up (the master's check of that bucket's file). Must not block. */
        public Builder onFailedWrite(IntConsumer listener) {
            this.failedWrites = listener;
            return this;
        }

        /** Hands every logged commit and removal that announces a KV event to {@code sink} (serving only, never replay). */
        public Builder kvEventSink(KvEventSink sink) {
            this.kvEventSink = sink == null ? KvEventSink.NONE : sink;
            return this;
        }

        /**
         * Keeps the last {@code batches} KV event batches per tenant in full on replay (for the replay socket of the master
         * that serves next); 0, the default, keeps their numbers only.
         */
        public Builder keepKvEventHistory(int batches) {
            this.keptKvEventBatches = batches;
            return this;
        }

        public PageService build() {
            if (allocationDeadline == null || readLease == null) {
                throw new IllegalArgumentException("a page service needs its allocation deadline and read lease");
            }
            if (allocationGrace.isNegative() || allocationGrace.isZero()) {
                throw new IllegalArgumentException("allocation grace " + allocationGrace + " must be positive: a late writer needs it");
            }
            return new PageService(this);
        }
    }

    private PageService(Builder b) {
        this.settings = b;
        this.state = b.state != null ? b.state : new PageState(b.layout, b.nanoClock, b.wallClock);
        this.layoutLock = b.layoutLock != null ? b.layoutLock : new java.util.concurrent.locks.ReentrantReadWriteLock();
        this.context = new PageContext(state, b.changeLog, b.allocationDeadline.toNanos(), b.allocationGrace.toNanos(), b.readLease.toNanos(),
                b.kvEventSink);
        this.kvEventHistory = b.kvEventHistory != null ? b.kvEventHistory : new KvEventHistory(b.keptKvEventBatches);
        this.quarantine = state.quarantine;
        this.space = state.space;
        this.promotions = new Promotions(context, b.promotionMaxTasks);
        this.admission = b.promotionAdmissionReads > 0 ? new PromotionAdmission(b.promotionAdmissionReads) : null;
        this.reservations = new ReservationKeeper(context, b.reservations);
        this.reaper = new Reaper(context, reservations);
        this.evictor = new Evictor(context, promotions, b.eviction, b.victimOrder);
        this.offloads = new Offloads(context, reservations, reaper, evictor, b.failedWrites);
        this.lookups = new Lookups(context, admission);
        this.listing = new KeyListing(context);
        this.quotas = new TenantQuotas(context);
    }

    /** Promotion tasks into the DRAM tier. */
    public Promotions promotions() {
        return promotions;
    }

    /** Counts reads for promotion (while a node has a DRAM segment); null when promotion by reads is off. */
    public PromotionAdmission admission() {
        return admission;
    }

    /** The layout in force: its bucket size grows with {@link #growLayout}. */
    public BucketLayout layout() {
        return state.layout;
    }

    /**
     * From now on every change is refused with {@code reason} (the log failed: a change the log may not hold must
     * not be built upon). Lookups go on. Idempotent; the first reason stays.
     */
    public void refuseChanges(String reason) {
        context.refuseChanges(reason);
    }

    /** Why changes are refused, or null while they are taken. */
    public String refusal() {
        return context.refusal();
    }

    /** Absolute path of a bucket's file, as descriptors carry it. */
    public String bucketPath(int bucket) {
        return space.path(bucket);
    }

    /** The bucket a descriptor's file path names, or -1. */
    public int bucketOfPath(String filePath) {
        return space.bucketOfPath(filePath);
    }

    /** Wall-clock milliseconds of a time on this service's clock, as its changes log it (rounded up). */
    long wallMillis(long nanos) {
        return state.wallMillis(nanos);
    }

    public long allocationDeadlineMillis() {
        return context.allocationDeadlineNanos / 1_000_000;
    }

    public long allocationGraceMillis() {
        return context.allocationGraceNanos / 1_000_000;
    }

    public long readLeaseMillis() {
        return context.readLeaseNanos / 1_000_000;
    }

    /** Tenant id {@code id}, checked, for one call's keys. */
    public Tenant tenant(String id) {
        return new Tenant(state, id);
    }

    /** For one batch call: resolves each distinct tenant it names once (see {@link Tenant}). */
    public Tenant.Batch batchTenants() {
        return new Tenant.Batch(state);
    }

    // ---- the page RPCs: writes (Offloads) ----
    // Each takes the tenant checked and resolved once per call (a batch passes the same one for all its keys); the
    // overloads taking the id resolve it for the one key.

    /**
     * Allocates pages for {@code size} bytes under (tenant, key), in the key's home bucket or, when no run fits
     * there, in the next bucket (home+1, home+2, ... wrapping) that has one.
     */
    public Result<Placement> allocate(String tenant, String key, long size, boolean overwrite) {
        return offloads.allocate(tenant, key, size, overwrite);
    }

    /** An allocation whose commit is soft-pinned when {@code pin}: evicted only when nothing unpinned is left. */
    public Result<Placement> allocate(String tenant, String key, long size, boolean overwrite, boolean pin) {
        return offloads.allocate(tenant, key, size, overwrite, pin);
    }

    public Result<Placement> allocate(Tenant tenant, String key, long size, boolean overwrite, boolean pin) {
        return offloads.allocate(tenant, key, size, overwrite, pin);
    }

    /** {@link #allocate}, noting in {@code answer} what the answer must wait for. */
    public Result<Placement> allocate(Tenant tenant, String key, long size, boolean overwrite, boolean pin, AnswerBarrier answer) {
        return offloads.allocate(tenant, key, size, overwrite, pin, answer);
    }

    /** {@link #allocate} of each key of a batch, in order, the batch's index slots read ahead first. */
    public List<Result<Placement>> allocateAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, List<Long> sizes,
                                               boolean overwrite, boolean pin) {
        return offloads.allocateAll(tenants, tenantIds, keyList, sizes, overwrite, pin);
    }

    /** {@link #allocateAll}, noting in {@code answer} what the batch's answer must wait for. */
    public List<Result<Placement>> allocateAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, List<Long> sizes,
                                               boolean overwrite, boolean pin, AnswerBarrier answer) {
        return offloads.allocateAll(tenants, tenantIds, keyList, sizes, overwrite, pin, answer);
    }

    /** Gives up the in-flight allocation of (tenant, key); when {@code expected} is given it must be that allocation. */
    public Result<Void> free(String tenant, String key, Placement expected) {
        return offloads.free(tenant, key, expected);
    }

    public Result<Void> free(Tenant tenant, String key, Placement expected) {
        return offloads.free(tenant, key, expected);
    }

    /** Commits the in-flight allocation of (tenant, key) as its mapping; a committed mapping it overwrites goes to quarantine. */
    public Result<Void> notifySuccess(String tenant, String key, Placement written) {
        return offloads.notifySuccess(tenant, key, written);
    }

    public Result<Void> notifySuccess(Tenant tenant, String key, Placement written) {
        return offloads.notifySuccess(tenant, key, written);
    }

    /** {@link #notifySuccess(Tenant, String, Placement)}, noting in {@code answer} what its answer must wait for. */
    public Result<Void> notifySuccess(Tenant tenant, String key, Placement written, AnswerBarrier answer) {
        return offloads.notifySuccess(tenant, key, written, answer);
    }

    /**
     * {@link #notifySuccess(Tenant, String, Placement, AnswerBarrier)} committing the engine KV blocks the object holds
     * ({@code blocks}, null for none): kept with the mapping (the hashes) and announced to KV-aware routers.
     */
    public Result<Void> notifySuccess(Tenant tenant, String key, Placement written, KvBlocks blocks, AnswerBarrier answer) {
        return offloads.notifySuccess(tenant, key, written, blocks, answer);
    }

    /** The KV event history replay fills (see {@link Builder#keepKvEventHistory}). */
    public KvEventHistory kvEventHistory() {
        return kvEventHistory;
    }

    /** Extends the deadline of the in-flight allocation of (tenant, key), which must be {@code held}. */
    public Result<Long> renew(String tenant, String key, Placement held) {
        return offloads.renew(tenant, key, held);
    }

    public Result<Long> renew(Tenant tenant, String key, Placement held) {
        return offloads.renew(tenant, key, held);
    }

    /** Drops the in-flight allocation of (tenant, key) for an operator; its pages wait out the deadline and grace. */
    public Result<InFlightDrop> dropInFlight(String tenantId, String key) {
        return offloads.dropInFlight(tenantId, key);
    }

    /** An in-flight allocation an operator dropped: where it was, and until when (wall clock) its pages are held. */
    public record InFlightDrop(Placement placement, long quarantinedUntilMs) {
    }

    /** Removes the committed mapping of (tenant, key); its pages wait in quarantine until its read leases run out. */
    public Result<Void> remove(String tenant, String key) {
        return offloads.remove(tenant, key);
    }

    public Result<Void> remove(Tenant tenant, String key) {
        return offloads.remove(tenant, key);
    }

    // ---- the page RPCs: reads (Lookups, KeyListing) ----

    /** The committed mapping of (tenant, key), granting a read lease on its pages. */
    public Result<Placement> getMapping(String tenant, String key) {
        return lookups.getMapping(tenant, key);
    }

    public Result<Placement> getMapping(Tenant tenant, String key) {
        return lookups.getMapping(tenant, key);
    }

    /**
     * {@link #getMapping(Tenant, String)} for a caller that can wait for the log: a mapping whose commit the log does not
     * hold yet is answered {@link #waitsForLog}, with the commit's sequence noted in {@code wait} (else a miss).
     */
    public Result<Placement> getMapping(Tenant tenant, String key, AnswerBarrier wait) {
        return lookups.getMapping(tenant, key, wait);
    }

    /**
     * Whether {@code found} is the answer of a lookup that met a mapping whose commit the log does not hold yet: the key
     * is to be looked up again (with no barrier) once the sequence the lookup's barrier noted is durable, or the log
     * failed, when that lookup answers a miss. It carries no lease and counted no hit.
     */
    public static boolean waitsForLog(Result<?> found) {
        return Lookups.waitsForLog(found);
    }

    /** A committed mapping with what eviction knows of it. */
    public record KeyDetail(Placement placement, long lastUseAgeMillis, boolean pinned) {
    }

    /** The committed mapping of (tenant, key) with how long ago it was last used and whether it is pinned; leased. */
    public Result<KeyDetail> getMappingDetail(String tenant, String key) {
        return lookups.getMappingDetail(tenant, key);
    }

    /** {@link #getMappingDetail(String, String)} for a caller that can wait for the log. */
    public Result<KeyDetail> getMappingDetail(String tenant, String key, AnswerBarrier wait) {
        return lookups.getMappingDetail(tenant, key, wait);
    }

    /** The committed mapping without a lease (for stat and existence checks: no descriptor is handed out). */
    public Result<Placement> peek(String tenant, String key) {
        return lookups.peek(tenant, key);
    }

    public Result<Placement> peek(Tenant tenant, String key) {
        return lookups.peek(tenant, key);
    }

    /** {@link #getMapping} of each key of a batch, in order, its lines read ahead. */
    public List<Result<Placement>> getMappings(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList) {
        return lookups.getMappings(tenants, tenantIds, keyList);
    }

    /** {@link #getMappings} for a caller that can wait for the log. */
    public List<Result<Placement>> getMappings(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, AnswerBarrier wait) {
        return lookups.getMappings(tenants, tenantIds, keyList, wait);
    }

    /** {@link #exists} of each key of a batch, in order. */
    public List<Result<Boolean>> existsAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList) {
        return lookups.existsAll(tenants, tenantIds, keyList);
    }

    /** {@link #existsAll} for a caller that can wait for the log. */
    public List<Result<Boolean>> existsAll(Tenant.Batch tenants, List<String> tenantIds, List<String> keyList, AnswerBarrier wait) {
        return lookups.existsAll(tenants, tenantIds, keyList, wait);
    }

    public Result<Boolean> exists(String tenant, String key) {
        return lookups.exists(tenant, key);
    }

    public Result<Boolean> exists(Tenant tenant, String key) {
        return lookups.exists(tenant, key);
    }

    /** {@link #exists(String, String)} for a caller that can wait for the log. */
    public Result<Boolean> exists(String tenant, String key, AnswerBarrier wait) {
        return lookups.exists(tenant, key, wait);
    }

    /**
     * One page of a tenant's committed keys; {@code nextToken} is empty on the last page. A key listed with a null
     * placement waits for the log (a listing that can wait, as {@link #getMapping(Tenant, String, AnswerBarrier)}): look
     * it up again once the log holds its commit, and leave it out if that is a miss.
     */
    public record KeyPage(List<Map.Entry<String, Placement>> keys, String nextToken) {
    }

    /**
     * One page of a tenant's committed keys with a prefix, in the order of their UTF-8 bytes, after the page that
     * {@code pageToken} ended ("" = from the start): at most {@code pageSize} keys and about {@code maxBytes} of
     * keys and paths. Each key listed is leased to readers like a lookup, since its descriptor is handed out.
     */
    public Result<KeyPage> listKeys(String tenant, String prefix, int pageSize, String pageToken, long maxBytes) {
        return listing.listKeys(tenant, prefix, pageSize, pageToken, maxBytes, true, null);
    }

    /** {@link #listKeys(String, String, int, String, long)} for a caller that can wait for the log (see {@link KeyPage}). */
    public Result<KeyPage> listKeys(String tenant, String prefix, int pageSize, String pageToken, long maxBytes, AnswerBarrier wait) {
        return listing.listKeys(tenant, prefix, pageSize, pageToken, maxBytes, true, wait);
    }

    /** A listing that grants no lease and has no byte bound: a view of the table for checks, never for a client. */
    public Result<KeyPage> listKeys(String tenant, String prefix, int pageSize, String pageToken) {
        return listing.listKeys(tenant, prefix, pageSize, pageToken, Long.MAX_VALUE, false, null);
    }

    // ---- housekeeping (Reaper, ReservationKeeper, Evictor) ----

    /**
     * Reclaims in-flight allocations past their deadline (their pages wait out the grace period), closes reservations
     * whose open time has ended, and releases quarantined ranges whose time has come. Once changes are refused it does
     * nothing.
     *
     * @return pages returned to the allocators
     */
    public long reap() {
        return reaper.reap();
    }

    /**
     * Closes every reservation this master opened, for a master that stops: once the log has made the closes durable, a
     * restart holds no pages for them.
     */
    public void closeAllReservations() {
        reservations.closeAllReservations();
    }

    /** Reservations not closed (open for allocations, or waiting for the reaper to close them). */
    public int reservationCount() {
        return reservations.reservationCount();
    }

    /** Reservations opened since the start. */
    public long reservationsOpenedTotal() {
        return reservations.reservationsOpenedTotal();
    }

    /** Allocations made inside a reservation since the start: answered without waiting for their own records. */
    public long reservedAllocationsTotal() {
        return reservations.reservedAllocationsTotal();
    }

    /** The reservations not closed, as their changes: what a snapshot keeps. */
    public List<Change.Reserved> reservations() {
        return reservations.reservations();
    }

    /** This service's clock now, as the wall-clock milliseconds its changes log (what recovery compares holds with). */
    public long nowWallMillis() {
        return context.nowWallMillis();
    }

    public EvictionPolicy eviction() {
        return evictor.policy();
    }

    /**
     * The same service with another eviction policy, over the same state, log, rooms and counters (only the policy
     * differs): for a caller that wants some calls made without eviction, or with other watermarks.
     */
    public PageService withEviction(EvictionPolicy policy) {
        return new PageService(this, policy);
    }

    private PageService(PageService same, EvictionPolicy policy) {
        this.settings = same.settings;
        this.state = same.state;
        this.layoutLock = same.layoutLock;
        this.context = same.context;
        this.quarantine = same.quarantine;
        this.space = same.space;
        this.promotions = same.promotions;
        this.admission = same.admission;
        this.kvEventHistory = same.kvEventHistory;
        this.reservations = same.reservations;
        this.reaper = same.reaper;
        this.evictor = new Evictor(same.evictor, policy);
        this.offloads = new Offloads(context, reservations, reaper, evictor, same.settings.failedWrites);
        this.lookups = same.lookups;
        this.listing = same.listing;
        this.quotas = same.quotas;
        this.restoring = same.restoring;
    }

    /**
     * The background evictor's pass: when the pages in use are above the high watermark, evicts least recently used
     * objects until they are below the low watermark, at most {@code maxEvictions} in this pass.
     *
     * @return objects evicted
     */
    public long evictToWatermark(int maxEvictions) {
        return evictor.evictToWatermark(maxEvictions);
    }

    /** Objects evicted since start, for every reason. */
    public long evictedTotal() {
        return evictor.evictedTotal();
    }

    public long evictedBytesTotal() {
        return evictor.evictedBytesTotal();
    }

    public long evictedTotal(Change.RemoveReason reason) {
        return evictor.evictedTotal(reason);
    }

    public long evictedBytesTotal(Change.RemoveReason reason) {
        return evictor.evictedBytesTotal(reason);
    }

    /** Windows an allocation evicted objects for and then let go, since another call changed one of their objects meanwhile. */
    public long roomsLostTotal() {
        return evictor.roomsLostTotal();
    }

    public long evictionRunsTotal() {
        return evictor.evictionRunsTotal();
    }

    public double evictionSeconds() {
        return evictor.evictionSeconds();
    }

    /** Milliseconds since the least recently used committed mapping was used, estimated from a fixed sample; 0 when none. */
    public long oldestUseAgeMillis() {
        return evictor.oldestUseAgeMillis();
    }

    // ---- bucket health ----

    /** How the master last found {@code bucket}'s file; allocation skips the bucket unless {@link BucketHealth#HEALTHY}. */
    public BucketHealth bucketHealth(int bucket) {
        return space.health(bucket);
    }

    /** Records how the master found {@code bucket}'s file; returns what it found before. */
    public BucketHealth setBucketHealth(int bucket, BucketHealth health) {
        return space.setHealth(bucket, health);
    }

    /** Buckets allocation passes over: their files are missing or replaced. */
    public int unusableBucketCount() {
        return space.unusableCount();
    }

    // ---- tenants (TenantQuotas) ----

    /** Sets a tenant's byte quota (0 removes it), logged like every change; returns the quota it replaced. */
    public Result<Long> setQuota(String tenant, long maxBytes) {
        return quotas.setQuota(tenant, maxBytes);
    }

    /** The byte quotas in force, by tenant. */
    public Map<String, Long> quotas() {
        return quotas.quotas();
    }

    /** A tenant's committed bytes. */
    public long usedBytes(String tenant) {
        return quotas.usedBytes(tenant);
    }

    /** Per tenant with any activity: {keys, bytes, hits, misses, evicted keys, evicted bytes, quota bytes}. */
    public Map<String, long[]> tenantCounters() {
        return quotas.tenantCounters();
    }

    /** Committed keys and bytes of each tenant that has any. */
    public Map<String, long[]> tenantUsage() {
        return quotas.tenantUsage();
    }

    // ---- layout grow ----

    /** Why every bucket cannot grow to {@code bucketSize} bytes, in one line (what, which value, what is allowed), or null. */
    public String checkGrow(long bucketSize) {
        BucketLayout current = state.layout;
        String allowed = "allowed is a multiple of the page size (" + current.pageSize() + " bytes) from the current bucket size ("
                + current.bucketSize() + " bytes) up to " + BitmapPageAllocator.MAX_PAGES * current.pageSize() + " bytes";
        if (bucketSize < current.bucketSize()) {
            return "bucket size " + bucketSize + " is smaller than the current " + current.bucketSize() + ": buckets never shrink; " + allowed;
        }
        if (bucketSize % current.pageSize() != 0) {
            return "bucket size " + bucketSize + " is not a multiple of the page size " + current.pageSize() + "; " + allowed;
        }
        if (bucketSize / current.pageSize() > BitmapPageAllocator.MAX_PAGES) {
            return "bucket size " + bucketSize + " holds more than " + BitmapPageAllocator.MAX_PAGES + " pages; " + allowed;
        }
        return null;
    }

    /**
     * Grows every bucket to {@code bucketSize} bytes while serving, logged like every change: the caller has extended
     * the bucket files to that size first (and made that durable), and awaits the log before it records the layout
     * anywhere else. The allocators grow under their own monitors, so allocations go on meanwhile.
     *
     * @return the bucket size it replaced; the same size as now changes and logs nothing
     */
    public Result<Long> growLayout(long bucketSize) {
        String invalid = checkGrow(bucketSize);
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        context.checkAccepting();
        layoutLock.writeLock().lock();
        try {
            long previous = state.layout.bucketSize();
            if (bucketSize > previous) {
                context.logAndApply(new Change.LayoutGrown(previous, bucketSize));
            }
            return Result.ok(previous);
        } finally {
            layoutLock.writeLock().unlock();
        }
    }

    /** {@code reading} with no layout change in between: what it reads of the log and the layout agree. */
    public <T> T withSteadyLayout(java.util.function.Supplier<T> reading) {
        layoutLock.readLock().lock();
        try {
            return reading.get();
        } finally {
            layoutLock.readLock().unlock();
        }
    }

    // ---- checking the pages (fsck) ----

    /**
     * Compares every bucket's bitmap with the pages that mappings, in-flight allocations and quarantined ranges
     * claim, without stopping service: see {@link PageChecker} for how the answer stays exact while calls go on.
     * With {@code repair}, false-free pages are marked allocated the moment they are confirmed, and leaked ranges at
     * least {@code minAgeNanos} old are freed after that. Repairs are not logged: after a restart the bitmaps are
     * rebuilt from the claims, which gives the same result.
     *
     * @param minAgeNanos      unclaimed pages in a region allocated from less than this ago are reported as young
     * @param maxRangesPerKind at most this many ranges listed per kind
     */
    public PageCheck checkPages(long minAgeNanos, boolean repair, int maxRangesPerKind) {
        if (maxRangesPerKind < 1) {
            throw new IllegalArgumentException("maxRangesPerKind must be at least 1, not " + maxRangesPerKind);
        }
        return withSteadyLayout(() -> new PageChecker(new CheckView(state), Math.max(0, minAgeNanos), repair, maxRangesPerKind).run());
    }

    // ---- views ----

    /** Counters for stats and metrics. */
    public record Stats(long mappings, long inFlight, long quarantinedPages, long pagesAllocated, long pagesTotal, long tenants) {
    }

    public Stats stats() {
        return new Stats(state.mappings.get(), state.inFlight.get(), quarantine.pages(), space.allocatedPages(),
                layout().pagesPerBucket() * layout().bucketCount(), quotas.activeTenants());
    }

    /** The allocator of a bucket, for read-only reports (bitmap inspect, fsck). */
    public BitmapPageAllocator allocator(int bucket) {
        return space.allocators[bucket];
    }

    public long mappingCount() { return state.mappings.get(); }

    public long inFlightCount() { return state.inFlight.get(); }

    public long quarantinedPageCount() { return quarantine.pages(); }

    public long quarantinedRangeCount() { return quarantine.size(); }

    public long pinnedMappingCount() { return state.pinnedMappings.get(); }

    public long pinnedBytes() { return state.pinnedBytes.sum(); }

    public long pageAllocationsTotal() { return space.pageAllocationsTotal(); }

    public long pageFreesTotal() { return space.pageFreesTotal(); }

    public long allocationFailuresTotal() { return space.allocationFailuresTotal(); }

    public long spillsTotal() { return space.spillsTotal(); }

    public long expiredAllocationsTotal() { return reaper.expiredAllocationsTotal(); }

    // ---- snapshot copy (ShardCopy) and restore (Restorer) ----

    /** Shards of the mapping table, for {@link #copyShard}. */
    public int shardCount() {
        return KeyTable.SHARDS;
    }

    /** Copies shard {@code index} under its lock; see {@link ShardCopy}. */
    public ShardCopy copyShard(int index) {
        return ShardCopy.of(state, index);
    }

    /** The quarantined ranges, for a snapshot: without the holds, which recovery derives from the reservations it keeps. */
    public List<QuarantinedRange> exportQuarantine() {
        return quarantined(false);
    }

    /** The ranges held for reservations a crash left open (see {@link #heldPageCount}). */
    public List<QuarantinedRange> exportHolds() {
        return quarantined(true);
    }

    private List<QuarantinedRange> quarantined(boolean holds) {
        quarantine.lock.lock();
        try {
            List<QuarantinedRange> out = new ArrayList<>();
            for (Quarantine.Range q : quarantine.ranges()) {
                if (q.hold() == holds) {
                    out.add(new QuarantinedRange(q.bucket(), q.firstPage(), q.pages(), state.wallMillis(q.releaseNanos())));
                }
            }
            return out;
        } finally {
            quarantine.lock.unlock();
        }
    }

    /** Pages held now for reservations a crash left open (released at their hold times). */
    public long heldPageCount() {
        long held = 0;
        for (QuarantinedRange range : exportHolds()) {
            held += range.pages();
        }
        return held;
    }

    /** Visits the whole state, one shard at a time under its lock. */
    public void visit(StateVisitor visitor) {
        for (int s = 0; s < KeyTable.SHARDS; s++) {
            copyShard(s).visit(visitor);
        }
        exportQuarantine().forEach(visitor::quarantined);
        exportHolds().forEach(visitor::held);
    }

    /**
     * Starts loading recovered state into this service, which must be empty and not yet serving; later calls return
     * the same restorer.
     */
    public synchronized Restorer restorer() {
        if (restoring == null) {
            if (state.mappings.get() != 0 || state.inFlight.get() != 0 || quarantine.pages() != 0) {
                throw new IllegalStateException("restore needs an empty page service");
            }
            state.startRestore();
            restoring = new Restorer(context, promotions);
        }
        return restoring;
    }

    /** {@link PageContext#describe}, for messages of this package. */
    String describe(Placement p) {
        return context.describe(p);
    }
}
