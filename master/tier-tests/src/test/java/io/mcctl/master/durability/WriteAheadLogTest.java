package io.mcctl.master.durability;

import static io.mcctl.testkit.StateFixture.allocated;
import static io.mcctl.testkit.FileDamage.invertByte;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The write-ahead log on real files: order, group commit, torn tails against corruption, segments. */
@Timeout(60)
class WriteAheadLogTest {

    static final long BIG_SEGMENTS = 64L << 20;

    @TempDir
    Path dir;

    /** A record read back: its sequence, key, and where its frame starts. */
    record Read(long sequence, String key, Path file, long offset) {
    }

    static List<Read> readAll(Path dir, long after) throws IOException {
        List<Read> records = new ArrayList<>();
        WalReader.read(dir, after, false, (record, file, offset) -> records.add(new Read(record.getSequence(),
                record.getAllocated().getKey(), file, offset)));
        return records;
    }

    static WriteAheadLog open(Path dir, long after, long segmentBytes) throws IOException {
        return new WriteAheadLog(dir, "test-cluster", after, segmentBytes, System::currentTimeMillis);
    }

    /** Appends {@code count} records keyed {@code prefix + i}, each made durable before the next, so segments roll near their limit. */
    static void appendDurably(WriteAheadLog wal, String prefix, int count) throws Exception {
        for (int i = 0; i < count; i++) {
            wal.append(allocated(prefix + i));
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }
    }

    static Path onlySegment(Path dir) throws IOException {
        List<WalSegments.Segment> segments = WalSegments.list(dir);
        assertEquals(1, segments.size(), segments.toString());
        return segments.get(0).path();
    }

    @Test
    void a_frame_holds_exactly_the_bytes_protobuf_gives_for_the_whole_record() throws Exception {
        try (WriteAheadLog wal = new WriteAheadLog(dir, "test-cluster", 41, BIG_SEGMENTS, () -> 1_700_000_000_123L)) {
            wal.append(allocated("key-with-é"));
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }
        byte[] file = Files.readAllBytes(onlySegment(dir));
        byte[] expected = allocated("key-with-é").setSequence(42).setTimeMs(1_700_000_000_123L).build().toByteArray();
        java.nio.ByteBuffer frame = java.nio.ByteBuffer.wrap(file).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        int at = WalSegmentHeader.BYTES; // the record follows the segment header
        assertEquals(expected.length, frame.getInt(at));
        assertEquals(FrameCodec.crc(expected, 0, expected.length), frame.getInt(at + 4));
        assertEquals(at + FrameCodec.HEADER_BYTES + expected.length, file.length);
        assertEquals(java.util.Arrays.toString(expected),
                java.util.Arrays.toString(java.util.Arrays.copyOfRange(file, at + FrameCodec.HEADER_BYTES, file.length)));
    }

