package io.mcctl.master.server;

import static io.mcctl.master.server.CallOutcomes.orThrow;
import static io.mcctl.master.server.CallOutcomes.reply;

import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.mcctl.master.dram.Promoter;
import io.mcctl.master.durability.Snapshotter;
import io.mcctl.master.proto.v1.BucketPageCounters;
import io.mcctl.master.proto.v1.BucketStats;
import io.mcctl.master.proto.v1.CheckPagesRequest;
import io.mcctl.master.proto.v1.CheckPagesResponse;
import io.mcctl.master.proto.v1.CreateSnapshotRequest;
import io.mcctl.master.proto.v1.CreateSnapshotResponse;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetBucketBitmapRequest;
import io.mcctl.master.proto.v1.GetBucketBitmapResponse;
import io.mcctl.master.proto.v1.GetLayoutRequest;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.master.proto.v1.GetStatsRequest;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.GrowLayoutRequest;
import io.mcctl.master.proto.v1.GrowLayoutResponse;
import io.mcctl.master.proto.v1.PageClaimant;
import io.mcctl.master.proto.v1.PageRun;
import io.mcctl.master.proto.v1.SetTenantQuotaRequest;
import io.mcctl.master.proto.v1.SetTenantQuotaResponse;
import io.mcctl.master.proto.v1.TenantStats;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.master.service.ChangeLog;
import io.mcctl.master.service.PageCheck;
import io.mcctl.master.service.PageService;
import io.mcctl.master.service.eviction.EvictionPolicy;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.layout.LayoutFile;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The operators' RPCs: the layout and its growth, statistics, a bucket's bitmap, snapshots, tenant quotas and the page
 * check. The long ones (snapshot, check, grow) run one at a time on the admin thread, never on a transport thread.
 *
 * <p>Thread-safe: {@code metrics} is volatile; nothing here takes a lock.
 */
final class AdminRpcs {

    /** Most ranges one check lists per kind. */
    static final int MAX_CHECK_RANGES = 100_000;

    private final PageService pages;
    private final LayoutFile.Record layoutRecord;
    private final String fsType;
    private final Snapshotter snapshotter;
    private final LayoutGrowth layoutGrowth;
    private final DurableAnswers answers;
    private final NodeRpcs nodes;
    /** Where page checks are counted; null until {@link MasterServer#intercepted} (tests may run without). */
    private volatile MasterMetrics metrics;

    /** Snapshots are long: they run here, never on a transport thread. */
    private final ExecutorService adminExecutor = Executors.newSingleThreadExecutor(r -> {
        Thread thread = new Thread(r, "mcctl-master-admin");
        thread.setDaemon(true);
        return thread;
    });

    AdminRpcs(PageService pages, LayoutFile.Record layoutRecord, String fsType, Snapshotter snapshotter, LayoutGrowth layoutGrowth,
              DurableAnswers answers, NodeRpcs nodes) {
        this.pages = pages;
        this.layoutRecord = layoutRecord;
        this.fsType = fsType;
        this.snapshotter = snapshotter;
        this.layoutGrowth = layoutGrowth;
        this.answers = answers;
        this.nodes = nodes;
    }

    void useMetrics(MasterMetrics metrics) {
        this.metrics = metrics;
    }

    void getLayout(GetLayoutRequest request, StreamObserver<GetLayoutResponse> observer) {
        reply(observer, GetLayoutResponse.newBuilder()
                .setRootDir(pages.layout().root().toString())
                .setBucketCount(pages.layout().bucketCount())
                .setPageSize(pages.layout().pageSize())
                .setBucketSize(pages.layout().bucketSize())
                .setClusterId(layoutRecord.clusterId())
                .setFormatVersion(layoutRecord.formatVersion())
                .setFsType(fsType)
                .build());
    }

    void growLayout(GrowLayoutRequest request, StreamObserver<GrowLayoutResponse> observer) {
        // Long (it extends every bucket file): never on a transport thread, and one at a time with snapshots and checks.
        adminExecutor.execute(() -> {
            try {
                reply(observer, orThrow(layoutGrowth.grow(request.getBucketSize(), request.getPreallocate())));
            } catch (StatusRuntimeException e) {
                observer.onError(e);
            } catch (ChangeLog.Refused e) {
                observer.onError(WireErrors.changesRefused(e.getMessage()));
            } catch (IOException | RuntimeException e) {
                observer.onError(WireErrors.exception(ErrorCode.INTERNAL_ERROR, "layout grow failed: " + e.getMessage()));
            }
        });
    }

