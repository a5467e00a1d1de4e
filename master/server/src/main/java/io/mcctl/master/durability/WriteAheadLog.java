package io.mcctl.master.durability;

import io.mcctl.master.proto.v1.WalRecord;
import io.mcctl.master.service.Change;
import io.mcctl.master.service.ChangeLog;
import io.mcctl.master.service.KvEventBatcher;
import io.mcctl.master.protocol.Placement;
import io.mcctl.storage.io.DurableFiles;
import io.mcctl.storage.io.IoErrors;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The master's write-ahead log with group commit. {@link #append} frames a record into an in-memory
 * buffer and returns at once; one writer thread writes whatever has gathered and fsyncs it, so every
 * call waiting at that moment shares one fsync. Callers that must not answer before their change is
 * durable take {@link #whenDurable()}: a future, not a blocked thread.
 *
 * <p>Segments roll at a size limit and are named by their first sequence ({@link WalSegments}). Each starts with a
 * {@link WalSegmentHeader} and is created new (CREATE_NEW): the log never writes over a file that is there.
 *
 * <p>Ahead of the records, the writer keeps a few MiB of the segment written with zeros and made durable, so
 * a commit overwrites blocks that exist and its fdatasync flushes data only. Appending instead makes every
 * commit a journal commit of the file's new size and blocks (measured here: fdatasync of a 1.6 KB write
 * 60 us mean, p99 85 us, over written blocks; 79-110 us mean, p99 150-480 us, appending). So the last
 * segment ends in zeros; a rolled segment is cut to its last record before the next one is created, a
 * cleanly closed one too, and recovery cuts the zeros off the last one, so only the last segment ever
 * ends in zeros ({@link WalReader} reads them as its end).
 *
 * <p>Locks: {@link #lock} guards the buffer, {@link #lastAppended}, the waiters and the failure; it is
 * held to frame one record (a copy, or an encoding from fields), never across IO. The writer thread alone touches the segment channel.
 * {@link #lastDurable} is written by the writer thread only.
 */
public final class WriteAheadLog implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(WriteAheadLog.class);

    private record Waiter(long sequence, CompletableFuture<Void> future) {
    }

    private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

    private final Path dir;
    private final String clusterId;
    private final long segmentBytes;
    private final LongSupplier wallClock;
    /** The leader epoch in every segment header and record (0 without high availability). */
    private final long epoch;
    /** Where this epoch took over the log; in every segment header of the epoch. */
    private final WalSegmentHeader.Fence fence;
    /**
     * Asked before each append, before a new segment is created and after each fsync before its answer: false once this
     * master may no longer own the log (its lease lapsed).
     */
    private final java.util.function.BooleanSupplier mayCreateSegment;
    /** Buffered bytes at which the writer starts without waiting for a waiter. */
    static final int EAGER_WRITE_BYTES = 1 << 20;
    /** How long records nobody waits for may stay buffered. */
    static final long IDLE_WRITE_NANOS = 10_000_000L;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
    private ByteBuffer buffer = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
    private ByteBuffer spare = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);
    private long lastAppended;
    private volatile long lastDurable;
    private IOException failure;
    private boolean closing;

    /** Numbers KV event batches per group commit (null: events are off). Set before the log takes changes. */
    private volatile KvEventBatcher kvEvents;

    private FileChannel segment;
    /** The segment being written, for failure messages (writer thread only, and the constructor). */
    private Path segmentPath;
    private volatile java.util.function.Consumer<String> failureListener;
    private long segmentSize;
    /** The segment holds durable zeros from {@link #segmentSize} up to here (writer thread only). */
    private long zeroedEnd;
    /** Cleared when writing zeros ahead fails: records are then appended, which is slower but as safe. */
    private boolean zeroAhead = true;
    private final Thread writer;
    // Written by the writer thread only; adders so that a scrape reads them without a lock.
    private final LongAdder syncs = new LongAdder();
    private final LongAdder bytesWritten = new LongAdder();
    private final LongAdder recordsWritten = new LongAdder();
    private final LongAdder syncNanos = new LongAdder();

    /**
     * Opens the log for appending after {@code lastSequence} (the last record recovery saw), in a new
     * segment: a segment that may end in a torn record is never appended to. Each segment's header names
     * {@code clusterId} (the root's layout record's).
     */
    public WriteAheadLog(Path dir, String clusterId, long lastSequence, long segmentBytes, LongSupplier wallClock) throws IOException {
        this(dir, clusterId, lastSequence, segmentBytes, wallClock, 0, WalSegmentHeader.Fence.NONE, () -> true);
    }

    /**
     * A leader's log under high availability: every segment header carries {@code epoch} and {@code fence}, every
     * record {@code epoch}, and no segment is created once {@code mayCreateSegment} says no (the log then fails).
     */
    public WriteAheadLog(Path dir, String clusterId, long lastSequence, long segmentBytes, LongSupplier wallClock, long epoch,
                         WalSegmentHeader.Fence fence, java.util.function.BooleanSupplier mayCreateSegment) throws IOException {
        this.epoch = epoch;
        this.fence = fence;
        this.mayCreateSegment = mayCreateSegment;
        this.dir = dir;
        this.clusterId = clusterId;
        this.segmentBytes = segmentBytes;
        this.wallClock = wallClock;
        this.lastAppended = lastSequence;
        this.lastDurable = lastSequence;
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw IoErrors.named("create state directory", dir, e);
        }
        openSegment(lastSequence + 1);
        this.writer = new Thread(this::writeLoop, "mcctl-wal-writer");
        writer.setDaemon(true);
        writer.start();
    }

    /** Frames {@code record} with the next sequence and the wall-clock time; returns its sequence. */
    public long append(WalRecord.Builder record) {
        return append(record, null);
    }

    /** {@link #append(WalRecord.Builder)} of a record that announces a KV event for {@code announcingTenant} (null: none). */
    private long append(WalRecord.Builder record, String announcingTenant) {
        // Encoded before the lock is taken: the lock is shared by every writer, the encoding is not. Sequence and time
        // (fields 1 and 2) are written under the lock in front of the rest, which gives the very bytes protobuf would
        // give for the whole record.
        byte[] body = record.clearSequence().clearTimeMs().clearLeaderEpoch().build().toByteArray();
        return appendFrame(body.length, out -> out.put(body), announcingTenant);
    }

    /**
     * Numbers the KV event batches of every group commit from now on ({@code batcher}; null: off): each group whose
     * records announce KV events ends with a {@code KvEventsSealed} record, durable with them.
     */
    public void numberKvEvents(KvEventBatcher batcher) {
        this.kvEvents = batcher;
    }

    /** Appends an {@code Allocated} record, encoded from its fields (see {@link WalRecordEncoder}). */
    public long appendAllocated(String tenant, String key, Placement placement, long deadlineMs, boolean overwrite, boolean pin) {
        return appendFrame(WalRecordEncoder.allocatedSize(tenant, key, placement, deadlineMs, overwrite, pin),
                out -> WalRecordEncoder.putAllocated(out, tenant, key, placement, deadlineMs, overwrite, pin));
    }

    /** Appends a {@code Committed} record, encoded from its fields; {@code replaced} null when none was. */
    public long appendCommitted(String tenant, String key, Placement placement, Placement replaced, long replacedReleaseMs, boolean pinned) {
        return appendFrame(WalRecordEncoder.committedSize(tenant, key, placement, replaced, replacedReleaseMs, pinned),
                out -> WalRecordEncoder.putCommitted(out, tenant, key, placement, replaced, replacedReleaseMs, pinned));
    }

    /** This log as the page service's change log: allocations and commits encoded from their fields. */
    public ChangeLog changeLog() {
        return new ChangeLog() {
            @Override
            public long append(Change change) {
                if (change instanceof Change.Allocated a) {
                    return appendAllocated(a.tenant(), a.key(), a.placement(), a.deadlineMs(), a.overwrite(), a.pin());
                } else if (change instanceof Change.Committed c && !c.announces()) {
                    return appendCommitted(c.tenant(), c.key(), c.placement(), c.replaced(), c.replacedReleaseMs(), c.pinned());
                }
                String announcing = kvEvents != null && Change.announcesEvent(change) ? tenantOf(change) : null;
                return WriteAheadLog.this.append(ChangeCodec.encode(change), announcing);
            }

            @Override
            public long durableSequence() {
                return lastDurable;
            }
        };
    }

    /**
     * Frames a record whose change (fields 3 and up) {@code putBody} puts in exactly {@code bodyLength} bytes, behind
     * its sequence and time, under the lock; returns its sequence.
     */
    private static String tenantOf(Change change) {
        return change instanceof Change.Committed c ? c.tenant() : ((Change.Removed) change).tenant();
    }

    private long appendFrame(int bodyLength, Consumer<ByteBuffer> putBody) {
        return appendFrame(bodyLength, putBody, null);
    }

    private long appendFrame(int bodyLength, Consumer<ByteBuffer> putBody, String announcingTenant) {
        lock.lock();
        try {
            if (failure != null) {
                throw new ChangeLog.Refused("the write-ahead log failed and takes no more records: " + failure.getMessage(), failure);
            }
            if (epoch > 0 && !mayCreateSegment.getAsBoolean()) {
                // A leader past its lease deadline: a newer leader may hold the log, so nothing more goes in (what
                // does, after that leader's fence, would never be replayed: this only keeps the answer honest).
                throw new ChangeLog.Refused("this master no longer holds its leader lease (epoch " + epoch + "): it takes no changes", null);
            }
            long sequence = lastAppended + 1;
            long timeMs = wallClock.getAsLong();
            int payloadLength = 1 + WalRecordEncoder.varintSize(sequence) + 1 + WalRecordEncoder.varintSize(timeMs) + bodyLength
                    + (epoch > 0 ? 1 + WalRecordEncoder.varintSize(epoch) : 0);
            if (buffer.remaining() < payloadLength + FrameCodec.HEADER_BYTES) {
                ByteBuffer bigger = ByteBuffer.allocate(Math.max(buffer.capacity() * 2, buffer.position() + payloadLength + 64))
                        .order(ByteOrder.LITTLE_ENDIAN);
                buffer.flip();
                bigger.put(buffer);
                buffer = bigger;
            }
            int frame = buffer.position();
            buffer.position(frame + FrameCodec.HEADER_BYTES);
            buffer.put((byte) 0x08); // field 1, varint
            WalRecordEncoder.putVarint(buffer, sequence);
            buffer.put((byte) 0x10); // field 2, varint
            WalRecordEncoder.putVarint(buffer, timeMs);
            putBody.accept(buffer);
            if (epoch > 0) {
                buffer.put((byte) 0x78); // field 15, varint: last, where protobuf puts the highest field number
                WalRecordEncoder.putVarint(buffer, epoch);
            }
            int written = buffer.position() - frame - FrameCodec.HEADER_BYTES;
            if (written != payloadLength) {
                // An encoder wrote other than it sized: the frame would not read back. Dropped, not logged.
                buffer.position(frame);
                throw new IllegalStateException("a log record was encoded to " + written + " bytes but sized " + payloadLength);
            }
            FrameCodec.putHeader(buffer, frame, payloadLength);
            lastAppended = sequence;
            if (announcingTenant != null) {
                KvEventBatcher batcher = kvEvents;
                if (batcher != null) {
                    batcher.appended(announcingTenant, sequence);
                }
            }
            if (frame == 0 || buffer.position() >= EAGER_WRITE_BYTES) {
                // The writer is woken by whoever waits for these records (whenDurable), not by each append: a batch
                // call appends all its records first and then shares one fsync, instead of the writer starting on its
                // first record and the rest waiting for a second fsync. The first record of a batch starts the idle
                // timer; a full buffer is written at once.
                work.signal();
            }
            return sequence;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Completes once every record appended before this call is on disk (or exceptionally if the log failed). A leader's
     * log (epoch above 0) completes it normally only if, once the records are on disk, this master still holds its
     * lease ({@code mayCreateSegment}, asked after the fsync, when the answer is due): a group commit whose fsync
     * finishes after the lease's deadline answers nothing OK, since a newer leader may have fenced the log before it.
     */
    public CompletableFuture<Void> whenDurable() {
        return whenDurable(Long.MAX_VALUE);
    }

    /**
     * {@link #whenDurable()} for the records up to {@code sequence} only (those appended later are not waited for);
     * {@code Long.MAX_VALUE}: every record appended before this call.
     */
    public CompletableFuture<Void> whenDurable(long sequence) {
        CompletableFuture<Void> written = whenWritten(sequence);
        if (epoch == 0) {
            return written;
        }
        return written.thenApply(done -> {
            if (!mayCreateSegment.getAsBoolean()) {
                throw new java.util.concurrent.CompletionException(new IOException("this master lost its leader lease (epoch " + epoch
                        + ") before the change was answered: it may be in the log, but past the lease it is not answered OK"));
            }
            return done;
        });
    }

    private CompletableFuture<Void> whenWritten(long sequence) {
        if (sequence != Long.MAX_VALUE && lastDurable >= sequence) {
            return DONE; // an answer that waits for records already on disk (an allocation inside a durable reservation)
        }
        lock.lock();
        try {
            if (failure != null) {
                return CompletableFuture.failedFuture(failure);
            }
            long upTo = Math.min(sequence, lastAppended);
            if (lastDurable >= upTo) {
                return CompletableFuture.completedFuture(null);
            }
            CompletableFuture<Void> future = new CompletableFuture<>();
            // Waiters stay in sequence order: the writer completes them from the head. One for an earlier sequence than
            // the last waiter's goes before it (rare: an answer waiting for a reservation appended moments ago).
            if (waiters.isEmpty() || waiters.peekLast().sequence() <= upTo) {
                waiters.add(new Waiter(upTo, future));
            } else {
                insertInOrder(new Waiter(upTo, future));
            }
            work.signal();
            return future;
        } finally {
            lock.unlock();
        }
    }

    /** Caller holds the lock. */
    private void insertInOrder(Waiter waiter) {
        ArrayDeque<Waiter> later = new ArrayDeque<>();
        while (!waiters.isEmpty() && waiters.peekLast().sequence() > waiter.sequence()) {
            later.addFirst(waiters.pollLast());
        }
        waiters.add(waiter);
        waiters.addAll(later);
    }

    public long lastAppended() {
        lock.lock();
        try {
            return lastAppended;
        } finally {
            lock.unlock();
        }
    }

    public long lastDurable() {
        return lastDurable;
    }

    /** The leader epoch this log writes (0 without high availability). */
    public long epoch() {
        return epoch;
    }

    /** fsyncs so far: one per group of records written together. */
    public long syncCount() {
        return syncs.sum();
    }

    /** Bytes written to the log's segments since it opened. */
    public long bytesWritten() {
        return bytesWritten.sum();
    }

    /** Records written and made durable since the log opened. */
    public long recordsWritten() {
        return recordsWritten.sum();
    }

    /** Time spent writing and fsyncing, in seconds, since the log opened. */
    public double syncSeconds() {
        return syncNanos.sum() / 1e9;
    }

    /** Deletes every segment whose records all have sequences at or below {@code coveredSequence}. */
    public void deleteSegmentsCoveredBy(long coveredSequence) throws IOException {
        List<WalSegments.Segment> segments = WalSegments.list(dir);
        for (int i = 0; i + 1 < segments.size(); i++) {
            // A segment ends just before the next one starts.
            if (segments.get(i + 1).firstSequence() - 1 <= coveredSequence) {
                try {
                    Files.deleteIfExists(segments.get(i).path());
                } catch (IOException e) {
                    throw IoErrors.named("delete covered log segment", segments.get(i).path(), e);
                }
            }
        }
    }

    private void openSegment(long firstSequence) throws IOException {
        Path path = dir.resolve(WalSegments.fileName(firstSequence));
        segmentPath = path;
        if (!mayCreateSegment.getAsBoolean()) {
            throw new IOException("this master no longer holds its leader lease (epoch " + epoch + "): it creates no log segment");
        }
        if (Files.exists(path)) {
            java.util.Optional<WalSegmentHeader> there = WalSegmentHeader.read(path);
            if (there.isPresent() && there.get().leaderEpoch() > epoch) {
                throw new CorruptStateException(path, 0, "log segment for record " + firstSequence + " was created by the leader of epoch "
                        + there.get().leaderEpoch() + ", newer than this one of epoch " + epoch + ": another master owns the log");
            }
            // A segment of this name can exist only without records: opened by a master that stopped before its first
            // record reached the disk (recovery read every record of every segment, and cut its zeros), this one or a
            // leader of an older epoch that handed over, or died, before it wrote one. It goes, so that the new one is
            // created afresh, never opened over what is there; an older leader that still writes to it writes to a
            // file no longer in the directory, and was never answered OK for it (its lease is gone: this one leads).
            if (!holdsNoRecords(path)) {
                throw new CorruptStateException(path, 0, "log segment for record " + firstSequence + " already holds data that recovery did not read");
            }
            try {
                Files.delete(path);
            } catch (IOException e) {
                throw IoErrors.named("delete empty log segment", path, e);
            }
        }
        byte[] header = WalSegmentHeader.leader(firstSequence, clusterId, epoch, fence).encode();
        try {
            segment = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw IoErrors.named("create log segment", path, e);
        }
        try {
            ByteBuffer headerBytes = ByteBuffer.wrap(header);
            while (headerBytes.hasRemaining()) {
                segment.write(headerBytes, headerBytes.position());
            }
            segment.position(header.length);
            segmentSize = header.length;
            zeroedEnd = header.length;
            writeZerosAhead();
            if (zeroedEnd == header.length) {
                segment.force(true); // no zeros went ahead (a full disk): the header is made durable on its own
            }
        } catch (IOException e) {
            throw IoErrors.named("write the header of log segment", path, e);
        }
        try {
            DurableFiles.fsyncDirectory(dir);
        } catch (IOException e) {
            throw IoErrors.named("fsync directory", dir, e);
        }
    }

    /** Whether a segment file holds a header (or part of one) and zeros at most: no record. */
    private static boolean holdsNoRecords(Path path) throws IOException {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            ByteBuffer data = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size());
            long from = WalSegmentHeader.startsWithMagic(data) ? Math.min(WalSegmentHeader.read(path).map(WalSegmentHeader::length)
                    .orElse(WalSegmentHeader.BYTES), data.limit()) : 0;
            return WalReader.zerosFrom(data, from);
        }
    }

    /** Zeros written ahead of the records at a time, and how few may be left before more are written. */
    static final long ZERO_AHEAD_BYTES = 4 << 20;
    static final long ZERO_AHEAD_LOW_BYTES = 1 << 20;
    private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(1 << 20);

    /**
     * Writes and syncs zeros ahead of the records when fewer than {@link #ZERO_AHEAD_LOW_BYTES} are left, up to
     * {@link #ZERO_AHEAD_BYTES} ahead but not past the roll size. Writer thread only, never while a record waits
     * in a batch it has taken. On failure (a full disk, say) it stops trying: appends work without it.
     */
    private void writeZerosAhead() {
        if (!zeroAhead || zeroedEnd - segmentSize >= ZERO_AHEAD_LOW_BYTES) {
            return;
        }
        long from = Math.max(zeroedEnd, segmentSize);
        long to = Math.min(segmentSize + ZERO_AHEAD_BYTES, Math.max(segmentBytes, from));
        if (to <= from) {
            return;
        }
        try {
            for (long at = from; at < to; ) {
                ByteBuffer zeros = ZEROS.duplicate().limit((int) Math.min(ZEROS.capacity(), to - at));
                at += segment.write(zeros, at);
            }
            segment.force(false);
            zeroedEnd = to;
        } catch (IOException e) {
            zeroAhead = false;
            LOG.warn("could not write zeros ahead in the write-ahead log ({}); appending from now on", e.toString());
        }
    }

    /** Cuts the zeros after the last record, so a segment that is not the last ends at its last record. */
    private void trimZeros() throws IOException {
        if (segment.size() > segmentSize) {
            segment.truncate(segmentSize);
        }
        segment.force(true);
    }

    /**
     * Caller holds the lock, about to take the buffer: frames the record that closes the group's KV event batches, when
     * the group has any, so that it is durable with them. A log that takes no more records seals nothing (its group is
     * never answered OK either).
     */
    private Change.EventsSealed sealKvEvents() {
        KvEventBatcher batcher = kvEvents;
        if (batcher == null || failure != null || (epoch > 0 && !mayCreateSegment.getAsBoolean())) {
            return null;
        }
        Change.EventsSealed sealed = batcher.seal();
        if (sealed != null) {
            byte[] body = ChangeCodec.encode(sealed).build().toByteArray();
            appendFrame(body.length, out -> out.put(body), null);
        }
        return sealed;
    }

    /** Caller holds the lock. Returns the nanoseconds left, as {@link Condition#awaitNanos} does. */
    private long awaitNanosUninterruptibly(long nanos) {
        try {
            return work.awaitNanos(nanos);
        } catch (InterruptedException e) {
            return 0; // the writer is stopped through closing, never by interrupt: just write
        }
    }

    private void writeLoop() {
        // The loop's body is a method of its own, so that the JIT compiles it as a method. Written inline in this endless
        // loop it could only be compiled on the stack, late (measured under offloads: interpreted for the first 15 s), and
        // anew each time a branch the compiled loop had not seen taken sent the writer back to the interpreter.
        while (writeOneBatch()) {
            // the next batch
        }
    }

    /** Waits for records to write, writes and fsyncs them and answers their waiters; false once the writer is to stop. */
    private boolean writeOneBatch() {
        ByteBuffer batch;
        long upTo;
        long records;
        Change.EventsSealed sealed;
        long sealedAt;
        lock.lock();
        try {
            while (!closing) {
                if (buffer.position() == 0) {
                    work.awaitUninterruptibly();
                } else if (!waiters.isEmpty() || buffer.position() >= EAGER_WRITE_BYTES) {
                    break;
                } else if (awaitNanosUninterruptibly(IDLE_WRITE_NANOS) <= 0) {
                    break; // records nobody waits for (the reaper's, say) are written within IDLE_WRITE_NANOS
                }
            }
            if (buffer.position() == 0) {
                return false; // closing, nothing left
            }
            sealed = sealKvEvents();
            sealedAt = sealed == null ? 0 : lastAppended;
            batch = buffer;
            buffer = spare;
            buffer.clear();
            spare = batch;
            records = lastAppended - lastDurable; // the writer made everything up to lastDurable durable, and no more
            upTo = lastAppended;
        } finally {
            lock.unlock();
        }
        batch.flip();
        long durableEnd = segmentSize;
        long began = System.nanoTime();
        int bytes = batch.remaining();
        try {
            while (batch.hasRemaining()) {
                segmentSize += segment.write(batch);
            }
        } catch (IOException e) {
            cutBack(durableEnd);
            fail(IoErrors.describe("the write-ahead log failed: write to", segmentPath, e), e);
            return false;
        }
        try {
            segment.force(false);
        } catch (IOException e) {
            cutBack(durableEnd);
            fail(IoErrors.describe("the write-ahead log failed: fsync of", segmentPath, e), e);
            return false;
        }
        syncNanos.add(System.nanoTime() - began);
        syncs.increment();
        bytesWritten.add(bytes);
        recordsWritten.add(records);
        lastDurable = upTo;
        List<Waiter> done = new ArrayList<>();
        lock.lock();
        try {
            while (!waiters.isEmpty() && waiters.peek().sequence() <= upTo) {
                done.add(waiters.poll());
            }
        } finally {
            lock.unlock();
        }
        for (Waiter waiter : done) {
            waiter.future().complete(null);
        }
        if (sealed != null && (epoch == 0 || mayCreateSegment.getAsBoolean())) {
            // Announced only when a caller could be answered OK for the group (a leader past its lease is not).
            kvEvents.durable(sealed, sealedAt);
        }
        // Housekeeping after the waiters are answered: no commit waits for it, only the next batch does.
        if (segmentSize < segmentBytes) {
            writeZerosAhead();
            return true;
        }
        Path full = segmentPath;
        try {
            trimZeros();
            segment.close();
        } catch (IOException e) {
            fail(IoErrors.describe("the write-ahead log failed: truncate and fsync of full segment", full, e), e);
            return false;
        }
        try {
            openSegment(upTo + 1);
        } catch (IOException e) {
            // openSegment names the operation, the file and the reason itself
            fail("the write-ahead log failed starting the segment after " + full.getFileName() + ": " + IoErrors.reason(e), e);
            return false;
        }
        return true;
    }

    /**
     * Cuts what a failed write left in the segment (whole records, a torn one) back to {@code durableEnd}, the end of the
     * last durable record, so that a restart replays exactly the changes that were durable, which are the ones readers
     * could see: the others' callers are told their outcome is unknown, and without the cut some of them would come
     * back and some not, by where the write stopped. The cut is durable before any caller is told. If it fails too (the
     * device is gone), a restart may replay some of them; it says so in the log. Writer thread only.
     */
    private void cutBack(long durableEnd) {
        try {
            segment.truncate(durableEnd);
            segment.force(true);
            segmentSize = durableEnd;
            zeroedEnd = durableEnd;
        } catch (IOException e) {
            LOG.warn("could not cut the failed write off {} back to byte {} ({}): a restart may replay changes whose callers were "
                    + "told the outcome is unknown, none that a reader was shown", segmentPath, durableEnd, IoErrors.describe("truncate", segmentPath, e));
        }
    }

    /**
     * The log is broken: every waiter and every later append or wait gets {@code error}, and the failure listener is
     * told once, with {@code reason}: one line naming the operation, the file and the system's error. A failed write or fsync is never retried: after
     * a failed fsync the kernel may have dropped the dirty pages, so a retry that succeeds proves nothing. Writer
     * thread only.
     */
    private void fail(String reason, IOException error) {
        List<Waiter> failed;
        failedAtMillis = System.currentTimeMillis();
        lock.lock();
        try {
            failure = new IOException(reason, error);
            failed = new ArrayList<>(waiters);
            waiters.clear();
        } finally {
            lock.unlock();
        }
        java.util.function.Consumer<String> listener = failureListener;
        if (listener != null) {
            listener.accept(reason);
        } else {
            LOG.error("{}", reason);
        }
        for (Waiter waiter : failed) {
            waiter.future().completeExceptionally(failure);
        }
    }

    /** When the log failed (a write or an fsync), in milliseconds since the epoch; 0 while it has not. Read without the lock. */
    private volatile long failedAtMillis;

    /** When a write or fsync of the log failed, in milliseconds since the epoch; 0 while none has. */
    public long failedAtMillis() {
        return failedAtMillis;
    }

    /** Told once, with a one-line reason, when the log fails. */
    public void onFailure(java.util.function.Consumer<String> listener) {
        this.failureListener = listener;
    }



    /** Writes what is buffered, then stops the writer and closes the segment. */
    @Override
    public void close() throws IOException {
        lock.lock();
        try {
            closing = true;
            work.signal();
        } finally {
            lock.unlock();
        }
        try {
            writer.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            if (!writer.isAlive() && segment.isOpen()) {
                trimZeros();
            }
        } finally {
            segment.close();
        }
    }
}
