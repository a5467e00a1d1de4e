package io.mcctl.master.client;

import com.google.protobuf.ByteString;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessResponse;
import io.mcctl.master.proto.v1.RenewDistributedPageAllocationResponse;
import io.mcctl.master.protocol.PackedPlacements;
import io.mcctl.master.protocol.Placement;
import io.mcctl.storage.io.BucketFileMissingException;
import io.mcctl.storage.io.BucketFileIo;
import io.mcctl.storage.io.OpenFiles;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

/**
 * Offload: allocate pages for a batch, pwrite each object at the place the master gave (never a bucket
 * computed here), fsync the files written, check that each open file written through is still the bucket file at its
 * path (a file deleted or replaced under this node holds bytes no other node can read: the objects are written again
 * into the file now there, or fail), then notify with each object's CRC32C. A key whose write fails has its pages freed
 * at once, so nothing leaks until the allocation deadline.
 *
 * <p>The writer fences itself: a shared file cannot refuse a late pwrite, so the writer never starts one once its
 * own monotonic clock, started before the allocate request went out, says the allocation deadline (less a margin)
 * has passed. Objects are written in chunks of at most {@link #CHUNK_BYTES}, the clock checked before each; a write
 * that would outlast the deadline renews the batch's allocations instead of racing them. The master keeps an
 * expired allocation's pages from reuse for a grace period after the deadline, which covers a writer stalled
 * between its check and its pwrite for less than that.
 */
public final class TierWriter {

    /** Most bytes one pwrite carries, so the deadline is checked often and memory stays flat whatever the object's size. */
    public static final int CHUNK_BYTES = 4 << 20;

    /**
     * An object to offload: its key and its bytes, either in memory (possibly in several parts) or in a file read chunk by
     * chunk; and the engine KV blocks it holds ({@code kvBlocks}, null for none), announced to KV-aware routers
     * (docs/wire-protocol.md, "KV events").
     */
    public record ObjectSource(String key, List<ByteBuffer> parts, Path file, long fileBytes, io.mcctl.master.proto.v1.KvBlocks kvBlocks) {
        public ObjectSource(String key, List<ByteBuffer> parts, Path file, long fileBytes) {
            this(key, parts, file, fileBytes, null);
        }

        public ObjectSource(String key, List<ByteBuffer> parts) {
            this(key, parts, null, 0);
        }

        /** This object, holding the engine KV blocks {@code blocks}. */
        public ObjectSource withKvBlocks(io.mcctl.master.proto.v1.KvBlocks blocks) {
            return new ObjectSource(key, parts, file, fileBytes, blocks);
        }

        /** The first {@code bytes} bytes of {@code file}, read as they are written. */
        public static ObjectSource ofFile(String key, Path file, long bytes) {
            return new ObjectSource(key, List.of(), file, bytes);
        }

        public long size() {
            if (file != null) {
                return fileBytes;
            }
            long size = 0;
            for (ByteBuffer part : parts) {
                size += part.remaining();
            }
            return size;
        }
    }

    /** What happened to one key. */
    public record Outcome(String key, ErrorCode code, String message, DistributedDiskDescriptor descriptor) {
        public boolean ok() {
            return code == ErrorCode.OK;
        }
    }

    /** Called at points of an offload; for tests that stop a writer there. Does nothing unless overridden. */
    public interface Listener {
        Listener NONE = new Listener() {
        };

        /** The batch's pages are allocated; nothing is written yet. */
        default void allocated(List<String> keys) {
        }

        /** A chunk of {@code key} at {@code done} bytes into it is about to be written (the fence is checked after this). */
        default void beforeChunk(String key, long done) {
        }

        /** Every object is written and synced; the notify is about to go out. */
        default void beforeNotify(List<String> keys) {
        }
    }

    /** Pause between notify attempts while the master is restarting: doubled each time up to the last. */
    private static final long[] NOTIFY_BACKOFF_MILLIS = {50, 100, 200, 400, 800, 1000};

    private final TierNode node;
    private final Listener listener;
    private final int chunkBytes;

    public TierWriter(TierNode node) {
        this(node, Listener.NONE);
    }

    public TierWriter(TierNode node, Listener listener) {
        this(node, listener, CHUNK_BYTES);
    }

