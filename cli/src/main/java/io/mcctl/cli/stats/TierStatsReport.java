package io.mcctl.cli.stats;

import io.mcctl.master.proto.v1.BucketFileState;
import io.mcctl.master.proto.v1.BucketStats;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.TenantStats;
import io.mcctl.storage.layout.SpaceBacking;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The tier's state from one GetStats answer, as {@code mcctl stats} and {@code mcctl top} show it: the JSON report
 * with its stable field names, and the lines people read.
 */
public final class TierStatsReport {

    private final GetStatsResponse stats;
    private final long pageSize;

    public TierStatsReport(GetStatsResponse stats, long pageSize) {
        this.stats = stats;
        this.pageSize = pageSize;
    }

    public GetStatsResponse stats() {
        return stats;
    }

    /** Hits over lookups, or null when there were none (a ratio of nothing is not 0). */
    public static Double hitRatio(long hits, long misses) {
        return hits + misses == 0 ? null : (double) hits / (hits + misses);
    }

    public long hits() {
        return stats.getTenantStatsList().stream().mapToLong(TenantStats::getHits).sum();
    }

    public long misses() {
        return stats.getTenantStatsList().stream().mapToLong(TenantStats::getMisses).sum();
    }

    /** Tenants biggest first: by bytes, then keys, then name. */
    public List<TenantStats> tenantsBiggestFirst() {
        List<TenantStats> tenants = new ArrayList<>(stats.getTenantStatsList());
        tenants.sort(Comparator.comparingLong(TenantStats::getBytes).reversed()
                .thenComparing(Comparator.comparingLong(TenantStats::getKeys).reversed())
                .thenComparing(TenantStats::getTenantId));
        return tenants;
    }

    /** Share of a bucket's pages allocated (mappings, in flight and quarantine), 0..1. */
    public static double usedShare(BucketStats bucket) {
        long pages = bucket.getPagesAllocated() + bucket.getPagesFree();
        return pages == 0 ? 0 : (double) bucket.getPagesAllocated() / pages;
    }

    public double usedShare() {
        return stats.getPagesTotal() == 0 ? 0 : (double) stats.getPagesAllocated() / stats.getPagesTotal();
    }

    /** The {@code -o json} report of {@code mcctl stats}. */
    public Map<String, Object> json() {
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("page_size", pageSize);
        report.put("pages_allocated", stats.getPagesAllocated());
        report.put("pages_total", stats.getPagesTotal());
        report.put("used_share", usedShare());
        report.put("bytes_allocated", stats.getPagesAllocated() * pageSize);
        report.put("bytes_total", stats.getPagesTotal() * pageSize);
        report.put("in_flight_allocations", stats.getInFlightAllocations());
        report.put("quarantined_pages", stats.getQuarantinedPages());
        report.put("mappings", stats.getMappings());
        report.put("tenants", stats.getTenants());
        report.put("changes_refused", stats.getChangesRefused().isEmpty() ? null : stats.getChangesRefused());
        Map<String, Object> eviction = new LinkedHashMap<>();
        eviction.put("enabled", stats.getEviction());
        eviction.put("high_watermark", stats.getEvictionHighWatermark());
        eviction.put("low_watermark", stats.getEvictionLowWatermark());
        eviction.put("evicted_keys", stats.getEvictedKeys());
        eviction.put("evicted_bytes", stats.getEvictedBytes());
        eviction.put("runs", stats.getEvictionRuns());
        report.put("eviction", eviction);
        report.put("oldest_use_age_ms", stats.getOldestUseAgeMs());
        report.put("lookups_total", stats.getLookupsTotal());
        report.put("hits", hits());
        report.put("misses", misses());
        report.put("hit_ratio", hitRatio(hits(), misses()));
        report.put("page_allocations_total", stats.getPageAllocationsTotal());
        Map<String, Object> dram = new LinkedHashMap<>();
        dram.put("nodes_alive", stats.getNodesAlive());
        dram.put("segment_bytes", stats.getMemorySegmentBytes());
        dram.put("objects", stats.getMemoryObjects());
        dram.put("bytes", stats.getMemoryBytes());
        dram.put("evicted", stats.getMemoryEvicted());
        dram.put("promotion_tasks", stats.getPromotionTasks());
        dram.put("promotions_succeeded", stats.getPromotionsSucceeded());
        dram.put("promotions_failed", stats.getPromotionsFailed());
        report.put("dram", dram);
        List<Map<String, Object>> tenants = new ArrayList<>();
        for (TenantStats t : tenantsBiggestFirst()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("tenant", t.getTenantId());
            row.put("keys", t.getKeys());
            row.put("bytes", t.getBytes());
            row.put("hits", t.getHits());
            row.put("misses", t.getMisses());
            row.put("hit_ratio", hitRatio(t.getHits(), t.getMisses()));
            row.put("evicted_keys", t.getEvictedKeys());
            row.put("evicted_bytes", t.getEvictedBytes());
            tenants.add(row);
        }
        report.put("tenant_stats", tenants);
        List<Map<String, Object>> buckets = new ArrayList<>();
        for (BucketStats b : stats.getBucketsList()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("bucket", b.getBucket());
            row.put("pages_allocated", b.getPagesAllocated());
            row.put("pages_free", b.getPagesFree());
            row.put("largest_free_run", b.getLargestFreeRun());
            row.put("file_state", fileState(b));
            buckets.add(row);
        }
        report.put("buckets", buckets);
        Map<String, Object> files = new LinkedHashMap<>();
        for (BucketFileState state : FILE_STATES) {
            files.put(fileState(state), stats.getBucketsList().stream().filter(b -> b.getFileState() == state).count());
        }
        report.put("bucket_files", files);
        return report;
    }

