package io.mcctl.master.durability;

import static io.mcctl.testkit.StateFixture.allocated;
import static io.mcctl.testkit.FileDamage.invertByte;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.proto.v1.WalRecord;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class WalSegmentHeaderTest {

    @TempDir
    Path dir;

    /** Frames written, in order: sequence and offset of each record of the log. */
    private List<long[]> frames() throws IOException {
        List<long[]> frames = new ArrayList<>();
        WalReader.read(dir, 0, false, (record, file, offset) -> frames.add(new long[] {record.getSequence(), offset}));
        return frames;
    }

    private void write(String cluster, long after, int records) throws Exception {
        try (WriteAheadLog wal = new WriteAheadLog(dir, cluster, after, 64L << 20, System::currentTimeMillis)) {
            for (int i = 0; i < records; i++) {
                wal.append(allocated("key-" + (after + i + 1)));
            }
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }
    }

    private List<Long> sequencesAfter(long after) throws IOException {
        List<Long> seen = new ArrayList<>();
        WalReader.read(dir, after, false, (record, file, offset) -> seen.add(record.getSequence()));
        return seen;
    }

    @Test
    void a_new_segment_starts_with_a_header_naming_its_cluster_first_sequence_and_format() throws Exception {
        write("cluster-a", 41, 3);
        Path segment = WalSegments.list(dir).get(0).path();
        WalSegmentHeader header = WalSegmentHeader.read(segment).orElseThrow();
        assertEquals(new WalSegmentHeader(2, 2, 42, 0, "cluster-a"), header);
        List<Long> offsets = new ArrayList<>();
        WalReader.read(dir, 41, false, (record, file, offset) -> offsets.add(offset));
        assertEquals(WalSegmentHeader.BYTES, offsets.get(0), "the first record follows the header");
    }

    @Test
    void a_segment_of_another_cluster_is_refused_naming_the_file_and_both_clusters() throws Exception {
        write("cluster-a", 0, 3);
        Path segment = WalSegments.list(dir).get(0).path();
        UnreadableStateException e = assertThrows(UnreadableStateException.class,
                () -> WalReader.read(dir, 0, false, "cluster-b", (r, f, o) -> { }));
        assertEquals(segment, e.file());
        assertTrue(e.getMessage().contains("cluster-a") && e.getMessage().contains("cluster-b"), e.getMessage());
    }

    @Test
    void segments_of_two_clusters_in_one_directory_are_refused_without_being_told_the_cluster() throws Exception {
        write("cluster-a", 0, 3);
        write("cluster-b", 3, 3);
        UnreadableStateException e = assertThrows(UnreadableStateException.class, () -> WalReader.read(dir, 0, false, (r, f, o) -> { }));
        assertEquals(WalSegments.list(dir).get(1).path(), e.file());
        assertTrue(e.getMessage().contains("belongs to cluster cluster-b, not to cluster cluster-a"), e.getMessage());
    }

    @Test
    void a_segment_that_needs_a_newer_reader_is_refused_naming_the_file_and_both_versions() throws Exception {
        write("cluster-a", 0, 3);
        Path segment = WalSegments.list(dir).get(0).path();
        try (FileChannel channel = FileChannel.open(segment, StandardOpenOption.WRITE)) {
            ByteBuffer versions = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putShort((short) 7).putShort((short) 5).flip();
            channel.write(versions, 4);
        }
        byte[] before = Files.readAllBytes(segment);
        UnreadableStateException e = assertThrows(UnreadableStateException.class, () -> WalReader.read(dir, 0, true, (r, f, o) -> { }));
        assertEquals(segment, e.file());
        assertTrue(e.getMessage().contains("format version 7") && e.getMessage().contains("version 5 or later")
                && e.getMessage().contains("reads log format version 3"), e.getMessage());
        assertTrue(Arrays.equals(before, Files.readAllBytes(segment)), "a segment it cannot read is left as it is, even when repairing");
    }

    @Test
    void a_segment_written_before_the_header_existed_is_read_as_the_legacy_format() throws Exception {
        write("cluster-a", 0, 5);
        Path segment = WalSegments.list(dir).get(0).path();
        byte[] withHeader = Files.readAllBytes(segment);
        Files.write(segment, Arrays.copyOfRange(withHeader, WalSegmentHeader.BYTES, withHeader.length)); // as mcctl wrote it before
        assertEquals(Optional.empty(), WalSegmentHeader.read(segment));
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), sequencesAfter(0));
        assertEquals(0, frames().get(0)[1], "legacy records start at byte 0");
        // The next master appends after it in a new segment, with a header; both read back as one log.
        write("cluster-a", 5, 2);
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L), sequencesAfter(0));
        assertEquals(List.of(6L, 7L), sequencesAfter(5));
    }

    @Test
    void a_record_with_a_change_this_mcctl_does_not_know_is_refused_with_file_and_offset_never_skipped() throws Exception {
        try (WriteAheadLog wal = new WriteAheadLog(dir, "cluster-a", 0, 64L << 20, System::currentTimeMillis)) {
            wal.append(allocated("known"));
            wal.append(WalRecord.newBuilder()); // what a newer mcctl's record reads as here: its change is not in our oneof
            wal.append(allocated("after"));
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }
        Path segment = WalSegments.list(dir).get(0).path();
        List<Long> seen = new ArrayList<>();
        UnreadableStateException e = assertThrows(UnreadableStateException.class,
                () -> WalReader.read(dir, 0, false, (r, f, o) -> seen.add(r.getSequence())));
        assertEquals(segment, e.file());
        assertTrue(e.offset() > WalSegmentHeader.BYTES, "the second record's frame: " + e.offset());
        assertTrue(e.getMessage().contains("record 2 holds a change this mcctl does not know"), e.getMessage());
        assertEquals(List.of(1L), seen, "nothing after it is applied");
        assertEquals(List.of(3L), sequencesAfter(2), "a snapshot that covers it needs it not decoded");
    }

    @Test
    void a_damaged_record_that_a_snapshot_covers_is_passed_over_and_the_rest_read() throws Exception {
        write("cluster-a", 0, 10);
        Path segment = WalSegments.list(dir).get(0).path();
        long third = frames().get(2)[1];
        invertByte(segment, third + FrameCodec.HEADER_BYTES + 3);

        List<Long> seen = new ArrayList<>();
        WalReader.Outcome outcome = WalReader.read(dir, 5, true, (r, f, o) -> seen.add(r.getSequence()));
        assertEquals(List.of(6L, 7L, 8L, 9L, 10L), seen);
        assertEquals(10, outcome.lastSequence());
        assertEquals(1, outcome.skipped().size(), outcome.skipped().toString());
        assertTrue(outcome.skipped().get(0).contains("at byte " + third) && outcome.skipped().get(0).contains("records 3 to 3"),
                outcome.skipped().toString());

        CorruptStateException uncovered = assertThrows(CorruptStateException.class, () -> WalReader.read(dir, 2, false, (r, f, o) -> { }));
        assertEquals(third, uncovered.offset(), "a damaged record the snapshot does not cover stops the read");
    }

    @Test
    void a_damaged_frame_length_among_covered_records_still_finds_the_records_after_it() throws Exception {
        write("cluster-a", 0, 10);
        Path segment = WalSegments.list(dir).get(0).path();
        List<long[]> frames = frames();
        try (FileChannel channel = FileChannel.open(segment, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 0x7fff_0000), frames.get(3)[1]);
        }
        List<Long> seen = new ArrayList<>();
        WalReader.Outcome outcome = WalReader.read(dir, 6, false, (r, f, o) -> seen.add(r.getSequence()));
        assertEquals(List.of(7L, 8L, 9L, 10L), seen);
        assertTrue(outcome.skipped().get(0).contains("records 4 to 4"), outcome.skipped().toString());
    }
}
