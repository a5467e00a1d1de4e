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
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What changed between two snapshots: keys added, removed, moved (same tenant and key, another place:
 * bucket, offset or size) and rewritten in place (same place, another checksum), and pages used per
 * bucket before and after. Both snapshots are read in full and must read cleanly.
 */
public final class SnapshotDiff {

    /** One side of the comparison. */
    public record Side(Path path, SnapshotMeta meta, long mappings, long inFlight, long quarantinedRanges, long[] pagesPerBucket) {
        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("path", path.toString());
            out.put("wal_sequence", meta.getWalSequence());
            out.put("created", Formats.iso(meta.getCreatedMs()));
            out.put("created_ms", meta.getCreatedMs());
            out.put("mappings", mappings);
            out.put("in_flight", inFlight);
            out.put("quarantined_ranges", quarantinedRanges);
            return out;
        }
    }

    /** A key on one side only, or on both in different places; {@code before} or {@code after} is null for added or removed. */
    public record Change(String tenant, String key, PlacementRecord before, PlacementRecord after) {
        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("tenant", tenant);
            out.put("key", key);
            if (before != null) {
                out.put("before", placementJson(before));
            }
            if (after != null) {
                out.put("after", placementJson(after));
            }
            return out;
        }
    }

    /** One bucket whose pages in use differ. */
    public record BucketChange(int bucket, long before, long after) {
    }

    /** The comparison. Lists are sorted by tenant, then key. */
    public record Report(Side a, Side b, List<Change> added, List<Change> removed, List<Change> moved, List<Change> rewritten, long unchanged) {

        public List<BucketChange> changedBuckets() {
            List<BucketChange> out = new ArrayList<>();
            int buckets = Math.max(a.pagesPerBucket().length, b.pagesPerBucket().length);
            for (int bucket = 0; bucket < buckets; bucket++) {
                long before = bucket < a.pagesPerBucket().length ? a.pagesPerBucket()[bucket] : 0;
                long after = bucket < b.pagesPerBucket().length ? b.pagesPerBucket()[bucket] : 0;
                if (before != after) {
                    out.add(new BucketChange(bucket, before, after));
                }
            }
            return out;
        }

        public boolean same() {
            return added.isEmpty() && removed.isEmpty() && moved.isEmpty() && rewritten.isEmpty() && changedBuckets().isEmpty();
        }

        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("a", a.json());
            out.put("b", b.json());
            Map<String, Object> counts = new LinkedHashMap<>();
            counts.put("added", added.size());
            counts.put("removed", removed.size());
            counts.put("moved", moved.size());
            counts.put("rewritten", rewritten.size());
            counts.put("unchanged", unchanged);
            out.put("counts", counts);
            out.put("added", added.stream().map(Change::json).toList());
            out.put("removed", removed.stream().map(Change::json).toList());
            out.put("moved", moved.stream().map(Change::json).toList());
            out.put("rewritten", rewritten.stream().map(Change::json).toList());
            Map<String, Object> pages = new LinkedHashMap<>();
            pages.put("before", a.pagesPerBucket());
            pages.put("after", b.pagesPerBucket());
            out.put("pages_per_bucket", pages);
            return out;
        }
    }

    private SnapshotDiff() {
    }

    public static Report diff(Path a, Path b) throws IOException {
        Map<String, MappingRecord> before = new HashMap<>();
        Side sideA = load(a, before);
        Map<String, MappingRecord> after = new HashMap<>();
        Side sideB = load(b, after);
        TreeMap<String, Change> added = new TreeMap<>();
        TreeMap<String, Change> removed = new TreeMap<>();
        TreeMap<String, Change> moved = new TreeMap<>();
        TreeMap<String, Change> rewritten = new TreeMap<>();
        long unchanged = 0;
        for (Map.Entry<String, MappingRecord> e : before.entrySet()) {
            MappingRecord old = e.getValue();
            MappingRecord now = after.get(e.getKey());
            if (now == null) {
                removed.put(e.getKey(), new Change(old.getTenantId(), old.getKey(), old.getPlacement(), null));
            } else if (!sameRange(old.getPlacement(), now.getPlacement())) {
                moved.put(e.getKey(), new Change(old.getTenantId(), old.getKey(), old.getPlacement(), now.getPlacement()));
            } else if (old.getPlacement().getCrc32C() != now.getPlacement().getCrc32C()) {
                rewritten.put(e.getKey(), new Change(old.getTenantId(), old.getKey(), old.getPlacement(), now.getPlacement()));
            } else {
                unchanged++;
            }
        }
        for (Map.Entry<String, MappingRecord> e : after.entrySet()) {
            if (!before.containsKey(e.getKey())) {
                MappingRecord now = e.getValue();
                added.put(e.getKey(), new Change(now.getTenantId(), now.getKey(), null, now.getPlacement()));
            }
        }
        return new Report(sideA, sideB, List.copyOf(added.values()), List.copyOf(removed.values()), List.copyOf(moved.values()),
                List.copyOf(rewritten.values()), unchanged);
    }

    private static Side load(Path file, Map<String, MappingRecord> mappings) throws IOException {
        SnapshotFile.Reader reader = SnapshotFile.open(file);
        BucketLayout layout = SnapshotRecords.layout(reader);
        long[] pages = new long[layout.bucketCount()];
        long[] counts = new long[3];
        SnapshotRecords.readStrict(reader, new SnapshotRecords.Visitor() {
            @Override
            public void mapping(MappingRecord m, long offset) {
                counts[0]++;
                mappings.put(m.getTenantId() + '\0' + m.getKey(), m);
                count(m.getPlacement());
            }

            @Override
            public void pending(PendingRecord p, long offset) {
                counts[1]++;
                count(p.getPlacement());
            }

            @Override
            public void quarantine(QuarantineRecord q, long offset) {
                counts[2]++;
                if (q.getBucket() >= 0 && q.getBucket() < pages.length) {
                    pages[q.getBucket()] += Math.max(0, q.getPages());
                }
            }

            private void count(PlacementRecord p) {
                if (p.getBucket() >= 0 && p.getBucket() < pages.length && p.getSize() > 0) {
                    pages[p.getBucket()] += layout.pagesFor(p.getSize());
                }
            }
        });
        return new Side(file, reader.meta(), counts[0], counts[1], counts[2], pages);
    }

    static boolean sameRange(PlacementRecord a, PlacementRecord b) {
        return a.getBucket() == b.getBucket() && a.getOffset() == b.getOffset() && a.getSize() == b.getSize();
    }

    /** A placement as reports print it. */
    public static Map<String, Object> placementJson(PlacementRecord p) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("bucket", p.getBucket());
        out.put("offset", p.getOffset());
        out.put("size", p.getSize());
        out.put("crc32c", Formats.hex(p.getCrc32C()));
        return out;
    }
}
