package io.mcctl.tools.snapshot;

import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.durability.WalReader;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.proto.v1.SnapshotMeta;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The snapshots (newest first) and log segments (oldest first) of a state directory. A snapshot is only
 * opened (header, footer, meta record), not read in full: {@code verify} does that. The log is read
 * once, in full, through {@link WalReader}, to count each segment's records.
 */
public final class StateListing {

    /** One snapshot: its meta record, or why it does not open. */
    public record SnapshotEntry(Path file, long walSequence, long bytes, SnapshotMeta meta, String unreadable) {
        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("file", file.getFileName().toString());
            out.put("wal_sequence", walSequence);
            out.put("bytes", bytes);
            out.put("readable", meta != null);
            out.put("created", meta == null ? null : Formats.iso(meta.getCreatedMs()));
            out.put("created_ms", meta == null ? null : meta.getCreatedMs());
            out.put("mappings", meta == null ? null : meta.getMappings());
            out.put("in_flight", meta == null ? null : meta.getInFlight());
            out.put("quarantined_ranges", meta == null ? null : meta.getQuarantinedRanges());
            out.put("error", unreadable);
            return out;
        }
    }

    /** How reading a segment went. */
    public enum SegmentStatus {
        /** Every record read. */
        OK,
        /** Read up to a torn tail (a write cut short by a crash). */
        TORN,
        /** Reading stopped on a record that is not a torn tail. */
        CORRUPT,
        /** Not read: an earlier segment is corrupt. */
        UNREAD
    }

    /** One log segment; {@code lastSequence} is 0 when no record of it was read. */
    public record SegmentEntry(Path file, long firstSequence, long bytes, long records, long lastSequence, SegmentStatus status, long problemOffset,
                               String problem) {
        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("file", file.getFileName().toString());
            out.put("first_sequence", firstSequence);
            out.put("bytes", bytes);
            out.put("records", status == SegmentStatus.UNREAD ? null : records);
            out.put("last_sequence", records == 0 ? null : lastSequence);
            out.put("status", status.name().toLowerCase(java.util.Locale.ROOT));
            out.put("problem_offset", problemOffset >= 0 ? problemOffset : null);
            out.put("problem", problem);
            return out;
        }
    }

    /** The listing. */
    public record Listing(Path dir, List<SnapshotEntry> snapshots, List<SegmentEntry> segments) {
        public Map<String, Object> json() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("state_dir", dir.toString());
            out.put("snapshots", snapshots.stream().map(SnapshotEntry::json).toList());
            out.put("wal_segments", segments.stream().map(SegmentEntry::json).toList());
            return out;
        }
    }

    private StateListing() {
    }

    public static Listing list(Path dir) throws IOException {
        List<SnapshotEntry> snapshots = new ArrayList<>();
        for (SnapshotFile.Listed listed : SnapshotFile.list(dir)) {
            long bytes = Files.size(listed.path());
            try {
                snapshots.add(new SnapshotEntry(listed.path(), listed.walSequence(), bytes, SnapshotFile.open(listed.path()).meta(), null));
            } catch (CorruptStateException e) {
                snapshots.add(new SnapshotEntry(listed.path(), listed.walSequence(), bytes, null,
                        (e.offset() > 0 ? "at byte " + e.offset() + ": " : "") + Problem.what(e)));
            }
        }
        return new Listing(dir, snapshots, segments(dir));
    }

    private static List<SegmentEntry> segments(Path dir) throws IOException {
        List<WalSegments.Segment> segments = WalSegments.list(dir);
        List<SegmentEntry> out = new ArrayList<>();
        if (segments.isEmpty()) {
            return out;
        }
        Map<Path, long[]> counts = new HashMap<>(); // records, last sequence, end of the last record
        WalReader.Outcome outcome = null;
        CorruptStateException corruption = null;
        try {
            outcome = WalReader.read(dir, segments.get(0).firstSequence() - 1, false, (record, file, offset) -> {
                long[] c = counts.computeIfAbsent(file, f -> new long[3]);
                c[0]++;
                c[1] = record.getSequence();
                c[2] = offset + io.mcctl.master.durability.FrameCodec.HEADER_BYTES + record.getSerializedSize();
            });
        } catch (CorruptStateException e) {
            corruption = e;
        }
        boolean afterCorruption = false;
        for (WalSegments.Segment segment : segments) {
            long[] c = counts.getOrDefault(segment.path(), new long[3]);
            // The records' bytes: the segment being written also holds zeros written ahead of its records.
            long bytes = c[2];
            SegmentStatus status = SegmentStatus.OK;
            long problemOffset = -1;
            String problem = null;
            if (afterCorruption) {
                status = SegmentStatus.UNREAD;
                problem = "not read: an earlier segment is corrupt";
                bytes = Files.size(segment.path());
            } else if (corruption != null && corruption.file().equals(segment.path())) {
                status = SegmentStatus.CORRUPT;
                problemOffset = corruption.offset();
                problem = Problem.what(corruption);
                afterCorruption = true;
                bytes = Files.size(segment.path());
            } else if (outcome != null && outcome.torn() && outcome.tornFile().equals(segment.path())) {
                status = SegmentStatus.TORN;
                problemOffset = outcome.tornOffset();
                problem = "torn tail: a record cut short by a crash (the master cuts it off when it next starts)";
                bytes = Files.size(segment.path());
            }
            out.add(new SegmentEntry(segment.path(), segment.firstSequence(), bytes, c[0], c[1], status, problemOffset, problem));
        }
        return out;
    }
}