    @Test
    void a_wait_for_a_sequence_ends_once_that_record_is_durable_and_at_once_when_it_already_is() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, BIG_SEGMENTS)) {
            long first = wal.append(allocated("first"));
            wal.whenDurable(first).get(10, TimeUnit.SECONDS);
            assertTrue(wal.lastDurable() >= first);
            long second = wal.append(allocated("second"));
            wal.append(allocated("third"));
            // Records appended after the one waited for need not be on disk: waiting for the first again is over at once.
            assertTrue(wal.whenDurable(first).isDone());
            CompletableFuture<Void> upToSecond = wal.whenDurable(second);
            CompletableFuture<Void> everything = wal.whenDurable();
            everything.get(10, TimeUnit.SECONDS);
            assertTrue(upToSecond.isDone());
            assertEquals(3, wal.lastDurable());
            // A sequence past the last appended waits only for what has been appended.
            wal.whenDurable(99).get(10, TimeUnit.SECONDS);
        }
        assertEquals(List.of("first", "second", "third"), readAll(dir, 0).stream().map(Read::key).toList());
    }

    @Test
    void a_record_nobody_waits_for_still_reaches_the_disk() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, BIG_SEGMENTS)) {
            wal.append(allocated("unwaited"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (wal.lastDurable() < 1 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertEquals(1, wal.lastDurable(), "written within the idle bound without any whenDurable");
        }
    }

    @Test
    void records_appended_from_8_threads_come_back_in_sequence_order_with_no_gap() throws Exception {
        int threads = 8;
        int perThread = 400;
        Map<String, Long> sequenceOf = Collections.synchronizedMap(new HashMap<>());
        try (WriteAheadLog wal = open(dir, 0, BIG_SEGMENTS)) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    go.await();
                    for (int i = 0; i < perThread; i++) {
                        String key = "thread-" + thread + "-" + i;
                        sequenceOf.put(key, wal.append(allocated(key)));
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : done) {
                f.get(30, TimeUnit.SECONDS);
            }
            pool.shutdown();
            wal.whenDurable().get(10, TimeUnit.SECONDS);
            assertEquals(threads * perThread, wal.lastDurable());
        }
        List<Read> records = readAll(dir, 0);
        assertEquals(threads * perThread, records.size());
        long[] lastOfThread = new long[threads];
        for (int i = 0; i < records.size(); i++) {
            Read r = records.get(i);
            assertEquals(i + 1, r.sequence(), "record " + i + " of the log");
            assertEquals(sequenceOf.get(r.key()), r.sequence(), "the sequence append() returned for " + r.key());
            // Each thread's own records keep the order in which it appended them.
            String[] parts = r.key().split("-");
            int thread = Integer.parseInt(parts[1]);
            long n = Long.parseLong(parts[2]);
            assertEquals(lastOfThread[thread], n, "thread " + thread + "'s records out of order at " + r.key());
            lastOfThread[thread] = n + 1;
        }
        WalReader.Outcome outcome = WalReader.read(dir, 0, false, (record, file, offset) -> { });
        assertFalse(outcome.torn());
        assertEquals(threads * perThread, outcome.lastSequence());
    }

    @Test
    void group_commit_makes_fewer_fsyncs_than_acknowledged_calls_and_acknowledges_only_what_is_on_disk() throws Exception {
        int threads = 16;
        int perThread = 150;
        AtomicLong acknowledged = new AtomicLong();
        AtomicLong early = new AtomicLong();
        long syncs;
        try (WriteAheadLog wal = open(dir, 0, BIG_SEGMENTS)) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    go.await();
                    for (int i = 0; i < perThread; i++) {
                        long sequence = wal.append(allocated("k-" + thread + "-" + i));
                        CompletableFuture<Void> durable = wal.whenDurable();
                        durable.get(10, TimeUnit.SECONDS);
                        if (wal.lastDurable() < sequence) {
                            early.incrementAndGet();
                        }
                        acknowledged.incrementAndGet();
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : done) {
                f.get(50, TimeUnit.SECONDS);
            }
            pool.shutdown();
            syncs = wal.syncCount();
        }
        assertEquals((long) threads * perThread, acknowledged.get());
        assertEquals(0, early.get(), "whenDurable() completed before its record was fsynced");
        assertTrue(syncs > 0);
        assertTrue(syncs < acknowledged.get(), "group commit: " + syncs + " fsyncs for " + acknowledged.get() + " acknowledged calls");
        assertEquals(threads * perThread, readAll(dir, 0).size());
    }

    @Test
    void a_frame_cut_in_the_middle_at_the_end_of_the_last_segment_is_torn_and_repair_cuts_it_off() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, BIG_SEGMENTS)) {
            appendDurably(wal, "k", 10);
        }
        Path segment = onlySegment(dir);
        long whole = Files.size(segment);
        byte[] payload = allocated("cut").setSequence(11).setTimeMs(1).build().toByteArray();
        ByteBuffer frame = ByteBuffer.allocate(FrameCodec.HEADER_BYTES + payload.length).order(ByteOrder.LITTLE_ENDIAN);
        FrameCodec.putHeader(frame, payload);
        frame.put(payload).flip();
        frame.limit(FrameCodec.HEADER_BYTES + payload.length / 2); // the crash came half-way through the payload
        Files.write(segment, bytesOf(frame), StandardOpenOption.APPEND);

        List<Long> seen = new ArrayList<>();
        WalReader.Outcome report = WalReader.read(dir, 0, false, (r, f, o) -> seen.add(r.getSequence()));
        assertTrue(report.torn());
        assertEquals(segment, report.tornFile());
        assertEquals(whole, report.tornOffset(), "the torn frame starts where the last whole record ends");
        assertEquals(10, report.lastSequence());
        assertEquals(10, seen.size());
        assertTrue(Files.size(segment) > whole, "without repair the file is left as it is");

        WalReader.Outcome repaired = WalReader.read(dir, 0, true, (r, f, o) -> { });
        assertTrue(repaired.torn());
        assertEquals(whole, repaired.tornOffset());
        assertEquals(whole, Files.size(segment), "repair cuts the file at its last whole record");

        WalReader.Outcome again = WalReader.read(dir, 0, true, (r, f, o) -> { });
        assertFalse(again.torn(), "the second read is clean");
        assertNull(again.tornFile());
        assertEquals(10, again.lastSequence());
        assertEquals(10, again.records());
    }

    @Test
    void a_cut_frame_header_and_a_bad_checksum_on_the_very_last_frame_are_torn_too() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, BIG_SEGMENTS)) {
            appendDurably(wal, "k", 5);
        }
        Path segment = onlySegment(dir);
        long whole = Files.size(segment);
        List<Read> records = readAll(dir, 0);
        long lastFrame = records.get(4).offset();

        Files.write(segment, new byte[] {7, 0, 0}, StandardOpenOption.APPEND); // 3 bytes of a header
        WalReader.Outcome header = WalReader.read(dir, 0, true, (r, f, o) -> { });
        assertTrue(header.torn());
        assertEquals(whole, header.tornOffset());
        assertEquals(whole, Files.size(segment));

        invertByte(segment, whole - 1); // the last record's payload, written but not all of it reached the disk
        WalReader.Outcome crc = WalReader.read(dir, 0, true, (r, f, o) -> { });
        assertTrue(crc.torn());
        assertEquals(lastFrame, crc.tornOffset());
        assertEquals(4, crc.lastSequence());
        assertEquals(lastFrame, Files.size(segment));
    }

    @Test
    void a_tail_of_zeros_after_the_last_record_is_the_end_of_the_log_and_repair_cuts_it() throws Exception {
        // The writer keeps zeros written ahead of its records, and so does a crash after the file grew but before
        // its new blocks were written (XFS, ext4 without data=ordered): the end of the log, not a reason to stop.
        try (WriteAheadLog wal = open(dir, 0, BIG_SEGMENTS)) {
            appendDurably(wal, "k", 5);
        }
        Path segment = onlySegment(dir);
        long whole = Files.size(segment);
        Files.write(segment, new byte[4096], StandardOpenOption.APPEND);
        WalReader.Outcome readOnly = WalReader.read(dir, 0, false, (r, f, o) -> { });
        assertFalse(readOnly.torn(), "zeros after the last record are its end");
        assertEquals(5, readOnly.lastSequence());
        assertEquals(whole + 4096, Files.size(segment), "reading without repair changes nothing");
        WalReader.Outcome outcome = WalReader.read(dir, 0, true, (r, f, o) -> { });
        assertFalse(outcome.torn());
        assertEquals(5, outcome.lastSequence());
        assertEquals(whole, Files.size(segment), "repair cuts the zeros");
        try (WriteAheadLog wal = open(dir, outcome.lastSequence(), BIG_SEGMENTS)) {
            appendDurably(wal, "after", 1);
        }
        assertEquals(6, readAll(dir, 0).size());
    }

    @Test
    void a_segment_holding_only_zeros_is_cut_to_empty_and_the_log_opens_over_it() throws Exception {
        // A log stopped before its first record: recovery must leave a segment the log can reopen.
        Files.createDirectories(dir);
        Path segment = dir.resolve(WalSegments.fileName(1));
        Files.write(segment, new byte[4096]);
        WalReader.Outcome outcome = WalReader.read(dir, 0, true, (r, f, o) -> { });
        assertFalse(outcome.torn());
        assertEquals(0, outcome.lastSequence());
        assertEquals(0, Files.size(segment));
        try (WriteAheadLog wal = open(dir, outcome.lastSequence(), BIG_SEGMENTS)) {
            appendDurably(wal, "k", 2);
        }
        assertEquals(2, readAll(dir, 0).size());
    }

    @Test
    void a_flipped_byte_in_a_record_in_the_middle_is_corruption_naming_the_file_and_the_frame_offset() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, BIG_SEGMENTS)) {
            appendDurably(wal, "k", 10);
        }
        Path segment = onlySegment(dir);
        long size = Files.size(segment);
        Read fifth = readAll(dir, 0).get(4);
        invertByte(segment, fifth.offset() + FrameCodec.HEADER_BYTES + 3);

        for (boolean repair : new boolean[] {false, true}) {
            List<Long> seen = new ArrayList<>();
            CorruptStateException e = assertThrows(CorruptStateException.class,
                    () -> WalReader.read(dir, 0, repair, (r, f, o) -> seen.add(r.getSequence())));
            assertEquals(segment, e.file());
            assertEquals(fifth.offset(), e.offset(), "the offset of the frame that fails");
            assertTrue(e.getMessage().contains(segment.toString()) && e.getMessage().contains("at byte " + fifth.offset()), e.getMessage());
            assertEquals(List.of(1L, 2L, 3L, 4L), seen, "records before the bad one were read, none after");
            assertEquals(size, Files.size(segment), "corruption is never cut off, with repair=" + repair);
        }
    }

    @Test
    void a_bad_record_at_the_end_of_a_segment_that_is_not_the_last_is_corruption() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, 1 << 20)) {
            appendDurably(wal, "x".repeat(200_000) + "-", 12);
        }
        List<WalSegments.Segment> segments = WalSegments.list(dir);
        assertTrue(segments.size() >= 3, segments.toString());
        Path first = segments.get(0).path();
        List<Read> records = readAll(dir, 0);
        Read lastOfFirst = records.stream().filter(r -> r.file().equals(first)).reduce((a, b) -> b).orElseThrow();
        invertByte(first, Files.size(first) - 1);
        CorruptStateException e = assertThrows(CorruptStateException.class, () -> WalReader.read(dir, 0, true, (r, f, o) -> { }));
        assertEquals(first, e.file());
        assertEquals(lastOfFirst.offset(), e.offset());
    }

    @Test
    void a_missing_segment_in_the_middle_is_a_sequence_gap() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, 1 << 20)) {
            appendDurably(wal, "x".repeat(200_000) + "-", 20);
        }
        List<WalSegments.Segment> segments = WalSegments.list(dir);
        assertTrue(segments.size() >= 4, "large records in 1 MiB segments: " + segments);
        assertEquals(1, segments.get(0).firstSequence());
        WalSegments.Segment missing = segments.get(1);
        WalSegments.Segment after = segments.get(2);
        Files.delete(missing.path());

        CorruptStateException e = assertThrows(CorruptStateException.class, () -> WalReader.read(dir, 0, true, (r, f, o) -> { }));
        assertEquals(after.path(), e.file());
        assertEquals(WalSegmentHeader.BYTES, e.offset(), "the first record, after the segment header");
        assertTrue(e.getMessage().contains("sequence " + after.firstSequence()) && e.getMessage().contains(missing.firstSequence() + " was due"),
                e.getMessage());

        // Reading from a snapshot that covers the gap is fine: the missing records are not needed.
        List<Read> rest = readAll(dir, after.firstSequence() - 1);
        assertEquals(after.firstSequence(), rest.get(0).sequence());
        assertEquals(20, rest.get(rest.size() - 1).sequence());
    }

    @Test
    void a_log_whose_first_segment_is_gone_is_a_gap_when_no_snapshot_covers_it() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, 1 << 20)) {
            appendDurably(wal, "x".repeat(200_000) + "-", 10);
        }
        List<WalSegments.Segment> segments = WalSegments.list(dir);
        Files.delete(segments.get(0).path());
        long first = segments.get(1).firstSequence();
        CorruptStateException e = assertThrows(CorruptStateException.class, () -> WalReader.read(dir, 0, false, (r, f, o) -> { }));
        assertTrue(e.getMessage().contains("records 1 to " + (first - 1) + " are missing"), e.getMessage());
    }

    @Test
    void deleting_segments_covered_by_a_sequence_keeps_every_segment_an_older_snapshot_still_needs() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, 1 << 20)) {
            // Six records fill a segment; the 25th starts the fifth, the one the log is writing (and no roll is
            // pending after it, which the writer does after answering).
            appendDurably(wal, "x".repeat(200_000) + "-", 25);
            List<WalSegments.Segment> segments = WalSegments.list(dir);
            assertTrue(segments.size() >= 5, segments.toString());
            long third = segments.get(2).firstSequence();

            // A snapshot covering up to the record just before the third segment: the first two go.
            wal.deleteSegmentsCoveredBy(third - 1);
            assertEquals(segments.subList(2, segments.size()), WalSegments.list(dir));

            // A snapshot inside the third segment still needs the rest of it.
            wal.deleteSegmentsCoveredBy(third);
            assertEquals(segments.subList(2, segments.size()), WalSegments.list(dir));
            List<Read> fromThird = readAll(dir, third);
            assertEquals(third + 1, fromThird.get(0).sequence());
            assertEquals(25, fromThird.get(fromThird.size() - 1).sequence());

            // Even a snapshot of everything keeps the segment the log is writing.
            wal.deleteSegmentsCoveredBy(wal.lastAppended());
            List<WalSegments.Segment> left = WalSegments.list(dir);
            assertEquals(1, left.size(), left.toString());
            assertEquals(segments.get(segments.size() - 1), left.get(0));
            appendDurably(wal, "later", 1);
        }
        List<Read> tail = readAll(dir, 25);
        assertEquals(List.of(26L), tail.stream().map(Read::sequence).toList());
    }

    @Test
    void records_overwrite_zeros_written_ahead_and_only_the_segment_being_written_ends_in_zeros() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, 1 << 20)) {
            appendDurably(wal, "x".repeat(200_000) + "-", 8); // six fill the first segment, two go to the second
            List<WalSegments.Segment> segments = WalSegments.list(dir);
            assertEquals(2, segments.size(), segments.toString());
            List<Read> records = readAll(dir, 0);
            assertEquals(8, records.size());
            Read lastOfFirst = records.get(5);
            long firstEnds = lastOfFirst.offset() + FrameCodec.HEADER_BYTES + frameLength(lastOfFirst);
            assertEquals(firstEnds, Files.size(segments.get(0).path()), "a rolled segment ends at its last record");
            Read last = records.get(7);
            long lastEnds = last.offset() + FrameCodec.HEADER_BYTES + frameLength(last);
            long size = Files.size(segments.get(1).path());
            assertTrue(size > lastEnds, "zeros written ahead (up to the roll size): " + size + " bytes for " + lastEnds);
            byte[] tail = Files.readAllBytes(segments.get(1).path());
            for (long i = lastEnds; i < size; i++) {
                assertEquals(0, tail[(int) i], "byte " + i);
            }
            assertFalse(WalReader.read(dir, 0, false, (r, f, o) -> { }).torn());
        }
        List<WalSegments.Segment> closed = WalSegments.list(dir);
        List<Read> records = readAll(dir, 0);
        Read last = records.get(records.size() - 1);
        assertEquals(last.offset() + FrameCodec.HEADER_BYTES + frameLength(last), Files.size(closed.get(1).path()),
                "a clean close cuts the zeros");
    }

    @Test
    void a_record_torn_over_zeros_written_ahead_is_cut_off_and_a_later_whole_record_makes_it_corruption() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, BIG_SEGMENTS)) {
            appendDurably(wal, "k", 5);
        }
        Path segment = onlySegment(dir);
        Read fifth = readAll(dir, 0).get(4);
        long end = fifth.offset() + FrameCodec.HEADER_BYTES + frameLength(fifth);
        byte[] bytes = Files.readAllBytes(segment);
        byte[] lastFrame = java.util.Arrays.copyOfRange(bytes, (int) fifth.offset(), (int) end);
        // The crash left the fifth record half written over the zeros ahead of it.
        byte[] torn = java.util.Arrays.copyOf(bytes, (int) end + 65536);
        java.util.Arrays.fill(torn, (int) (fifth.offset() + lastFrame.length / 2), (int) end, (byte) 0);
        Files.write(segment, torn);
        WalReader.Outcome outcome = WalReader.read(dir, 0, true, (r, f, o) -> { });
        assertTrue(outcome.torn());
        assertEquals(fifth.offset(), outcome.tornOffset());
        assertEquals(4, outcome.lastSequence());
        assertEquals(fifth.offset(), Files.size(segment));

        // The same damage with a whole record after the zeros (here the fifth again) is not a crash's tear: refused.
        byte[] damaged = java.util.Arrays.copyOf(torn, (int) end + 65536 + lastFrame.length);
        System.arraycopy(lastFrame, 0, damaged, (int) end + 65536, lastFrame.length);
        Files.write(segment, damaged);
        CorruptStateException refused = assertThrows(CorruptStateException.class, () -> WalReader.read(dir, 0, false, (r, f, o) -> { }));
        assertTrue(refused.getMessage().contains("follows"), refused.getMessage());
    }

    /** The payload length of the frame at {@code read}'s offset. */
    private static int frameLength(Read read) throws IOException {
        try (java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(read.file())) {
            java.nio.ByteBuffer header = java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            channel.read(header, read.offset());
            return header.getInt(0);
        }
    }

    @Test
    void reopening_after_a_clean_close_appends_after_the_last_sequence() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, BIG_SEGMENTS)) {
            appendDurably(wal, "first-", 5);
        }
        WalReader.Outcome outcome = WalReader.read(dir, 0, true, (r, f, o) -> { });
        assertEquals(5, outcome.lastSequence());
        try (WriteAheadLog wal = open(dir, outcome.lastSequence(), BIG_SEGMENTS)) {
            assertEquals(5, wal.lastAppended());
            assertEquals(6, wal.append(allocated("second-0")));
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }
        // A master that stopped before its first record reached the disk left an empty segment: reopening reuses it.
        try (WriteAheadLog wal = open(dir, 6, BIG_SEGMENTS)) {
            assertEquals(6, wal.lastAppended());
        }
        try (WriteAheadLog wal = open(dir, 6, BIG_SEGMENTS)) {
            assertEquals(7, wal.append(allocated("third-0")));
        }
        List<Read> all = readAll(dir, 0);
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L), all.stream().map(Read::sequence).toList());
        assertEquals(List.of("first-0", "first-1", "first-2", "first-3", "first-4", "second-0", "third-0"),
                all.stream().map(Read::key).toList());
        assertEquals(List.of(1L, 6L, 7L), WalSegments.list(dir).stream().map(WalSegments.Segment::firstSequence).toList(),
                "each opening begins a new segment after the last sequence");
    }

    @Test
    void a_log_opened_over_a_segment_holding_unread_records_refuses_to_start() throws Exception {
        try (WriteAheadLog wal = open(dir, 0, BIG_SEGMENTS)) {
            appendDurably(wal, "k", 3);
        }
        // Opening after sequence 0 would write record 1 again into a segment that already holds it.
        CorruptStateException e = assertThrows(CorruptStateException.class, () -> open(dir, 0, BIG_SEGMENTS));
        assertTrue(e.getMessage().contains(WalSegments.fileName(1)), e.getMessage());
        assertEquals(3, readAll(dir, 0).size(), "nothing was lost");
    }

    static byte[] bytesOf(ByteBuffer buffer) {
        byte[] bytes = new byte[buffer.remaining()];
        buffer.duplicate().get(bytes);
        return bytes;
    }
}
