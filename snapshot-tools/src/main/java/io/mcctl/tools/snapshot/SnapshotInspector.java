package io.mcctl.tools.snapshot;

import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What a snapshot holds: header, meta record, section index with each checksum checked, counters, pages
 * used per bucket and, when asked, its mappings. A snapshot that does not open (bad magic, cut short,
 * unknown version) throws {@link io.mcctl.master.durability.CorruptStateException}; a section that fails
 * is reported in {@link Report#problems()} with what could be read before it.
 */
public final class SnapshotInspector {

    /** Which mappings to list: none, or those of a tenant (null: all) whose key starts with a prefix, at most {@code limit} (0: all). */
    public record KeyFilter(boolean list, String tenant, String prefix, long limit) {
        public static final KeyFilter NONE = new KeyFilter(false, null, "", 0);

        boolean matches(String recordTenant, String key) {
            return list && (tenant == null || tenant.equals(recordTenant)) && key.startsWith(prefix == null ? "" : prefix);
        }
    }

    /** One mapping in a listing. */
    public record KeyEntry(String tenant, String key, int bucket, long offset, long size, long pages, int crc32c) {
        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("tenant", tenant);
            out.put("key", key);
            out.put("bucket", bucket);
            out.put("offset", offset);
            out.put("size", size);
            out.put("pages", pages);
            out.put("crc32c", Formats.hex(crc32c));
            return out;
        }

        static KeyEntry of(String tenant, String key, PlacementRecord p, BucketLayout layout) {
            return new KeyEntry(tenant, key, p.getBucket(), p.getOffset(), p.getSize(), p.getSize() <= 0 ? 0 : layout.pagesFor(p.getSize()),
                    p.getCrc32C());
        }
    }

    /** Record counts and page use. {@code pagesUsed} sums every record's pages, so it counts overlapping pages twice. */
    public record Counters(long mappings, long inFlight, long quarantinedRanges, long quarantinedPages, long tenants, long pagesUsed,
                           long pagesTotal) {
        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("mappings", mappings);
            out.put("in_flight", inFlight);
            out.put("quarantined_ranges", quarantinedRanges);
            out.put("quarantined_pages", quarantinedPages);
            out.put("tenants", tenants);
            out.put("pages_used", pagesUsed);
            out.put("pages_total", pagesTotal);
            return out;
        }
    }

    /** What {@link #inspect} found. {@code keys} is null unless listed; {@code keysMatching} counts every match before the limit. */
    public record Report(Path path, int formatVersion, SnapshotMeta meta, BucketLayout layout, List<SnapshotRecords.SectionStatus> sections,
                         Counters counters, long[] pagesPerBucket, List<KeyEntry> keys, long keysMatching, List<Problem> problems) {

        public boolean ok() {
            return problems.isEmpty();
        }

        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("path", path.toString());
            out.put("format_version", formatVersion);
            out.put("meta", metaJson(meta, layout));
            List<Map<String, Object>> sectionRows = new ArrayList<>();
            for (SnapshotRecords.SectionStatus s : sections) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("type", s.info().section().name());
                row.put("offset", s.info().offset());
                row.put("bytes", s.info().length());
                row.put("records", s.info().records());
                row.put("crc32c", Formats.hex(s.info().crc32c()));
                row.put("crc_ok", s.crcOk());
                sectionRows.add(row);
            }
            out.put("sections", sectionRows);
            out.put("counters", counters.json());
            out.put("pages_per_bucket", pagesPerBucket);
            if (keys != null) {
                out.put("keys_matching", keysMatching);
                out.put("keys", keys.stream().map(KeyEntry::json).toList());
            }
            out.put("problems", problems.stream().map(Problem::json).toList());
            return out;
        }
    }

    private SnapshotInspector() {
    }

    public static Report inspect(Path file, KeyFilter filter) throws IOException {
        SnapshotFile.Reader reader = SnapshotFile.open(file);
        BucketLayout layout = SnapshotRecords.layout(reader);
        List<SnapshotRecords.SectionStatus> sections = SnapshotRecords.sectionStatus(reader);
        long[] pagesPerBucket = new long[layout.bucketCount()];
        long[] counts = new long[4]; // mappings, in flight, quarantined ranges, quarantined pages
        Set<String> tenants = new HashSet<>();
        // Sorted by tenant, then key; capped at the limit while reading, so a large snapshot lists in bounded memory.
        TreeMap<String, KeyEntry> keys = new TreeMap<>();
        long[] matching = {0};
        List<Problem> problems = new ArrayList<>(SnapshotRecords.readAll(reader, new SnapshotRecords.Visitor() {
            @Override
            public void mapping(MappingRecord m, long offset) {
                counts[0]++;
                tenants.add(m.getTenantId());
                count(m.getPlacement());
                if (filter.matches(m.getTenantId(), m.getKey())) {
                    matching[0]++;
                    keys.put(m.getTenantId() + '\0' + m.getKey(), KeyEntry.of(m.getTenantId(), m.getKey(), m.getPlacement(), layout));
                    if (filter.limit() > 0 && keys.size() > filter.limit()) {
                        keys.pollLastEntry();
                    }
                }
            }

            @Override
            public void pending(PendingRecord p, long offset) {
                counts[1]++;
                tenants.add(p.getTenantId());
                count(p.getPlacement());
            }

            @Override
            public void quarantine(QuarantineRecord q, long offset) {
                counts[2]++;
                counts[3] += Math.max(0, q.getPages());
                if (q.getBucket() >= 0 && q.getBucket() < pagesPerBucket.length) {
                    pagesPerBucket[q.getBucket()] += Math.max(0, q.getPages());
                }
            }

            private void count(PlacementRecord p) {
                if (p.getBucket() >= 0 && p.getBucket() < pagesPerBucket.length && p.getSize() > 0) {
                    pagesPerBucket[p.getBucket()] += layout.pagesFor(p.getSize());
                }
            }
        }));
        long used = 0;
        for (long pages : pagesPerBucket) {
            used += pages;
        }
        Counters counters = new Counters(counts[0], counts[1], counts[2], counts[3], tenants.size(), used,
                layout.pagesPerBucket() * layout.bucketCount());
        List<KeyEntry> listed = filter.list() ? new ArrayList<>(keys.values()) : null;
        if (listed != null) {
            listed.sort(Comparator.comparing(KeyEntry::tenant).thenComparing(KeyEntry::key));
        }
        return new Report(file, reader.formatVersion(), reader.meta(), layout, sections, counters, pagesPerBucket, listed, matching[0], problems);
    }

    /** The meta record with the layout it describes, as reports print it. */
    public static Map<String, Object> metaJson(SnapshotMeta meta, BucketLayout layout) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("format_version", meta.getFormatVersion());
        out.put("cluster_id", meta.getClusterId());
        out.put("root_dir", meta.getRootDir());
        out.put("bucket_count", meta.getBucketCount());
        out.put("page_size", meta.getPageSize());
        out.put("bucket_size", meta.getBucketSize());
        out.put("pages_per_bucket", layout == null ? null : layout.pagesPerBucket());
        out.put("wal_sequence", meta.getWalSequence());
        out.put("created", Formats.iso(meta.getCreatedMs()));
        out.put("created_ms", meta.getCreatedMs());
        out.put("mappings", meta.getMappings());
        out.put("in_flight", meta.getInFlight());
        out.put("quarantined_ranges", meta.getQuarantinedRanges());
        out.put("reservations", meta.getReservationsCount());
        out.put("settings", new TreeMap<>(meta.getSettingsMap()));
        return out;
    }
}