    void getStats(GetStatsRequest request, StreamObserver<GetStatsResponse> observer) {
        PageService.Stats stats = pages.stats();
        GetStatsResponse.Builder response = GetStatsResponse.newBuilder()
                .setMappings(stats.mappings())
                .setInFlightAllocations(stats.inFlight())
                .setQuarantinedPages(stats.quarantinedPages())
                .setPagesAllocated(stats.pagesAllocated())
                .setPagesTotal(stats.pagesTotal())
                .setTenants(stats.tenants());
        if (pages.refusal() != null) {
            response.setChangesRefused(pages.refusal());
        }
        EvictionPolicy eviction = pages.eviction();
        long lookups = 0;
        response.setEviction(eviction.enabled()).setEvictionHighWatermark(eviction.highWatermark())
                .setEvictionLowWatermark(eviction.lowWatermark())
                .setEvictedKeys(pages.evictedTotal())
                .setEvictedBytes(pages.evictedBytesTotal())
                .setEvictionRuns(pages.evictionRunsTotal()).setOldestUseAgeMs(pages.oldestUseAgeMillis())
                .setPageAllocationsTotal(pages.pageAllocationsTotal())
                .setPinnedKeys(pages.pinnedMappingCount()).setPinnedBytes(pages.pinnedBytes())
                .setReservationHeldPages(pages.heldPageCount());
        for (Map.Entry<String, long[]> t : pages.tenantCounters().entrySet()) {
            long[] c = t.getValue();
            lookups += c[2] + c[3];
            response.addTenantStats(TenantStats.newBuilder().setTenantId(t.getKey()).setKeys(c[0]).setBytes(c[1])
                    .setHits(c[2]).setMisses(c[3]).setEvictedKeys(c[4]).setEvictedBytes(c[5]).setQuotaBytes(c[6]));
        }
        response.setLookupsTotal(lookups);
        ClientRegistry registry = nodes.registryOrNull();
        Promoter promoting = nodes.promoterOrNull();
        if (registry != null && promoting != null) {
            long[] live = registry.liveTotals();
            long[] inDram = promoting.memoryTotals();
            response.setNodesAlive(live[0]).setMemorySegmentBytes(live[1]).setMemoryObjects(inDram[0]).setMemoryBytes(inDram[1])
                    .setMemoryEvicted(promoting.memoryEvictedTotal());
        }
        response.setPromotionTasks(pages.promotions().count()).setPromotionsSucceeded(pages.promotions().succeededTotal())
                .setPromotionsFailed(pages.promotions().failedTotal());
        for (int b = 0; b < pages.layout().bucketCount(); b++) {
            long allocated = pages.allocator(b).allocatedCount();
            response.addBuckets(BucketStats.newBuilder().setBucket(b).setPagesAllocated(allocated)
                    .setPagesFree(pages.allocator(b).pageCount() - allocated)
                    .setLargestFreeRun(pages.allocator(b).largestFreeRun()).setFileState(BucketFileWatch.wireState(pages.bucketHealth(b))));
        }
        reply(observer, response.build());
    }

