package io.mcctl.master.client;

import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.protocol.PackedPlacements;
import io.mcctl.master.protocol.Placement;
import io.mcctl.storage.io.BucketFileMissingException;
import io.mcctl.storage.io.OpenFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

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

    // An offload's rooms: WriterFence keeps the allocations' deadline on this writer's clock, BatchWrites writes the
    // objects through the bucket IO, BatchNotify commits what was written. This class allocates (waiting for room),
    // checks each file written is still the bucket file at its path, and frees what failed.
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
     * Keys refused for room that the master says is due (pages in quarantine behind read leases, released in
     * {@code retry_after_ms}) are asked for again once it is, for at most {@link #MAX_WAIT_FOR_ROOM_MILLIS} in all and
     * only while the batch's first allocations have time left to be written; the answers replace the refusals in
     * {@code results}. The fence stays the first allocation's, the earliest deadline of the batch.
     */
    private void waitForRoom(List<AllocationResult> results, List<String> keys, List<String> tenants, List<Long> sizes,
                             boolean overwrite, boolean pin, WriterFence fence) {
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
        WriterFence fence = new WriterFence();
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
        BatchWrites writes = new BatchWrites(node, listener, chunkBytes, tenant, keys, objects, places, outcomes, failed, fence);
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
                outcomes[i] = new Outcome(keys.get(i), ErrorCode.INTERNAL_ERROR, writes.writeFailure(file, e), places[i]);
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
            List<KeyError> notified = BatchNotify.send(node.master(), writtenKeys, Collections.nCopies(written.size(), tenant),
                    writtenDescriptors, packed, fence, kvBlocksOf(objects, written));
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
                                List<Integer> failed, Map<Path, OpenFiles.OpenFile<?>> opened, BatchWrites writes) {
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

    /** A key's status when nothing went wrong; a packed answer names only the keys that failed. */
    static final KeyError OK = KeyError.newBuilder().setError(ErrorCode.OK).build();

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