    /** @param chunkBytes most bytes per pwrite (from 1 to {@link #CHUNK_BYTES}) */
    public TierWriter(TierNode node, Listener listener, int chunkBytes) {
        if (chunkBytes < 1 || chunkBytes > CHUNK_BYTES) {
            throw new IllegalArgumentException("chunk of " + chunkBytes + " bytes: allowed is 1 to " + CHUNK_BYTES);
        }
        this.node = node;
        this.listener = listener;
        this.chunkBytes = chunkBytes;
    }

    /**
     * The writer's own view of its allocations' deadline, on {@link System#nanoTime()}: the last moment it may start a
     * pwrite ({@code fenceNanos}, the deadline less a margin), and when to renew.
     */
    private static final class Fence {
        long deadlineNanos;
        long fenceNanos;
        long renewAtNanos;

        /** @param startNanos read before the request that set this deadline was sent */
        void set(long startNanos, long deadlineMs) {
            long deadline = TimeUnit.MILLISECONDS.toNanos(deadlineMs);
            // A tenth of the deadline, at least 50 ms and at most 2 s: room for a chunk's pwrite once started.
            long margin = Math.min(TimeUnit.SECONDS.toNanos(2), Math.max(TimeUnit.MILLISECONDS.toNanos(50), deadline / 10));
            deadlineNanos = startNanos + deadline;
            fenceNanos = deadlineNanos - margin;
            renewAtNanos = startNanos + deadline / 2;
        }

        boolean passed(long now) {
            return now - fenceNanos >= 0;
        }

        /** Time to keep for writing after a wait: the allocation must still have most of its deadline for its bytes. */
        long margin() {
            return (deadlineNanos - fenceNanos) * 4;
        }
    }

