package io.mcctl.tools.snapshot;

import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.StateFileException;
import io.mcctl.master.durability.WalReader;
import io.mcctl.master.durability.WalSegmentHeader;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.proto.v1.Allocated;
import io.mcctl.master.proto.v1.Committed;
import io.mcctl.master.proto.v1.PendingDropped;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.Released;
import io.mcctl.master.proto.v1.Removed;
import io.mcctl.master.proto.v1.WalRecord;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Optional;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The write-ahead log of a state directory, decoded record by record through {@link WalReader} (never
 * repairing: the directory does not change). Records already deleted with the segments a snapshot
 * covered cannot be read; the dump starts at the oldest record still there.
 */
public final class WalDump {

    /** Receives records in sequence order. */
    @FunctionalInterface
    public interface Sink {
        void record(WalRecord record, Path file, long offset) throws IOException;
    }

    /**
     * How the dump ended.
     *
     * @param oldestAvailable the first sequence the log still holds (0 when it has no segment)
     * @param corruption      where reading stopped on a record that is not a torn tail, or null
     */
    public record Result(int segments, long oldestAvailable, long records, long lastSequence, Path tornFile, long tornOffset,
                         StateFileException corruption) {
        public boolean torn() {
            return tornFile != null;
        }

        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("type", "end");
            out.put("segments", segments);
            out.put("oldest_available", segments == 0 ? null : oldestAvailable);
            out.put("records", records);
            out.put("last_sequence", records == 0 ? null : lastSequence);
            out.put("torn", tornFile != null);
            out.put("torn_file", tornFile == null ? null : tornFile.toString());
            out.put("torn_offset", tornFile == null ? null : tornOffset);
            out.put("error", corruption == null ? null : Problem.of(corruption).json());
            return out;
        }
    }

    private WalDump() {
    }

    /** Sends every record with a sequence of at least {@code fromSequence} to {@code sink}. */
    public static Result dump(Path dir, long fromSequence, Sink sink) throws IOException {
        List<WalSegments.Segment> segments = WalSegments.list(dir);
        if (segments.isEmpty()) {
            return new Result(0, 0, 0, 0, null, -1, null);
        }
        long oldest = segments.get(0).firstSequence();
        long after = Math.max(fromSequence, oldest) - 1;
        long[] seen = {0, 0};
        try {
            WalReader.Outcome outcome = WalReader.read(dir, after, false, (record, file, offset) -> {
                seen[0]++;
                seen[1] = record.getSequence();
                sink.record(record, file, offset);
            });
            return new Result(segments.size(), oldest, seen[0], seen[1], outcome.tornFile(), outcome.tornOffset(), null);
        } catch (StateFileException e) {
            return new Result(segments.size(), oldest, seen[0], seen[1], null, -1, e);
        }
    }

    /**
     * Each segment's header as one JSON object ({@code "type":"segment"}): file, format version, minimum reader version,
     * cluster id, first sequence and leader epoch; a segment written before headers existed shows as format 1 without
     * the rest, an empty file as {@code "empty":true}, and one whose header cannot be read carries the error.
     */
    public static List<Map<String, Object>> segments(Path dir) throws IOException {
        List<Map<String, Object>> out = new ArrayList<>();
        for (WalSegments.Segment segment : WalSegments.list(dir)) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("type", "segment");
            line.put("segment", segment.path().getFileName().toString());
            long bytes = Files.size(segment.path());
            line.put("bytes", bytes);
            if (bytes == 0) {
                // A master that could not write a new segment's header (a full disk, a kill) leaves it empty: no
                // format to name, and nothing in it that replay reads.
                line.put("empty", true);
                out.add(line);
                continue;
            }
            try {
                Optional<WalSegmentHeader> header = WalSegmentHeader.read(segment.path());
                line.put("format_version", header.map(WalSegmentHeader::formatVersion).orElse(WalSegmentHeader.LEGACY_FORMAT_VERSION));
                line.put("legacy", header.isEmpty());
                header.ifPresent(h -> {
                    line.put("min_reader_version", h.minReaderVersion());
                    line.put("cluster_id", h.clusterId());
                    line.put("first_sequence", h.firstSequence());
                    line.put("leader_epoch", h.leaderEpoch());
                });
            } catch (StateFileException e) {
                line.put("error", Problem.of(e).json());
            }
            out.add(line);
        }
        return out;
    }

    /** A segment line of {@link #segments} as text. */
    public static String segmentText(Map<String, Object> segment) {
        String name = "segment " + segment.get("segment") + " (" + segment.get("bytes") + " bytes): ";
        if (segment.containsKey("error")) {
            return name + "header unreadable: " + ((Map<?, ?>) segment.get("error")).get("message");
        }
        if (Boolean.TRUE.equals(segment.get("empty"))) {
            return name + "empty (no header and no record: its header was never written)";
        }
        if (Boolean.TRUE.equals(segment.get("legacy"))) {
            return name + "format 1 (written before segments had a header: no cluster id)";
        }
        return name + "format " + segment.get("format_version") + " (readers of " + segment.get("min_reader_version") + " or later), cluster "
                + segment.get("cluster_id") + ", first record " + segment.get("first_sequence") + ", leader epoch " + segment.get("leader_epoch");
    }

    /** The change's name in snake case (allocated, committed, pending_dropped, reserved, ...), or unknown. */
    public static String change(WalRecord record) {
        return record.getChangeCase() == WalRecord.ChangeCase.CHANGE_NOT_SET ? "unknown" : record.getChangeCase().name().toLowerCase(Locale.ROOT);
    }

    /**
     * A record as one JSON object: {@code "type":"record"}, sequence, time, change, where it is in the log, then
     * the change's own fields.
     */
    public static Map<String, Object> json(WalRecord record, Path file, long offset) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("type", "record");
        out.put("sequence", record.getSequence());
        out.put("time", Formats.iso(record.getTimeMs()));
        out.put("time_ms", record.getTimeMs());
        out.put("change", change(record));
        out.put("segment", file.getFileName().toString());
        out.put("segment_offset", offset);
        switch (record.getChangeCase()) {
            case ALLOCATED -> {
                Allocated a = record.getAllocated();
                keyed(out, a.getTenantId(), a.getKey(), a.getPlacement());
                out.put("deadline", Formats.iso(a.getDeadlineMs()));
                out.put("deadline_ms", a.getDeadlineMs());
                out.put("overwrite", a.getOverwrite());
            }
            case COMMITTED -> {
                Committed c = record.getCommitted();
                keyed(out, c.getTenantId(), c.getKey(), c.getPlacement());
                if (c.hasReplaced()) {
                    out.put("replaced", SnapshotDiff.placementJson(c.getReplaced()));
                    release(out, "replaced_", c.getReplacedReleaseMs());
                }
            }
            case PENDING_DROPPED -> {
                PendingDropped d = record.getPendingDropped();
                keyed(out, d.getTenantId(), d.getKey(), d.getPlacement());
                out.put("reason", d.getReason().name().toLowerCase(Locale.ROOT));
                release(out, "", d.getReleaseMs());
            }
            case REMOVED -> {
                Removed r = record.getRemoved();
                keyed(out, r.getTenantId(), r.getKey(), r.getPlacement());
                out.put("reason", r.getReason().name().toLowerCase(Locale.ROOT));
                release(out, "", r.getReleaseMs());
            }
            case RENEWED -> {
                io.mcctl.master.proto.v1.Renewed r = record.getRenewed();
                keyed(out, r.getTenantId(), r.getKey(), r.getPlacement());
                out.put("deadline", Formats.iso(r.getDeadlineMs()));
                out.put("deadline_ms", r.getDeadlineMs());
            }
            case RELEASED -> {
                Released r = record.getReleased();
                out.put("bucket", r.getBucket());
                out.put("first_page", r.getFirstPage());
                out.put("pages", r.getPages());
            }
            case LAYOUT_GROWN -> {
                out.put("previous_bucket_size", record.getLayoutGrown().getPreviousBucketSize());
                out.put("bucket_size", record.getLayoutGrown().getBucketSize());
            }
            case PROMOTION_QUEUED -> {
                io.mcctl.master.proto.v1.PromotionQueued q = record.getPromotionQueued();
                keyed(out, q.getTenantId(), q.getKey(), q.getPlacement());
                out.put("queued", Formats.iso(q.getQueuedMs()));
            }
            case PROMOTION_ENDED -> {
                io.mcctl.master.proto.v1.PromotionEnded e = record.getPromotionEnded();
                keyed(out, e.getTenantId(), e.getKey(), e.getPlacement());
                out.put("outcome", e.getOutcome().name().toLowerCase(Locale.ROOT));
            }
            case RESERVED -> {
                io.mcctl.master.proto.v1.Reserved r = record.getReserved();
                reservation(out, r.getBucket(), r.getFirstPage(), r.getPages(), r.getOpenUntilMs());
                out.put("hold_until", Formats.iso(r.getHoldUntilMs()));
                out.put("hold_until_ms", r.getHoldUntilMs());
            }
            case RESERVATION_CLOSED -> {
                io.mcctl.master.proto.v1.ReservationClosed c = record.getReservationClosed();
                reservation(out, c.getBucket(), c.getFirstPage(), c.getPages(), c.getOpenUntilMs());
            }
            case CHANGE_NOT_SET -> {
                // a change from a newer mcctl: only its sequence and time are known here
            }
        }
        return out;
    }

    /** A record as one line: {@code sequence  time  change  field=value ...}. */
    public static String text(WalRecord record) {
        StringBuilder line = new StringBuilder();
        line.append(record.getSequence()).append("  ").append(Formats.iso(record.getTimeMs())).append("  ")
                .append(String.format(Locale.ROOT, "%-15s", change(record))).append(' ');
        switch (record.getChangeCase()) {
            case ALLOCATED -> {
                Allocated a = record.getAllocated();
                keyedText(line, a.getTenantId(), a.getKey(), a.getPlacement(), false);
                line.append(" deadline=").append(Formats.iso(a.getDeadlineMs()));
                if (a.getOverwrite()) {
                    line.append(" overwrite");
                }
            }
            case COMMITTED -> {
                Committed c = record.getCommitted();
                keyedText(line, c.getTenantId(), c.getKey(), c.getPlacement(), true);
                if (c.hasReplaced()) {
                    PlacementRecord r = c.getReplaced();
                    line.append(" replaced=").append(Formats.place(r.getBucket(), r.getOffset(), r.getSize()))
                            .append(quarantined(c.getReplacedReleaseMs())
                                    ? " replaced_quarantined_until=" + Formats.iso(c.getReplacedReleaseMs()) : " replaced_freed");
                }
            }
            case PENDING_DROPPED -> {
                PendingDropped d = record.getPendingDropped();
                keyedText(line, d.getTenantId(), d.getKey(), d.getPlacement(), false);
                line.append(" reason=").append(d.getReason().name().toLowerCase(Locale.ROOT))
                        .append(quarantined(d.getReleaseMs()) ? " quarantined_until=" + Formats.iso(d.getReleaseMs()) : " freed");
            }
            case REMOVED -> {
                Removed r = record.getRemoved();
                keyedText(line, r.getTenantId(), r.getKey(), r.getPlacement(), true);
                if (r.getReason() != Removed.Reason.REMOVED) {
                    line.append(" reason=").append(r.getReason().name().toLowerCase(Locale.ROOT));
                }
                line.append(quarantined(r.getReleaseMs()) ? " quarantined_until=" + Formats.iso(r.getReleaseMs()) : " freed");
            }
            case RENEWED -> {
                io.mcctl.master.proto.v1.Renewed r = record.getRenewed();
                keyedText(line, r.getTenantId(), r.getKey(), r.getPlacement(), false);
                line.append(" deadline=").append(Formats.iso(r.getDeadlineMs()));
            }
            case RELEASED -> {
                Released r = record.getReleased();
                line.append("bucket=").append(r.getBucket()).append(" first_page=").append(r.getFirstPage()).append(" pages=").append(r.getPages());
            }
            case LAYOUT_GROWN -> line.append("bucket_size=").append(record.getLayoutGrown().getBucketSize()).append(" was=")
                    .append(record.getLayoutGrown().getPreviousBucketSize());
            case PROMOTION_QUEUED -> {
                io.mcctl.master.proto.v1.PromotionQueued q = record.getPromotionQueued();
                keyedText(line, q.getTenantId(), q.getKey(), q.getPlacement(), true);
            }
            case PROMOTION_ENDED -> {
                io.mcctl.master.proto.v1.PromotionEnded e = record.getPromotionEnded();
                keyedText(line, e.getTenantId(), e.getKey(), e.getPlacement(), true);
                line.append(" outcome=").append(e.getOutcome().name().toLowerCase(Locale.ROOT));
            }
            case RESERVED -> {
                io.mcctl.master.proto.v1.Reserved r = record.getReserved();
                line.append("bucket=").append(r.getBucket()).append(" first_page=").append(r.getFirstPage()).append(" pages=").append(r.getPages())
                        .append(" open_until=").append(Formats.iso(r.getOpenUntilMs())).append(" hold_until=").append(Formats.iso(r.getHoldUntilMs()));
            }
            case RESERVATION_CLOSED -> {
                io.mcctl.master.proto.v1.ReservationClosed c = record.getReservationClosed();
                line.append("bucket=").append(c.getBucket()).append(" first_page=").append(c.getFirstPage()).append(" pages=").append(c.getPages())
                        .append(" open_until=").append(Formats.iso(c.getOpenUntilMs()));
            }
            case CHANGE_NOT_SET -> line.append("(a change this mcctl does not know; written by a newer one)");
        }
        return line.toString().stripTrailing();
    }

    /** Whether the pages went to quarantine: the rule replay applies (the master logs 0 for pages freed at once). */
    static boolean quarantined(long releaseMs) {
        return releaseMs > 0;
    }

    private static void release(Map<String, Object> out, String prefix, long releaseMs) {
        boolean quarantined = quarantined(releaseMs);
        out.put(prefix + "quarantined", quarantined);
        out.put(prefix + "release", quarantined ? Formats.iso(releaseMs) : null);
        out.put(prefix + "release_ms", releaseMs);
    }

    /** The fields a reservation is named by, opened or closed. */
    private static void reservation(Map<String, Object> out, int bucket, long firstPage, long pages, long openUntilMs) {
        out.put("bucket", bucket);
        out.put("first_page", firstPage);
        out.put("pages", pages);
        out.put("open_until", Formats.iso(openUntilMs));
        out.put("open_until_ms", openUntilMs);
    }

    private static void keyed(Map<String, Object> out, String tenant, String key, PlacementRecord p) {
        out.put("tenant", tenant);
        out.put("key", key);
        out.put("placement", SnapshotDiff.placementJson(p));
    }

    private static void keyedText(StringBuilder line, String tenant, String key, PlacementRecord p, boolean crc) {
        line.append("tenant=").append(Formats.quote(tenant)).append(" key=").append(Formats.quote(key)).append(" at=")
                .append(Formats.place(p.getBucket(), p.getOffset(), p.getSize()));
        if (crc) {
            line.append(" crc32c=").append(Formats.hex(p.getCrc32C()));
        }
    }
}