    /** The summary lines, without the tenant table: "label  value" pairs people read top to bottom. */
    public List<String[]> summary() {
        List<String[]> lines = new ArrayList<>();
        if (!stats.getChangesRefused().isEmpty()) {
            lines.add(new String[] {"CHANGES REFUSED", stats.getChangesRefused()});
        }
        String unusable = unusableBuckets();
        if (unusable != null) {
            lines.add(new String[] {"BUCKET FILES", unusable});
        }
        lines.add(new String[] {"pages", String.format(Locale.ROOT, "%d / %d used (%s), %s of %s; %d in flight, %d quarantined",
                stats.getPagesAllocated(), stats.getPagesTotal(), percent(usedShare()), SpaceBacking.bytes(stats.getPagesAllocated() * pageSize),
                SpaceBacking.bytes(stats.getPagesTotal() * pageSize), stats.getInFlightAllocations(), stats.getQuarantinedPages())});
        lines.add(new String[] {"buckets", bucketSpread()});
        if (unusable == null && stats.getBucketsCount() > 0) {
            lines.add(new String[] {"bucket files", "all " + stats.getBucketsCount() + " healthy"});
        }
        lines.add(new String[] {"mappings", stats.getMappings() + " in " + stats.getTenants() + (stats.getTenants() == 1 ? " tenant" : " tenants")});
        lines.add(new String[] {"eviction", eviction()});
        lines.add(new String[] {"oldest use", stats.getMappings() == 0 ? "-" : age(stats.getOldestUseAgeMs()) + " ago (least recently used object, sampled)"});
        lines.add(new String[] {"lookups", String.format(Locale.ROOT, "%d: %d hits, %d misses, hit ratio %s", stats.getLookupsTotal(), hits(),
                misses(), percent(hitRatio(hits(), misses())))});
        lines.add(new String[] {"allocations", stats.getPageAllocationsTotal() + " pages since start"});
        lines.add(new String[] {"dram", stats.getMemorySegmentBytes() == 0 && stats.getPromotionTasks() == 0 && stats.getPromotionsSucceeded() == 0
                ? stats.getNodesAlive() + " nodes alive, none with a DRAM segment"
                : String.format(Locale.ROOT, "%d objects (%s) in %s of segments on %d live nodes; %d evicted; promotion: %d tasks, %d succeeded, "
                        + "%d failed since start", stats.getMemoryObjects(), SpaceBacking.bytes(stats.getMemoryBytes()),
                        SpaceBacking.bytes(stats.getMemorySegmentBytes()), stats.getNodesAlive(), stats.getMemoryEvicted(),
                        stats.getPromotionTasks(), stats.getPromotionsSucceeded(), stats.getPromotionsFailed())});
        return lines;
    }

    /** The bucket file states GetStats sends, in order (not the UNRECOGNIZED a newer master's value reads as). */
    private static final List<BucketFileState> FILE_STATES = List.of(BucketFileState.BUCKET_FILE_HEALTHY,
            BucketFileState.BUCKET_FILE_MISSING, BucketFileState.BUCKET_FILE_REPLACED);