    /**
     * Keys refused for room that the master says is due (pages in quarantine behind read leases, released in
     * {@code retry_after_ms}) are asked for again once it is, for at most {@link #MAX_WAIT_FOR_ROOM_MILLIS} in all and
     * only while the batch's first allocations have time left to be written; the answers replace the refusals in
     * {@code results}. The fence stays the first allocation's, the earliest deadline of the batch.
     */
    private void waitForRoom(List<AllocationResult> results, List<String> keys, List<String> tenants, List<Long> sizes,
                             boolean overwrite, boolean pin, Fence fence) {
        long waitedMillis = 0;
        while (true) {
            List<Integer> retry = new ArrayList<>();
            long after = 0;
            for (int i = 0; i < results.size(); i++) {
                KeyError status = results.get(i).getStatus();
                if (status.getError() == ErrorCode.NO_AVAILABLE_HANDLE && status.getRetryAfterMs() > 0) {
                    retry.add(i);
                    after = after == 0 ? status.getRetryAfterMs() : Math.min(after, status.getRetryAfterMs());
                }
            }
            if (retry.isEmpty() || waitedMillis + after > MAX_WAIT_FOR_ROOM_MILLIS
                    || fence.passed(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(after) + fence.margin())) {
                return;
            }
            try {
                Thread.sleep(after);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            waitedMillis += after;
            List<String> retryKeys = new ArrayList<>(retry.size());
            List<String> retryTenants = new ArrayList<>(retry.size());
            List<Long> retrySizes = new ArrayList<>(retry.size());
            for (int i : retry) {
                retryKeys.add(keys.get(i));
                retryTenants.add(tenants.get(i));
                retrySizes.add(sizes.get(i));
            }
            BatchAllocateDistributedPageResponse again = node.master().batchAllocate(retryKeys, retryTenants, retrySizes, overwrite, pin);
            for (int j = 0; j < retry.size(); j++) {
                results.set(retry.get(j), again.getResults(j));
            }
        }
    }

    /** Longest a batch waits in all for room the master says is due from quarantine: a few read leases. */
    static final long MAX_WAIT_FOR_ROOM_MILLIS = 15_000;

    public List<Outcome> offload(String tenant, List<ObjectSource> objects, boolean overwrite) {
        return offload(tenant, objects, overwrite, false);
    }

    /** {@code pin}: the objects are soft-pinned once committed (evicted only when nothing unpinned is left). */
    public List<Outcome> offload(String tenant, List<ObjectSource> objects, boolean overwrite, boolean pin) {
        int n = objects.size();
        List<String> keys = new ArrayList<>(n);
        List<Long> sizes = new ArrayList<>(n);
        for (ObjectSource object : objects) {
            keys.add(object.key());
            sizes.add(object.size());
        }
        List<String> tenants = Collections.nCopies(n, tenant);
        Fence fence = new Fence();
        long allocateSent = System.nanoTime();
        BatchAllocateDistributedPageResponse allocated = node.master().batchAllocatePacked(keys, tenants, sizes, overwrite, pin);
        fence.set(allocateSent, allocated.getDeadlineMs());
        // A master too old to know the packed flag answers one result per key; the notify then goes out as it knows it.
        boolean packed = n > 0 && allocated.getResultsCount() == 0;

        Outcome[] outcomes = new Outcome[n];
        DistributedDiskDescriptor[] places = new DistributedDiskDescriptor[n];
        List<AllocationResult> results = packed ? unpack(allocated, n) : new ArrayList<>(allocated.getResultsList());
        waitForRoom(results, keys, tenants, sizes, overwrite, pin, fence);
        List<String> allocatedKeys = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            AllocationResult result = results.get(i);
            if (result.getStatus().getError() != ErrorCode.OK) {
                outcomes[i] = new Outcome(keys.get(i), result.getStatus().getError(), result.getStatus().getMessage(), null);
            } else {
                places[i] = result.getDistributedDisk();
                allocatedKeys.add(keys.get(i));
            }
        }
        if (!allocatedKeys.isEmpty()) {
            listener.allocated(allocatedKeys);
        }
        List<DistributedDiskDescriptor> writtenDescriptors = new ArrayList<>();
        List<Integer> failed = new ArrayList<>();
        // Per bucket file, the open file this batch's first write there went through: checked against the path before notify.
        Map<Path, OpenFiles.OpenFile<?>> opened = new LinkedHashMap<>();
        Chunk chunk = new Chunk(objects);
        Writes writes = new Writes(tenant, keys, objects, places, outcomes, failed, fence, chunk);
        List<Integer> toWrite = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (places[i] == null || outcomes[i] != null) {
                continue; // not allocated, or lost to a renewal the master refused
            }
            Path file = Path.of(places[i].getFilePath());
            try {
                if (!opened.containsKey(file)) {
                    opened.put(file, node.openForWrite(file));
                }
                toWrite.add(i);
            } catch (IOException | RuntimeException e) {
                failed.add(i);
                outcomes[i] = new Outcome(keys.get(i), ErrorCode.INTERNAL_ERROR, writeFailure(file, e), places[i]);
            }
        }
        List<Integer> written = writes.write(toWrite);
        flushAndVerify(keys, places, outcomes, written, failed, opened, writes);
        for (int i = 0; i < n; i++) {
            if (places[i] != null && outcomes[i] != null && !failed.contains(i)) {
                failed.add(i); // lost to a renewal the master refused
            }
        }
        written.removeIf(i -> outcomes[i] != null);
        for (int i : written) {
            writtenDescriptors.add(places[i]);
        }
        if (!failed.isEmpty()) {
            freeFailed(tenant, keys, outcomes, failed);
        }
        if (!written.isEmpty()) {
            List<String> writtenKeys = new ArrayList<>(written.size());
            for (int i : written) {
                writtenKeys.add(keys.get(i));
            }
            listener.beforeNotify(writtenKeys);
            List<KeyError> notified = notifyWithinDeadline(writtenKeys, Collections.nCopies(written.size(), tenant), writtenDescriptors,
                    packed, fence, kvBlocksOf(objects, written));
            for (int k = 0; k < written.size(); k++) {
                int i = written.get(k);
                KeyError status = notified.get(k);
                outcomes[i] = new Outcome(keys.get(i), status.getError(), status.getMessage(), writtenDescriptors.get(k));
                if (status.getError() == ErrorCode.OK) {
                    node.metrics().pagesWritten.inc(node.pagesFor(writtenDescriptors.get(k).getObjectSize()));
                }
            }
        }
        List<Outcome> list = new ArrayList<>(n);
        Collections.addAll(list, outcomes);
        return list;
    }

    /** Times a batch writes its objects in a bucket file again when the file keeps being replaced under it, before it gives up. */
    static final int MAX_REWRITES = 2;

    /**
     * Makes the batch's writes durable and checks, before anything is notified, that each open file they went through is
     * still the bucket file at its path ({@link TierNode#syncAll}): bytes written into a file deleted or replaced under this
     * node are in no file another node can read, and acknowledging them would lose them. Where the path now names another
     * file (created again, or restored), the objects written there are written again through it and checked again, up to
     * {@link #MAX_REWRITES} times; where it names none, or the flush failed, they fail (and their pages are freed).
     */
    private void flushAndVerify(List<String> keys, DistributedDiskDescriptor[] places, Outcome[] outcomes, List<Integer> written,
                                List<Integer> failed, Map<Path, OpenFiles.OpenFile<?>> opened, Writes writes) {
        Map<Path, List<Integer>> byFile = new LinkedHashMap<>();
        for (int i : written) {
            byFile.computeIfAbsent(Path.of(places[i].getFilePath()), f -> new ArrayList<>()).add(i);
        }
        Map<Path, OpenFiles.OpenFile<?>> pending = new LinkedHashMap<>();
        for (Path file : byFile.keySet()) {
            pending.put(file, opened.get(file));
        }
        for (int round = 0; !pending.isEmpty(); round++) {
            Map<Path, TierNode.Flushed> flushed = node.syncAll(pending);
            Map<Path, OpenFiles.OpenFile<?>> again = new LinkedHashMap<>();
            List<Integer> rewrite = new ArrayList<>();
            for (Map.Entry<Path, OpenFiles.OpenFile<?>> entry : pending.entrySet()) {
                Path file = entry.getKey();
                TierNode.Flushed result = flushed.get(file);
                if (result.failed() == null && result.current() == entry.getValue()) {
                    continue; // durable, in the file every node reads
                }
                String failure = result.failed() instanceof BucketFileMissingException missing ? "write failed: " + missing.getMessage()
                        : result.failed() != null ? "fsync of " + file + " failed: " + result.failed().getMessage()
                        : round == MAX_REWRITES ? "write failed: bucket file " + file + " was replaced under this node " + (round + 1)
                        + " times in a row while the batch wrote into it; nothing was committed, write it again" : null;
                for (int i : byFile.get(file)) {
                    if (outcomes[i] != null) {
                        continue; // lost to a renewal the master refused, under a rewrite
                    }
                    if (failure != null) {
                        outcomes[i] = new Outcome(keys.get(i), ErrorCode.INTERNAL_ERROR, failure, places[i]);
                        failed.add(i);
                    } else {
                        rewrite.add(i);
                    }
                }
                if (failure == null) {
                    again.put(file, result.current());
                }
            }
            for (int i : writes.write(rewrite)) {
                node.metrics().staleFileRewrites.inc();
            }
            pending = again;
        }
    }

    /** The buffer objects read from files are written through, made at the first such object and kept for the batch. */
    private final class Chunk {
        private final List<ObjectSource> objects;
        private ByteBuffer buffer;

        Chunk(List<ObjectSource> objects) {
            this.objects = objects;
        }

        ByteBuffer buffer() {
            if (buffer == null) {
                buffer = ByteBuffer.allocate((int) Math.min(chunkBytes, Math.max(1, maxFileBytes(objects))));
            }
            return buffer;
        }
    }

    /**
     * A packed allocation's answer as one result per key: the placement's descriptor, or the key's error with the
     * master's message and retry hint (a bare code when the master sent none).
     */
    private List<AllocationResult> unpack(BatchAllocateDistributedPageResponse allocated, int n) {
        PackedPlacements placements = PackedPlacements.of(allocated.getPlacements(), n);
        List<AllocationResult> results = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            ErrorCode error = placements.error(i);
            AllocationResult.Builder result = AllocationResult.newBuilder();
            if (error != ErrorCode.OK) {
                results.add(result.setStatus(allocated.getErrorsOrDefault(i, KeyError.newBuilder().setError(error).build())).build());
                continue;
            }
            Placement place = placements.placement(i);
            try {
                results.add(result.setStatus(OK).setDistributedDisk(node.descriptorOf(place)).build());
            } catch (IllegalArgumentException unknownBucket) {
                // Nothing is written outside the layout: the key fails, and its pages go back at the deadline.
                results.add(result.setStatus(KeyError.newBuilder().setError(ErrorCode.INTERNAL_ERROR)
                        .setMessage("the master placed it in bucket " + place.bucket() + ", which the layout of " + node.layout().getBucketCount()
                                + " buckets does not have: nothing was written")).build());
            }
        }
        return results;
    }

    private static final KeyError OK = KeyError.newBuilder().setError(ErrorCode.OK).build();

    private static long maxFileBytes(List<ObjectSource> objects) {
        long max = 0;
        for (ObjectSource object : objects) {
            if (object.file() != null) {
                max = Math.max(max, object.fileBytes());
            }
        }
        return max;
    }

    /** The writer's fence refused a pwrite: the allocation's deadline (less the margin) has passed on the writer's clock. */
    private static final class AllocationExpiredException extends Exception {
        private static final long serialVersionUID = 1L;

        AllocationExpiredException(String message) {
            super(message);
        }
    }

    /**
     * The writes of one offload: objects written chunk by chunk, the chunks of several objects gathered into one
     * submission of at most {@link #chunkBytes} (submitted together and waited for once), the fence checked before each
     * submission and the batch's allocations renewed when half the deadline is gone: a writer fenced past its deadline
     * submits nothing more. Each object's CRC32C is taken over its bytes as they are added. Not thread-safe: one offload's.
     */
    private final class Writes {
        private final String tenant;
        private final List<String> keys;
        private final List<ObjectSource> objects;
        private final DistributedDiskDescriptor[] places;
        private final Outcome[] outcomes;
        private final List<Integer> failed;
        private final Fence fence;
        private final Chunk chunk;
        /** Per object, whether a chunk of it failed or was fenced; its later chunks are not written. */
        private final boolean[] dead;
        /** Per object being written, its CRC32C so far. */
        private CRC32C[] crcs;

        // The chunks added and not yet submitted, in order: each one's object, file, offset and bytes.
        private int pending;
        private long pendingBytes;
        private int[] pendingObject = new int[16];
        private Path[] pendingFile = new Path[16];
        private long[] pendingOffset = new long[16];
        private ByteBuffer[] pendingBytesOf = new ByteBuffer[16];
        private int[] objectOf = new int[16];

        Writes(String tenant, List<String> keys, List<ObjectSource> objects, DistributedDiskDescriptor[] places, Outcome[] outcomes,
               List<Integer> failed, Fence fence, Chunk chunk) {
            this.tenant = tenant;
            this.keys = keys;
            this.objects = objects;
            this.places = places;
            this.outcomes = outcomes;
            this.failed = failed;
            this.fence = fence;
            this.chunk = chunk;
            this.dead = new boolean[keys.size()];
        }

        /**
         * Writes objects {@code which} at their places. Each one written has its CRC32C in its place; each that failed (or
         * was fenced) has its outcome set and is added to {@code failed}; one lost to a renewal the master refused has its
         * outcome set only.
         *
         * @return the objects written, in order
         */
        List<Integer> write(List<Integer> which) {
            crcs = new CRC32C[keys.size()];
            for (int i : which) {
                if (outcomes[i] != null) {
                    continue;
                }
                dead[i] = false;
                crcs[i] = new CRC32C();
                try {
                    add(i);
                } catch (IOException | RuntimeException e) {
                    fail(i, e);
                }
            }
            submit();
            List<Integer> written = new ArrayList<>();
            for (int i : which) {
                if (outcomes[i] == null && !dead[i] && crcs[i] != null) {
                    places[i] = places[i].toBuilder().setCrc32C((int) crcs[i].getValue()).build();
                    written.add(i);
                }
            }
            return written;
        }

        /** Adds object {@code i}'s chunks, submitting whenever a submission is full (and before a file's chunk buffer is refilled). */
        private void add(int i) throws IOException {
            ObjectSource object = objects.get(i);
            Path file = Path.of(places[i].getFilePath());
            long position = places[i].getOffset();
            long size = object.size();
            long done = 0;
            if (object.file() != null) {
                ByteBuffer buffer = chunk.buffer();
                try (FileChannel source = FileChannel.open(object.file(), StandardOpenOption.READ)) {
                    while (done < size && !dead[i] && outcomes[i] == null) {
                        submit(); // the chunk buffer is about to be filled again
                        if (dead[i] || outcomes[i] != null) {
                            break;
                        }
                        buffer.clear();
                        buffer.limit((int) Math.min(buffer.capacity(), size - done));
                        while (buffer.hasRemaining()) {
                            if (source.read(buffer, done + buffer.position()) < 0) {
                                throw new EOFException(object.file() + " ended at " + (done + buffer.position()) + " bytes while being offloaded; it had "
                                        + size + " when offload began");
                            }
                        }
                        buffer.flip();
                        int length = buffer.remaining();
                        addChunk(i, file, position, buffer, done);
                        position += length;
                        done += length;
                    }
                }
                return;
            }
            for (ByteBuffer part : object.parts()) {
                ByteBuffer rest = part.duplicate();
                while (rest.hasRemaining() && !dead[i] && outcomes[i] == null) {
                    ByteBuffer piece = rest.slice();
                    piece.limit(Math.min(piece.remaining(), chunkBytes));
                    int length = piece.remaining();
                    addChunk(i, file, position, piece, done);
                    position += length;
                    done += length;
                    rest.position(rest.position() + length);
                }
            }
        }

        private void addChunk(int i, Path file, long position, ByteBuffer piece, long done) {
            listener.beforeChunk(objects.get(i).key(), done);
            if (pendingBytes + piece.remaining() > chunkBytes) {
                submit();
                if (dead[i] || outcomes[i] != null) {
                    return;
                }
            }
            node.ioFor(position, piece.remaining()); // asks for the layout again when the buckets grew past what this node knows
            if (pending == pendingObject.length) {
                int capacity = pending * 2;
                pendingObject = java.util.Arrays.copyOf(pendingObject, capacity);
                pendingFile = java.util.Arrays.copyOf(pendingFile, capacity);
                pendingOffset = java.util.Arrays.copyOf(pendingOffset, capacity);
                pendingBytesOf = java.util.Arrays.copyOf(pendingBytesOf, capacity);
                objectOf = java.util.Arrays.copyOf(objectOf, capacity);
            }
            pendingObject[pending] = i;
            pendingFile[pending] = file;
            pendingOffset[pending] = position;
            pendingBytesOf[pending] = piece;
            pending++;
            pendingBytes += piece.remaining();
        }

        /**
         * Submits the chunks added, as one batch: none of them once the fence has passed; none of an object the renewal
         * before it lost; each chunk that failed fails its object.
         */
        private void submit() {
            if (pending == 0) {
                return;
            }
            int count = pending;
            pending = 0;
            pendingBytes = 0;
            try {
                checkFence();
            } catch (AllocationExpiredException e) {
                for (int k = 0; k < count; k++) {
                    int i = pendingObject[k];
                    if (!dead[i] && outcomes[i] == null) {
                        dead[i] = true;
                        failed.add(i);
                        outcomes[i] = new Outcome(keys.get(i), ErrorCode.OBJECT_NOT_FOUND, e.getMessage(), places[i]);
                    }
                }
                java.util.Arrays.fill(pendingBytesOf, 0, count, null);
                return;
            }
            BucketFileIo.Batch batch = node.io().batch();
            for (int k = 0; k < count; k++) {
                int i = pendingObject[k];
                if (dead[i] || outcomes[i] != null) {
                    continue;
                }
                try {
                    objectOf[batch.write(pendingFile[k], pendingOffset[k], pendingBytesOf[k], crcs[i])] = i;
                } catch (RuntimeException outOfRange) {
                    fail(i, outOfRange);
                }
            }
            java.util.Arrays.fill(pendingBytesOf, 0, count, null);
            try {
                batch.run();
            } catch (IOException | RuntimeException e) {
                for (int op = 0; op < batch.size(); op++) {
                    fail(objectOf[op], e);
                }
                return;
            }
            for (int op = 0; op < batch.size(); op++) {
                IOException failure = batch.failure(op);
                if (failure != null) {
                    fail(objectOf[op], failure);
                }
            }
        }

        private void fail(int i, Exception e) {
            if (dead[i] || outcomes[i] != null) {
                return;
            }
            dead[i] = true;
            failed.add(i);
            outcomes[i] = new Outcome(keys.get(i), ErrorCode.INTERNAL_ERROR, writeFailure(Path.of(places[i].getFilePath()), e), places[i]);
        }

        /** Renews when due, then refuses to go on once the fence has passed. A key the renewal lost keeps its outcome. */
        private void checkFence() throws AllocationExpiredException {
            long now = System.nanoTime();
            if (now - fence.renewAtNanos >= 0 && !fence.passed(now)) {
                renew(tenant, keys, places, outcomes, fence);
                now = System.nanoTime();
            }
            if (fence.passed(now)) {
                throw new AllocationExpiredException("its allocation expired before the write finished (the writer was held up past the "
                        + "allocation deadline): nothing more was written, write it again");
            }
        }
    }

    /**
     * Renews every allocation of the batch this writer still holds. A key the master refuses is lost to the batch
     * (its outcome set, its place cleared); a renewal that fails as a whole leaves the fence where it was.
     */
    private void renew(String tenant, List<String> keys, DistributedDiskDescriptor[] places, Outcome[] outcomes, Fence fence) {
        List<Integer> held = new ArrayList<>();
        List<String> heldKeys = new ArrayList<>();
        List<DistributedDiskDescriptor> heldPlaces = new ArrayList<>();
        for (int k = 0; k < places.length; k++) {
            if (places[k] != null && outcomes[k] == null) {
                held.add(k);
                heldKeys.add(keys.get(k));
                heldPlaces.add(places[k]);
            }
        }
        long sent = System.nanoTime();
        RenewDistributedPageAllocationResponse renewed;
        try {
            renewed = node.master().renew(heldKeys, Collections.nCopies(heldKeys.size(), tenant), heldPlaces);
        } catch (MasterException e) {
            // Not renewed: the old fence stands, and the writer stops at it. Try again when half the time left is gone.
            long now = System.nanoTime();
            fence.renewAtNanos = now + Math.max(0, (fence.fenceNanos - now) / 2);
            return;
        }
        for (int j = 0; j < held.size(); j++) {
            KeyError status = renewed.getResults(j);
            if (status.getError() != ErrorCode.OK) {
                int k = held.get(j);
                outcomes[k] = new Outcome(keys.get(k), status.getError(), "its allocation could not be renewed: " + status.getMessage()
                        + "; nothing more was written", places[k]);
            }
        }
        fence.set(sent, renewed.getDeadlineMs());
    }

    /** The engine KV blocks of the objects {@code written}, one per object (empty for one without), or null when none has any. */
    private static List<io.mcctl.master.proto.v1.KvBlocks> kvBlocksOf(List<ObjectSource> objects, List<Integer> written) {
        List<io.mcctl.master.proto.v1.KvBlocks> blocks = null;
        for (int k = 0; k < written.size(); k++) {
            io.mcctl.master.proto.v1.KvBlocks these = objects.get(written.get(k)).kvBlocks();
            if (these != null && blocks == null) {
                blocks = new ArrayList<>(Collections.nCopies(written.size(), io.mcctl.master.proto.v1.KvBlocks.getDefaultInstance()));
            }
            if (these != null) {
                blocks.set(k, these);
            }
        }
        return blocks;
    }

    /**
     * Notifies, trying again with backoff, until the allocations' deadline on this writer's clock, while the master
     * cannot be reached (it is restarting: the call never got to it) or after the connection broke under the call (the
     * master may have committed it, and then answers OK to it again). A notify the master did not answer in time, or
     * refused for want of its log, is not repeated: its outcome is unknown, and the exception says so and how to find
     * out. Once an attempt may have reached the master, the notify's failure is outcome-unknown whatever the later
     * attempts met (a master that could not be reached afterwards says nothing of the first attempt's commit).
     *
     * @throws MasterException when the notify failed as a whole
     */
    private List<KeyError> notifyWithinDeadline(List<String> keys, List<String> tenants, List<DistributedDiskDescriptor> written,
                                                boolean packed, Fence fence, List<io.mcctl.master.proto.v1.KvBlocks> kvBlocks) {
        ByteString records = packed ? packedRecords(written) : null;
        MasterException mayHaveLanded = null; // the first failed attempt that may have reached the master
        for (int attempt = 0; ; attempt++) {
            try {
                if (!packed) {
                    return node.master().notifySuccess(keys, tenants, written, kvBlocks).getResultsList();
                }
                NotifyDistributedDiskSuccessResponse notified = node.master().notifySuccessPacked(keys, tenants, records, kvBlocks);
                List<KeyError> results = new ArrayList<>(keys.size());
                for (int k = 0; k < keys.size(); k++) {
                    results.add(notified.getErrorsOrDefault(k, OK));
                }
                return results;
            } catch (MasterException e) {
                long pause = NOTIFY_BACKOFF_MILLIS[Math.min(attempt, NOTIFY_BACKOFF_MILLIS.length - 1)];
                // A notify that may have reached the master before its connection broke is safe to send again: the
                // master answers OK to the notify of a descriptor it has committed.
                boolean resendable = e.notSent() || e.connectionLost();
                boolean retry = resendable && System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(pause) - fence.deadlineNanos < 0;
                if (mayHaveLanded == null && e.outcomeUnknown()) {
                    mayHaveLanded = e;
                }
                MasterException failure = mayHaveLanded == null || e.outcomeUnknown() ? e : MasterException.earlierAttemptMayHaveLanded(mayHaveLanded, e);
                if (!retry) {
                    throw notifyFailed(keys, failure);
                }
                try {
                    Thread.sleep(pause);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw notifyFailed(keys, failure);
                }
            }
        }
    }

    /** The written objects' placements, each with its CRC32C, as a packed notify sends them. */
    private static ByteString packedRecords(List<DistributedDiskDescriptor> written) {
        PackedPlacements records = PackedPlacements.forKeys(written.size());
        for (int k = 0; k < written.size(); k++) {
            DistributedDiskDescriptor d = written.get(k);
            records.place(k, new Placement(d.getBucket(), d.getOffset(), d.getObjectSize(), d.getCrc32C()));
        }
        return records.toByteString();
    }

    private static MasterException notifyFailed(List<String> keys, MasterException e) {
        String which = keys.size() == 1 ? keys.get(0) : keys.get(0) + " (and each of the other " + (keys.size() - 1) + " keys of the batch)";
        String message = e.outcomeUnknown()
                ? "notify of " + keys.size() + " key(s): the outcome is unknown: check with mcctl stat " + which + " (" + e.getMessage() + ")"
                : e.notSent() ? "notify of " + keys.size() + " key(s) failed: the master could not be reached before the allocation deadline: "
                + e.getMessage()
                : e.getMessage();
        return e.withMessage(message);
    }

    /** A write failure as one line; a full filesystem says how full, against what the layout promises. */
    private String writeFailure(Path file, Exception e) {
        String message = e.getMessage() == null ? e.toString() : e.getMessage();
        if (e instanceof IOException && message.contains("No space left on device")) {
            long capacity = (long) node.layout().getBucketCount() * node.layout().getBucketSize();
            String free;
            try {
                free = Files.getFileStore(file).getUsableSpace() + " bytes free";
            } catch (IOException | RuntimeException unknown) {
                free = "free space unknown (" + unknown.getMessage() + ")";
            }
            return "write failed: the filesystem under the root " + node.layout().getRootDir() + " is full (ENOSPC): the layout needs "
                    + node.layout().getBucketCount() + " x " + node.layout().getBucketSize() + " = " + capacity + " bytes, the filesystem has "
                    + free + "; its pages were freed";
        }
        return "write failed: " + message;
    }

    private void freeFailed(String tenant, List<String> keys, Outcome[] outcomes, List<Integer> failed) {
        List<String> failedKeys = new ArrayList<>();
        List<DistributedDiskDescriptor> places = new ArrayList<>();
        for (int i : failed) {
            failedKeys.add(keys.get(i));
            places.add(outcomes[i].descriptor());
        }
        try {
            List<KeyError> freed = node.master().batchFree(failedKeys, Collections.nCopies(failedKeys.size(), tenant), places).getResultsList();
            for (KeyError status : freed) {
                if (status.getError() == ErrorCode.OK) {
                    node.metrics().leaksPrevented.inc();
                }
            }
        } catch (MasterException e) {
            for (int i : failed) {
                outcomes[i] = new Outcome(keys.get(i), outcomes[i].code(), outcomes[i].message()
                        + "; freeing its pages failed too (" + e.getMessage() + "), the master reclaims them at the allocation deadline",
                        outcomes[i].descriptor());
            }
        }
    }
}