    void getBucketBitmap(GetBucketBitmapRequest request, StreamObserver<GetBucketBitmapResponse> observer) {
        int bucket = request.getBucket();
        if (bucket < 0 || bucket >= pages.layout().bucketCount()) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "bucket " + bucket + " is outside 0.." + (pages.layout().bucketCount() - 1));
        }
        BitmapPageAllocator allocator = pages.allocator(bucket);
        GetBucketBitmapResponse.Builder response = GetBucketBitmapResponse.newBuilder().setBucket(bucket)
                .setPageCount(allocator.pageCount()).setAllocated(allocator.allocatedCount()).setHint(allocator.hint());
        for (long word : allocator.bitmapWords()) {
            response.addWords(word);
        }
        reply(observer, response.build());
    }

    void createSnapshot(CreateSnapshotRequest request, StreamObserver<CreateSnapshotResponse> observer) {
        adminExecutor.execute(() -> {
            try {
                Snapshotter.Taken taken = snapshotter.take();
                reply(observer, CreateSnapshotResponse.newBuilder().setPath(taken.path().toString()).setWalSequence(taken.walSequence())
                        .setMappings(taken.mappings()).setInFlight(taken.inFlight()).setQuarantinedRanges(taken.quarantined())
                        .setBytes(taken.bytes()).setMillis(taken.millis()).build());
            } catch (IOException | RuntimeException e) {
                observer.onError(WireErrors.exception(ErrorCode.INTERNAL_ERROR, "snapshot failed: " + e.getMessage()));
            }
        });
    }

    void setTenantQuota(SetTenantQuotaRequest request, StreamObserver<SetTenantQuotaResponse> observer) {
        long previous = orThrow(pages.setQuota(request.getTenantId(), request.getMaxBytes()));
        answers.replyWhenDurable(observer, SetTenantQuotaResponse.newBuilder().setPreviousMaxBytes(previous)
                .setUsedBytes(pages.usedBytes(request.getTenantId())).build());
    }

    void checkPages(CheckPagesRequest request, StreamObserver<CheckPagesResponse> observer) {
        int maxRanges = request.getMaxRanges() == 0 ? 1000 : request.getMaxRanges();
        if (maxRanges < 1 || maxRanges > MAX_CHECK_RANGES) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "max_ranges " + request.getMaxRanges() + " is outside 1.." + MAX_CHECK_RANGES
                    + " (0 means 1000)");
        }
        long minAgeMs = request.getMinAgeMs() < 0 ? pages.allocationDeadlineMillis() : request.getMinAgeMs();
        // Long (a pass over every mapping): never on a transport thread, and one at a time with snapshots.
        adminExecutor.execute(() -> {
            try {
                PageCheck check = pages.checkPages(TimeUnit.MILLISECONDS.toNanos(minAgeMs), request.getRepair(), maxRanges);
                MasterMetrics watching = metrics;
                if (watching != null) {
                    watching.pagesChecked(check, request.getRepair());
                }
                CheckPagesResponse.Builder response = CheckPagesResponse.newBuilder()
                        .setMappings(check.mappings()).setInFlight(check.inFlight()).setQuarantinedRanges(check.quarantinedRanges())
                        .setLeakedPages(check.leakedPages()).setYoungPages(check.youngPages()).setFalseFreePages(check.falseFreePages())
                        .setOverlapPages(check.overlapPages()).setRepairedLeakedPages(check.repairedLeakedPages())
                        .setRepairedFalseFreePages(check.repairedFalseFreePages()).setLongestHoldMicros(check.longestHoldNanos() / 1000)
                        .setUnsettledPages(check.unsettledPages())
                        .setMinAgeMs(minAgeMs).setStateDir(snapshotter == null ? "" : snapshotter.stateDir().toString())
                        .setPageSize(pages.layout().pageSize());
                check.leaked().forEach(run -> response.addLeaked(toWire(run)));
                check.young().forEach(run -> response.addYoung(toWire(run)));
                check.falseFree().forEach(run -> response.addFalseFree(toWire(run)));
                check.overlaps().forEach(run -> response.addOverlaps(toWire(run)));
                for (PageCheck.BucketCounters c : check.buckets()) {
                    response.addBuckets(BucketPageCounters.newBuilder().setBucket(c.bucket()).setAllocatedCounter(c.allocatedCounter())
                            .setAllocatedPopcount(c.allocatedPopcount()).setClaimedPages(c.claimedPages()).setClaimedEndBytes(c.claimedEndBytes()));
                }
                reply(observer, response.build());
            } catch (RuntimeException e) {
                observer.onError(WireErrors.exception(ErrorCode.INTERNAL_ERROR, "page check failed: " + e.getMessage()));
            }
        });
    }

    private static PageRun toWire(PageCheck.PageRun run) {
        PageRun.Builder out = PageRun.newBuilder().setBucket(run.bucket()).setFirstPage(run.firstPage()).setPages(run.pages()).setRepaired(run.repaired());
        for (PageCheck.Claimant c : run.claimants()) {
            out.addClaimants(PageClaimant.newBuilder().setKind(c.kind()).setTenantId(c.tenant()).setKey(c.key()));
        }
        return out.build();
    }
}
