package io.mcctl.tools.snapshot;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.io.Writer;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A snapshot's whole state as JSON Lines: first a {@code "type":"meta"} line, then one line per record,
 * {@code "type"} being {@code mapping}, {@code in_flight} or {@code quarantine}, in file order. Every
 * checksum is checked before the first line is written, so a corrupt snapshot prints nothing; records
 * stream, so a snapshot of any size exports in constant memory.
 */
public final class StateExport {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** Lines written, by type. */
    public record Counts(long mappings, long inFlight, long quarantine) {
        public long lines() {
            return 1 + mappings + inFlight + quarantine;
        }
    }

    private StateExport() {
    }

    public static Counts export(Path snapshot, Writer out) throws IOException {
        SnapshotFile.Reader reader = SnapshotFile.open(snapshot);
        BucketLayout layout = SnapshotRecords.layout(reader);
        SnapshotRecords.checkChecksums(reader);
        Map<String, Object> meta = new LinkedHashMap<>();
        meta.put("type", "meta");
        meta.put("path", snapshot.toString());
        meta.putAll(SnapshotInspector.metaJson(reader.meta(), layout));
        line(out, meta);
        long[] counts = new long[3];
        SnapshotRecords.readStrict(reader, new SnapshotRecords.Visitor() {
            @Override
            public void mapping(MappingRecord m, long offset) throws IOException {
                Map<String, Object> row = keyed("mapping", m.getTenantId(), m.getKey(), m.getPlacement(), layout);
                row.put("crc32c", Formats.hex(m.getPlacement().getCrc32C()));
                line(out, row);
                counts[0]++;
            }

            @Override
            public void pending(PendingRecord p, long offset) throws IOException {
                Map<String, Object> row = keyed("in_flight", p.getTenantId(), p.getKey(), p.getPlacement(), layout);
                row.put("deadline", Formats.iso(p.getDeadlineMs()));
                row.put("deadline_ms", p.getDeadlineMs());
                row.put("overwrite", p.getOverwrite());
                line(out, row);
                counts[1]++;
            }

            @Override
            public void quarantine(QuarantineRecord q, long offset) throws IOException {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("type", "quarantine");
                row.put("bucket", q.getBucket());
                row.put("first_page", q.getFirstPage());
                row.put("pages", q.getPages());
                row.put("offset", q.getFirstPage() * layout.pageSize());
                row.put("size", q.getPages() * layout.pageSize());
                row.put("release", Formats.iso(q.getReleaseMs()));
                row.put("release_ms", q.getReleaseMs());
                line(out, row);
                counts[2]++;
            }
        });
        out.flush();
        return new Counts(counts[0], counts[1], counts[2]);
    }

    private static Map<String, Object> keyed(String type, String tenant, String key, PlacementRecord p, BucketLayout layout) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("type", type);
        row.put("tenant", tenant);
        row.put("key", key);
        row.put("bucket", p.getBucket());
        row.put("offset", p.getOffset());
        row.put("size", p.getSize());
        row.put("pages", p.getSize() <= 0 ? 0 : layout.pagesFor(p.getSize()));
        return row;
    }

    private static void line(Writer out, Map<String, Object> row) throws IOException {
        out.write(JSON.writeValueAsString(row));
        out.write('\n');
    }
}
