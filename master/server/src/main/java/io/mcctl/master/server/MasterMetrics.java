package io.mcctl.master.server;

import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.mcctl.master.durability.WriteAheadLog;
import io.mcctl.master.service.PageService;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * The master's Prometheus metrics: the design RFC's page metrics (read from the page service when scraped,
 * so the hot path only bumps adders it keeps anyway) and per-RPC request, failure and latency metrics.
 */
public final class MasterMetrics {

    /** The eviction reasons and their metric labels. */
    private static final java.util.Map<io.mcctl.master.service.Change.RemoveReason, String> EVICTIONS = new java.util.EnumMap<>(java.util.Map.of(
            io.mcctl.master.service.Change.RemoveReason.EVICTED_WATERMARK, "watermark",
            io.mcctl.master.service.Change.RemoveReason.EVICTED_ALLOCATION, "allocation",
            io.mcctl.master.service.Change.RemoveReason.EVICTED_QUOTA, "quota"));

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final Counter rpcRequests;
    private final Counter rpcFailures;
    private final Histogram rpcLatency;

    /** @param wal the write-ahead log, whose counters are exported too; null under snapshot durability */
    public MasterMetrics(PageService pages, WriteAheadLog wal) {
        int buckets = pages.layout().bucketCount();
        GaugeWithCallback.builder().name("mooncake_master_distributed_pages_allocated")
                .help("Pages allocated per bucket (mappings, in-flight allocations and quarantine)").labelNames("bucket")
                .callback(cb -> {
                    for (int b = 0; b < buckets; b++) {
                        cb.call(pages.allocator(b).allocatedCount(), Integer.toString(b));
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("mooncake_master_distributed_pages_free").help("Free pages per bucket").labelNames("bucket")
                .callback(cb -> {
                    for (int b = 0; b < buckets; b++) {
                        cb.call(pages.allocator(b).pageCount() - pages.allocator(b).allocatedCount(), Integer.toString(b));
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_bucket_files")
                .help("Bucket files by health: healthy, missing or replaced (buckets not healthy take no allocations; see /health)")
                .labelNames("state").callback(cb -> {
                    long[] counts = new long[io.mcctl.master.service.BucketHealth.values().length];
                    for (int b = 0; b < buckets; b++) {
                        counts[pages.bucketHealth(b).ordinal()]++;
                    }
                    for (io.mcctl.master.service.BucketHealth health : io.mcctl.master.service.BucketHealth.values()) {
                        cb.call(counts[health.ordinal()], health.name().toLowerCase(java.util.Locale.ROOT));
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_bucket_file_unhealthy")
                .help("1 for each bucket whose file is missing or replaced, labelled with the bucket and its state; no series for healthy ones")
                .labelNames("bucket", "state").callback(cb -> {
                    for (int b = 0; b < buckets; b++) {
                        io.mcctl.master.service.BucketHealth health = pages.bucketHealth(b);
                        if (health != io.mcctl.master.service.BucketHealth.HEALTHY) {
                            cb.call(1, Integer.toString(b), health.name().toLowerCase(java.util.Locale.ROOT));
                        }
                    }
                }).register(registry);
        CounterWithCallback.builder().name("mooncake_master_distributed_page_allocations_total")
                .help("Pages handed out by allocations").callback(cb -> cb.call(pages.pageAllocationsTotal())).register(registry);
        CounterWithCallback.builder().name("mooncake_master_distributed_page_frees_total")
                .help("Pages returned to the allocators").callback(cb -> cb.call(pages.pageFreesTotal())).register(registry);
        CounterWithCallback.builder().name("mooncake_master_distributed_page_allocation_failures_total")
                .help("Allocations refused because no bucket had a run that fits (NO_AVAILABLE_HANDLE)")
                .callback(cb -> cb.call(pages.allocationFailuresTotal())).register(registry);
        CounterWithCallback.builder().name("mcctl_master_allocation_spills_total")
                .help("Allocations placed outside the key's home bucket").callback(cb -> cb.call(pages.spillsTotal())).register(registry);
        CounterWithCallback.builder().name("mcctl_master_allocations_expired_total")
                .help("In-flight allocations reclaimed at their deadline").callback(cb -> cb.call(pages.expiredAllocationsTotal()))
                .register(registry);
        GaugeWithCallback.builder().name("mcctl_master_promotion_tasks").help("Promotion tasks into the DRAM tier, queued or being copied")
                .callback(cb -> cb.call(pages.promotions().count())).register(registry);
        CounterWithCallback.builder().name("mcctl_master_promotions_total").help("Promotion tasks since start, by what became of them")
                .labelNames("outcome").callback(cb -> {
                    cb.call(pages.promotions().queuedTotal(), "queued");
                    cb.call(pages.promotions().succeededTotal(), "succeeded");
                    cb.call(pages.promotions().failedTotal(), "failed");
                }).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_mappings").help("Committed mappings")
                .callback(cb -> cb.call(pages.mappingCount())).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_in_flight_allocations").help("Allocations waiting for their notify")
                .callback(cb -> cb.call(pages.inFlightCount())).register(registry);
        CounterWithCallback.builder().name("mcctl_master_lookups_total").help("Mapping lookups per tenant, by result (hit or miss)")
                .labelNames("tenant", "result").callback(cb -> pages.tenantCounters().forEach((tenant, c) -> {
                    cb.call(c[2], tenant, "hit");
                    cb.call(c[3], tenant, "miss");
                })).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_tenant_used_bytes").help("Bytes of committed objects per tenant").labelNames("tenant")
                .callback(cb -> pages.tenantCounters().forEach((tenant, c) -> cb.call(c[1], tenant))).register(registry);
        CounterWithCallback.builder().name("mooncake_master_evicted_keys_total").help("Objects evicted, by reason (watermark, allocation, quota)")
                .labelNames("reason").callback(cb -> EVICTIONS.forEach((reason, label) -> cb.call(pages.evictedTotal(reason), label)))
                .register(registry);
        CounterWithCallback.builder().name("mooncake_master_evicted_bytes_total").help("Bytes of objects evicted, by reason")
                .labelNames("reason").callback(cb -> EVICTIONS.forEach((reason, label) -> cb.call(pages.evictedBytesTotal(reason), label)))
                .register(registry);
        CounterWithCallback.builder().name("mcctl_master_eviction_rooms_lost_total")
                .help("Runs an allocation evicted objects for and then let go: another call used, replaced or removed one of them meanwhile")
                .callback(cb -> cb.call(pages.roomsLostTotal())).register(registry);
        CounterWithCallback.builder().name("mcctl_master_eviction_runs_total").help("Evictor passes that found the tier above its high watermark")
                .callback(cb -> cb.call(pages.evictionRunsTotal())).register(registry);
        CounterWithCallback.builder().name("mcctl_master_eviction_seconds_total").help("Time the evictor's passes took")
                .callback(cb -> cb.call(pages.evictionSeconds())).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_oldest_object_age_seconds")
                .help("Time since the least recently used object was last used (sampled)")
                .callback(cb -> cb.call(pages.oldestUseAgeMillis() / 1000.0)).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_pinned_bytes").help("Bytes of soft-pinned objects (evicted only when nothing unpinned is left)")
                .callback(cb -> cb.call(pages.pinnedBytes())).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_changes_refused")
                .help("1 once the master takes no changes (its write-ahead log failed; see /health), else 0")
                .callback(cb -> cb.call(pages.refusal() == null ? 0 : 1)).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_quarantined_pages")
                .help("Freed pages waiting for read leases, or for the grace period after an expired allocation, to run out")
                .callback(cb -> cb.call(pages.quarantinedPageCount())).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_bucket_largest_free_run_pages")
                .help("Pages in the longest free run of each bucket: the largest object it can still take (beside pages_free, a measure of "
                        + "its fragmentation)").labelNames("bucket")
                .callback(cb -> {
                    for (int b = 0; b < buckets; b++) {
                        cb.call(pages.allocator(b).largestFreeRun(), Integer.toString(b));
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_eviction_watermark")
                .help("The eviction watermarks in force, as shares of all pages (high: the evictor starts; low: it stops); "
                        + "no series while eviction is off").labelNames("level")
                .callback(cb -> {
                    io.mcctl.master.service.eviction.EvictionPolicy eviction = pages.eviction();
                    if (eviction.enabled()) {
                        cb.call(eviction.highWatermark(), "high");
                        cb.call(eviction.lowWatermark(), "low");
                    }
                }).register(registry);
        // No exemplars: without tracing they only sample the clock on every call of the hot path.
        if (wal != null) {
            CounterWithCallback.builder().name("mcctl_wal_syncs_total").help("Write-ahead log fsyncs: one per group of records committed together")
                    .callback(cb -> cb.call(wal.syncCount())).register(registry);
            CounterWithCallback.builder().name("mcctl_wal_records_total").help("Write-ahead log records made durable")
                    .callback(cb -> cb.call(wal.recordsWritten())).register(registry);
            CounterWithCallback.builder().name("mcctl_wal_bytes_total").help("Bytes written to write-ahead log segments")
                    .callback(cb -> cb.call(wal.bytesWritten())).register(registry);
            GaugeWithCallback.builder().name("mcctl_master_reservations")
                    .help("Reservations not closed: page ranges where allocations are answered before their own log records are durable")
                    .callback(cb -> cb.call(pages.reservationCount())).register(registry);
            CounterWithCallback.builder().name("mcctl_master_reservations_opened_total").help("Reservations opened (one log record each)")
                    .callback(cb -> cb.call(pages.reservationsOpenedTotal())).register(registry);
            CounterWithCallback.builder().name("mcctl_master_allocations_reserved_total")
                    .help("Allocations made inside a reservation, whose answers do not wait for their own log records")
                    .callback(cb -> cb.call(pages.reservedAllocationsTotal())).register(registry);
            GaugeWithCallback.builder().name("mcctl_master_reservation_held_pages")
                    .help("Quarantined pages held for reservations a crash left open, until their hold times")
                    .callback(cb -> cb.call(pages.heldPageCount())).register(registry);
            GaugeWithCallback.builder().name("mcctl_wal_failed_timestamp_seconds")
                    .help("When a write or fsync of the write-ahead log failed (the master then refuses changes until restarted); 0 while none has")
                    .callback(cb -> cb.call(wal.failedAtMillis() / 1000.0)).register(registry);
            CounterWithCallback.builder().name("mcctl_wal_sync_seconds_total")
                    .help("Time spent writing and fsyncing the write-ahead log; over syncs_total, the mean commit time")
                    .callback(cb -> cb.call(wal.syncSeconds())).register(registry);
        }
        rpcRequests = Counter.builder().name("mcctl_master_rpc_requests_total").help("RPCs received").labelNames("method")
                .withoutExemplars().register(registry);
        rpcFailures = Counter.builder().name("mcctl_master_rpc_failures_total").help("RPCs that ended with a non-OK status")
                .labelNames("method", "code").register(registry);
        rpcLatency = Histogram.builder().name("mcctl_master_rpc_latency_seconds").help("Time from call start to close")
                .labelNames("method").classicOnly().withoutExemplars().register(registry);
        registerPageCheckMetrics();
    }

    /** The KV event publisher's counters (docs/operator-guide.md, "KV events"). */
    public void kvEvents(io.mcctl.master.events.KvEventPublisher publisher) {
        CounterWithCallback.builder().name("mcctl_master_kv_events_published_total")
                .help("KV events (BlockStored, BlockRemoved) sent to subscribers").callback(cb -> cb.call(publisher.eventsPublished())).register(registry);
        CounterWithCallback.builder().name("mcctl_master_kv_event_batches_published_total")
                .help("KV event batches sent to subscribers").callback(cb -> cb.call(publisher.batchesPublished())).register(registry);
        CounterWithCallback.builder().name("mcctl_master_kv_events_dropped_total")
                .help("KV events dropped because the publisher fell behind (kv_events_queue full): their batches are not sent, "
                        + "subscribers see a sequence gap").callback(cb -> cb.call(publisher.eventsDropped())).register(registry);
        CounterWithCallback.builder().name("mcctl_master_kv_event_batches_dropped_total")
                .help("KV event batches not sent because an event of theirs was dropped").callback(cb -> cb.call(publisher.batchesDropped()))
                .register(registry);
        CounterWithCallback.builder().name("mcctl_master_kv_event_replay_requests_total")
                .help("Replay requests answered").callback(cb -> cb.call(publisher.replayRequests())).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_kv_events_queued")
                .help("KV events waiting for the publisher thread").callback(cb -> cb.call(publisher.queuedEvents())).register(registry);
    }

    public PrometheusRegistry registry() {
        return registry;
    }

    /**
     * The Session stream's requests by kind: the RPC counters see one Session call however many batches it carries.
     * Each kind's series are resolved once, so a request costs a counter increment and a histogram observation.
     */
    final class SessionKind {
        private final io.prometheus.metrics.core.datapoints.CounterDataPoint requests;
        private final io.prometheus.metrics.core.datapoints.DistributionDataPoint latency;
        private final String kind;

        private SessionKind(String kind) {
            this.kind = kind;
            this.requests = sessionRequests.labelValues(kind);
            this.latency = sessionLatency.labelValues(kind);
        }

        /** One request of this kind answered {@code nanos} after it arrived, failed whole with {@code failedCode} (null: not). */
        void answered(long nanos, String failedCode) {
            requests.inc();
            latency.observe(nanos / 1e9);
            if (failedCode != null) {
                sessionFailures.labelValues(kind, failedCode).inc();
            }
        }
    }

    private final Counter sessionRequests = Counter.builder().name("mcctl_master_session_requests_total")
            .help("Requests received on Session streams, by kind (allocate, notify, lookup, free, remove)").labelNames("kind")
            .withoutExemplars().register(registry);
    private final Counter sessionFailures = Counter.builder().name("mcctl_master_session_failures_total")
            .help("Session requests that failed whole, by kind and gRPC code").labelNames("kind", "code").register(registry);
    private final Histogram sessionLatency = Histogram.builder().name("mcctl_master_session_latency_seconds")
            .help("Time from a Session request's arrival to its answer (after its changes are durable)").labelNames("kind")
            .classicOnly().withoutExemplars().register(registry);
    /** Filled once, at construction, for every kind: read without a lock. */
    private final java.util.Map<io.mcctl.master.proto.v1.SessionRequest.RequestCase, SessionKind> sessionKinds = sessionKinds();

    private java.util.Map<io.mcctl.master.proto.v1.SessionRequest.RequestCase, SessionKind> sessionKinds() {
        java.util.Map<io.mcctl.master.proto.v1.SessionRequest.RequestCase, SessionKind> kinds = new java.util.EnumMap<>(
                io.mcctl.master.proto.v1.SessionRequest.RequestCase.class);
        for (io.mcctl.master.proto.v1.SessionRequest.RequestCase kind : io.mcctl.master.proto.v1.SessionRequest.RequestCase.values()) {
            if (kind == io.mcctl.master.proto.v1.SessionRequest.RequestCase.BUNDLE) {
                continue; // a bundle's requests are counted by their own kinds, the bundles below
            }
            kinds.put(kind, new SessionKind(kind == io.mcctl.master.proto.v1.SessionRequest.RequestCase.REQUEST_NOT_SET ? "none"
                    : kind.name().toLowerCase(java.util.Locale.ROOT)));
        }
        return kinds;
    }

    private final Counter sessionBundles = Counter.builder().name("mcctl_master_session_bundles_total")
            .help("Session messages that carried a bundle of requests (each request is counted by its kind as well)")
            .withoutExemplars().register(registry);
    private final Counter sessionBundledRequests = Counter.builder().name("mcctl_master_session_bundled_requests_total")
            .help("Requests that came in Session bundles").withoutExemplars().register(registry);

    /** A bundle of {@code requests} requests arrived on a Session stream. */
    void sessionBundle(int requests) {
        sessionBundles.inc();
        sessionBundledRequests.inc(requests);
    }

    /** Exports what Session streams hold for clients that do not take their answers ({@code backlog}), read when scraped. */
    void watchSessions(SessionBacklog backlog) {
        GaugeWithCallback.builder().name("mcctl_master_session_backlog_bytes")
                .help("Bytes of Session answers handed to the transport and not yet taken by their clients (to within the transport's "
                        + "32 KiB ready threshold per stream)")
                .callback(cb -> cb.call(backlog.held())).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_session_streams_paused")
                .help("Session streams the master does not read now because their clients are not taking answers")
                .callback(cb -> cb.call(backlog.pausedStreams())).register(registry);
        CounterWithCallback.builder().name("mcctl_master_session_streams_cancelled_total")
                .help("Session streams cancelled with RESOURCE_EXHAUSTED because their clients did not take their answers, by the "
                        + "bound an answer would have passed (stream_limit: session_backlog, total_limit: session_backlog_total)")
                .labelNames("reason").callback(cb -> {
                    for (SessionBacklog.Exceeded why : SessionBacklog.Exceeded.values()) {
                        cb.call(backlog.cancelledTotal(why), why.label);
                    }
                }).register(registry);
    }

    /** Exports the snapshots {@code snapshotter} writes, read when scraped. */
    public void watchSnapshots(io.mcctl.master.durability.Snapshotter snapshotter) {
        CounterWithCallback.builder().name("mcctl_master_snapshots_total").help("Snapshots since start, by outcome (written, failed)")
                .labelNames("outcome").callback(cb -> {
                    cb.call(snapshotter.takenTotal(), "written");
                    cb.call(snapshotter.failedTotal(), "failed");
                }).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_last_snapshot_timestamp_seconds")
                .help("When the last snapshot since start was written; no series before the first")
                .callback(cb -> {
                    long at = snapshotter.lastTakenAtMillis();
                    if (at > 0) {
                        cb.call(at / 1000.0);
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_last_snapshot_seconds").help("How long the last snapshot took to write")
                .callback(cb -> {
                    io.mcctl.master.durability.Snapshotter.Taken last = snapshotter.lastTaken();
                    if (last != null) {
                        cb.call(last.millis() / 1000.0);
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_last_snapshot_bytes").help("Size of the last snapshot written")
                .callback(cb -> {
                    io.mcctl.master.durability.Snapshotter.Taken last = snapshotter.lastTaken();
                    if (last != null) {
                        cb.call(last.bytes());
                    }
                }).register(registry);
    }

    /** The findings of the last live page check (mcctl fsck --master), by kind: read when scraped. */
    private volatile io.mcctl.master.service.PageCheck lastPageCheck;
    private volatile long lastPageCheckAtMillis;
    private final Counter pageChecks = Counter.builder().name("mcctl_master_fsck_checks_total")
            .help("Live page checks (mcctl fsck --master) since start").labelNames("repair").register(registry);

    private void registerPageCheckMetrics() {
        GaugeWithCallback.builder().name("mcctl_master_fsck_pages")
                .help("Pages the last live page check (mcctl fsck --master) found, by finding: false_free and overlap are errors, leaked "
                        + "wastes space, young and unsettled are judged by the next check; no series before the first check")
                .labelNames("finding").callback(cb -> {
                    io.mcctl.master.service.PageCheck check = lastPageCheck;
                    if (check != null) {
                        cb.call(check.falseFreePages() - check.repairedFalseFreePages(), "false_free");
                        cb.call(check.overlapPages(), "overlap");
                        cb.call(check.leakedPages() - check.repairedLeakedPages(), "leaked");
                        cb.call(check.youngPages(), "young");
                        cb.call(check.unsettledPages(), "unsettled");
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_fsck_counter_mismatches")
                .help("Buckets whose allocated-page counter disagreed with their bitmap at the last live page check")
                .callback(cb -> {
                    io.mcctl.master.service.PageCheck check = lastPageCheck;
                    if (check != null) {
                        cb.call(check.buckets().stream().filter(c -> !c.counterMatches()).count());
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_fsck_last_check_timestamp_seconds")
                .help("When the last live page check ended; no series before the first")
                .callback(cb -> {
                    if (lastPageCheckAtMillis > 0) {
                        cb.call(lastPageCheckAtMillis / 1000.0);
                    }
                }).register(registry);
    }

    /** A live page check ended with {@code check} (what is left after its repairs counts as found). */
    void pagesChecked(io.mcctl.master.service.PageCheck check, boolean repair) {
        lastPageCheck = check;
        lastPageCheckAtMillis = System.currentTimeMillis();
        pageChecks.labelValues(Boolean.toString(repair)).inc();
    }

    /** The series of one kind of Session request (REQUEST_NOT_SET: one that carried nothing; null for BUNDLE). */
    SessionKind session(io.mcctl.master.proto.v1.SessionRequest.RequestCase kind) {
        return sessionKinds.get(kind);
    }

    /** Counts and times every call. */
    public ServerInterceptor interceptor() {
        return new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
                String method = call.getMethodDescriptor().getBareMethodName();
                long start = System.nanoTime();
                rpcRequests.labelValues(method).inc();
                ServerCall<Q, R> timed = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
                    @Override
                    public void close(Status status, Metadata trailers) {
                        rpcLatency.labelValues(method).observe((System.nanoTime() - start) / 1e9);
                        if (!status.isOk()) {
                            rpcFailures.labelValues(method, status.getCode().name()).inc();
                        }
                        super.close(status, trailers);
                    }
                };
                return next.startCall(timed, headers);
            }
        };
    }
}