    /** "healthy", "missing", "replaced", or the number a newer master sent. */
    public static String fileState(BucketFileState state) {
        return state == BucketFileState.UNRECOGNIZED ? "unknown" : state.name().substring("BUCKET_FILE_".length()).toLowerCase(Locale.ROOT);
    }

    private static String fileState(BucketStats bucket) {
        return bucket.getFileState() == BucketFileState.UNRECOGNIZED ? "state " + bucket.getFileStateValue() : fileState(bucket.getFileState());
    }

    /** The buckets that take no allocations because of their files, or null when there is none. */
    private String unusableBuckets() {
        List<String> named = new ArrayList<>();
        for (BucketStats b : stats.getBucketsList()) {
            if (b.getFileState() != BucketFileState.BUCKET_FILE_HEALTHY) {
                named.add("bucket " + b.getBucket() + " " + fileState(b));
            }
        }
        if (named.isEmpty()) {
            return null;
        }
        return named.size() + " of " + stats.getBucketsCount() + " take no allocations (their files are missing or replaced): "
                + String.join(", ", named.size() > 8 ? named.subList(0, 8) : named) + (named.size() > 8 ? ", ..." : "")
                + "; see docs/operator-guide.md, \"Bucket file health\"";
    }

    private String eviction() {
        String totals = String.format(Locale.ROOT, "%d objects (%s) evicted in %d runs", stats.getEvictedKeys(),
                SpaceBacking.bytes(stats.getEvictedBytes()), stats.getEvictionRuns());
        if (!stats.getEviction()) {
            return "off: a full tier refuses allocations; " + totals;
        }
        return "on: starts above " + percent(stats.getEvictionHighWatermark()) + " used, stops at " + percent(stats.getEvictionLowWatermark())
                + "; " + totals;
    }

    private String bucketSpread() {
        if (stats.getBucketsCount() == 0) {
            return "-";
        }
        BucketStats fullest = stats.getBuckets(0);
        BucketStats emptiest = stats.getBuckets(0);
        for (BucketStats b : stats.getBucketsList()) {
            if (usedShare(b) > usedShare(fullest)) {
                fullest = b;
            }
            if (usedShare(b) < usedShare(emptiest)) {
                emptiest = b;
            }
        }
        return String.format(Locale.ROOT, "%d: fullest %s (bucket %d), emptiest %s (bucket %d)", stats.getBucketsCount(),
                percent(usedShare(fullest)), fullest.getBucket(), percent(usedShare(emptiest)), emptiest.getBucket());
    }

    /** The tenant table, biggest first, at most {@code limit} rows (0: all), then how many smaller ones were left out. */
    public String tenantTable(int limit) {
        io.mcctl.cli.Table table = new io.mcctl.cli.Table(TENANT_HEADER);
        List<TenantStats> tenants = tenantsBiggestFirst();
        int shown = limit > 0 ? Math.min(limit, tenants.size()) : tenants.size();
        for (TenantStats t : tenants.subList(0, shown)) {
            table.row(t.getTenantId(), t.getKeys(), SpaceBacking.bytes(t.getBytes()), t.getHits(), t.getMisses(),
                    percent(hitRatio(t.getHits(), t.getMisses())), t.getEvictedKeys());
        }
        String text = table.render();
        return shown < tenants.size() ? text + "... and " + (tenants.size() - shown) + " smaller tenants" + System.lineSeparator() : text;
    }

    static final String[] TENANT_HEADER = {"TENANT", "KEYS", "BYTES", "HITS", "MISSES", "HIT RATIO", "EVICTED"};

    /** 0.123 -> "12.3%"; null -> "-". */
    public static String percent(Double share) {
        return share == null ? "-" : String.format(Locale.ROOT, "%.1f%%", share * 100);
    }

    /** Milliseconds for people: 850 ms, 4.2 s, 3.5 min, 2.0 h, 1.5 d. */
    public static String age(long millis) {
        if (millis < 1000) {
            return millis + " ms";
        }
        double seconds = millis / 1000.0;
        if (seconds < 60) {
            return String.format(Locale.ROOT, "%.1f s", seconds);
        }
        if (seconds < 3600) {
            return String.format(Locale.ROOT, "%.1f min", seconds / 60);
        }
        if (seconds < 86400) {
            return String.format(Locale.ROOT, "%.1f h", seconds / 3600);
        }
        return String.format(Locale.ROOT, "%.1f d", seconds / 86400);
    }
}
