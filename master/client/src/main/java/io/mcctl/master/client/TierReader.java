package io.mcctl.master.client;

import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.master.proto.v1.MemoryReplicas;
import io.mcctl.master.protocol.BatchLimits;
import io.mcctl.master.protocol.PackedPlacements;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.storage.io.BucketFileIo;
import io.mcctl.storage.io.BucketFileMissingException;
import io.mcctl.storage.io.ChecksumMismatchException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import com.google.common.util.concurrent.ListenableFuture;

/**
 * Get: one BatchGetDistributedPageMapping for the whole batch (answered packed), then a direct read of each object from the
 * shared bucket file (pread, or USRBIO: the node's IO) and a CRC32C check, a batch's objects read in groups submitted
 * together, on several threads at once when they are large enough to gain from it. No byte passes through the node that wrote the object. A read that would start after the mapping's
 * read lease has run out asks for the mapping again first.
 *
 * <p>Thread-safe: batches may be read from several threads at once, and share the reader's threads.
 */
public final class TierReader {

    /** How one key's read ended. */
    public enum Status { OK, NOT_FOUND, NOT_READY, CORRUPT, MOUNT_MISSING, IO_ERROR, INVALID }

    /** One key's result: its bytes when {@link Status#OK}. */
    public record Outcome(String key, Status status, String message, ByteBuffer data, DistributedDiskDescriptor descriptor) {
        public boolean ok() {
            return status == Status.OK;
        }
    }

    /** Most threads a reader may read a batch on: the calling thread and all of the node's IO threads but one. */
    public static final int MAX_READ_THREADS = TierNode.IO_THREADS;

    /** Threads a reader reads a batch on unless told: the CPUs this process may use, at most 4. */
    public static final int DEFAULT_READ_THREADS = Math.min(4, Runtime.getRuntime().availableProcessors());

    /**
     * Bytes of a batch's objects per helper thread: a small batch stays on the calling thread, since handing a read
     * to another thread costs more than a warm read of a few pages.
     */
    static final long BYTES_PER_HELPER = 256 * 1024;

    private final TierNode node;
    private final int readThreads;
    /** Helper threads left for the batches being read, {@code readThreads - 1} in all: each caller reads too. */
    private final java.util.concurrent.Semaphore readHelpers;

    /** A reader that reads each batch on up to {@link #DEFAULT_READ_THREADS} threads. */
    public TierReader(TierNode node) {
        this(node, DEFAULT_READ_THREADS);
    }

    /**
     * A reader that reads each batch on up to {@code readThreads} threads, the caller's among them; batches read at the
     * same time from several threads share them. 1 keeps every read on the calling thread.
     */
    public TierReader(TierNode node, int readThreads) {
        if (readThreads < 1 || readThreads > MAX_READ_THREADS) {
            throw new IllegalArgumentException("read threads " + readThreads + " must be from 1 to " + MAX_READ_THREADS);
        }
        this.node = node;
        this.readThreads = readThreads;
        this.readHelpers = new java.util.concurrent.Semaphore(readThreads - 1);
    }

    /** Reads each key into a new heap buffer. */
    public List<Outcome> get(String tenant, List<String> keys) {
        return get(tenant, keys, null);
    }

    /**
     * Reads key i into {@code destinations.get(i)} (from its position; it must have room for the object), so a
     * caller can reuse buffers, direct ones included, and skip an allocation and a copy per object. An
     * outcome's data is then a view of the destination's bytes.
     */
    public List<Outcome> getInto(String tenant, List<String> keys, List<ByteBuffer> destinations) {
        if (destinations.size() != keys.size()) {
            throw new IllegalArgumentException(keys.size() + " keys but " + destinations.size() + " destination buffers");
        }
        return get(tenant, keys, destinations);
    }

    /** Where the batches of {@link #getPipelined} go. */
    public interface BatchSink {
        /** Buffers to read the batch into, one per key, or null for new heap buffers. */
        List<ByteBuffer> destinations(List<String> batch);

        /** The batch's outcomes, in key order; the destinations may be reused once this returns. */
        void accept(List<Outcome> outcomes) throws IOException;
    }

    /**
     * Most keys one mapping call of {@link #getPipelined} asks for by default. A call costs the master and
     * the node far more than a key does (on a two-vCPU machine each call is a few thread hand-offs), so one
     * call covers several read batches; its leases run while those batches are read, which is what
     * {@link #shrinkLookups} keeps short of the lease.
     */
    public static final int KEYS_PER_LOOKUP = 512;

    /** Mapping calls asked for ahead of the one being read. */
    static final int LOOKUPS_AHEAD = 1;

    private record Lookahead(List<String> keys, long askedNanos, ListenableFuture<BatchGetDistributedPageMappingResponse> mappings) {
    }

    /**
     * Reads {@code keys} in batches of {@code batchSize}, handing each batch to {@code sink} in key order.
     * Mappings are asked for in calls of whole batches, with the next {@value #LOOKUPS_AHEAD} call in flight
     * while the current one's batches are read, so the round trips to the master overlap the preads. The
     * first call asks for one batch, so reading starts after one short round trip, and each later call for
     * twice as many keys as the one before, up to {@code keysPerLookup} (rounded up to whole batches). When
     * reading one call's keys takes more than a quarter of the read lease (a slow disk, a slow sink), the
     * limit halves, down to one batch; a key whose lease runs short before its read is looked up again with
     * the rest of its batch.
     */
    public void getPipelined(String tenant, List<String> keys, int batchSize, int keysPerLookup, BatchSink sink) throws IOException {
        if (batchSize < 1 || keysPerLookup < 1) {
            throw new IllegalArgumentException("batch size " + batchSize + " and keys per lookup " + keysPerLookup + " must be at least 1");
        }
        int mostKeys = roundUpToBatches(keysPerLookup, batchSize);
        int lookupKeys = batchSize;
        java.util.ArrayDeque<Lookahead> ahead = new java.util.ArrayDeque<>();
        int nextFrom = 0;
        while (nextFrom < keys.size() || !ahead.isEmpty()) {
            while (ahead.size() <= LOOKUPS_AHEAD && nextFrom < keys.size()) {
                List<String> lookup = keys.subList(nextFrom, Math.min(keys.size(), nextFrom + lookupKeys));
                ahead.add(new Lookahead(lookup, System.nanoTime(),
                        node.master().batchGetMappingAsync(lookup, Collections.nCopies(lookup.size(), tenant), true)));
                nextFrom += lookup.size();
                lookupKeys = (int) Math.min(mostKeys, 2L * lookupKeys);
            }
            Lookahead current = ahead.poll();
            BatchGetDistributedPageMappingResponse mappings = node.master().await(current.mappings());
            Lease lease = Lease.askedAt(current.askedNanos(), mappings.getLeaseMs());
            List<MappingResult> results = resultsOf(mappings, tenant, current.keys());
            for (int from = 0; from < current.keys().size(); from += batchSize) {
                int to = Math.min(current.keys().size(), from + batchSize);
                List<String> batch = current.keys().subList(from, to);
                sink.accept(readBatch(tenant, batch, sink.destinations(batch), results.subList(from, to), lease));
            }
            mostKeys = shrinkLookups(mostKeys, batchSize, System.nanoTime() - current.askedNanos(), mappings.getLeaseMs());
            lookupKeys = Math.min(lookupKeys, mostKeys);
        }
    }

    /** {@link #getPipelined} with {@link #KEYS_PER_LOOKUP} keys per mapping call. */
    public void getPipelined(String tenant, List<String> keys, int batchSize, BatchSink sink) throws IOException {
        getPipelined(tenant, keys, batchSize, KEYS_PER_LOOKUP, sink);
    }

    /** The most keys per call for the next lookups, given how long the last call's keys took from asking to read. */
    static int shrinkLookups(int lookupKeys, int batchSize, long tookNanos, long leaseMs) {
        if (tookNanos > leaseMs * 1_000_000L / 4 && lookupKeys > batchSize) {
            return roundUpToBatches(lookupKeys / 2, batchSize);
        }
        return lookupKeys;
    }

    /** {@code keys} rounded up to whole batches, and down again to whole batches under the master's batch limit. */
    private static int roundUpToBatches(int keys, int batchSize) {
        long rounded = ((long) keys + batchSize - 1) / batchSize * batchSize;
        return (int) Math.min(rounded, Math.max(batchSize, BatchLimits.MAX_BATCH / batchSize * batchSize));
    }

    /**
     * The read lease of mappings asked for at {@code startNanos}: the master counts it from no earlier, so
     * counting from the ask is safe.
     */
    private record Lease(long startNanos, long nanos) {
        static Lease askedAt(long startNanos, long leaseMs) {
            return new Lease(startNanos, leaseMs * 1_000_000L);
        }

        /** Whether a read starting now still ends well inside the lease: a tenth of it is kept for the read. */
        boolean safeNow() {
            return System.nanoTime() - startNanos <= nanos - nanos / 10;
        }
    }

    private List<Outcome> get(String tenant, List<String> keys, List<ByteBuffer> destinations) {
        long asked = System.nanoTime();
        BatchGetDistributedPageMappingResponse mappings = node.master().batchGetMappingPacked(keys, Collections.nCopies(keys.size(), tenant));
        return readBatch(tenant, keys, destinations, resultsOf(mappings, tenant, keys), Lease.askedAt(asked, mappings.getLeaseMs()));
    }

    /**
     * A lookup's answer for {@code keys} as one MappingResult per key. Lookups are asked for packed, which spares the
     * master a message, a descriptor and a path per key; the descriptors are made here from the bucket indexes. A
     * master that answered unpacked is read as it answered.
     */
    private List<MappingResult> resultsOf(BatchGetDistributedPageMappingResponse answer, String tenant, List<String> keys) {
        if (answer.getPlacements().isEmpty() && answer.getResultsCount() == keys.size()) {
            return answer.getResultsList();
        }
        PackedPlacements placements = PackedPlacements.of(answer.getPlacements(), keys.size());
        List<MappingResult> results = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            ErrorCode code = placements.error(i);
            MappingResult.Builder result = MappingResult.newBuilder();
            if (code != ErrorCode.OK) {
                KeyError why = answer.getErrorsOrDefault(i, null);
                results.add(result.setStatus(why != null ? why : KeyError.newBuilder().setError(code)
                        .setMessage(KeyRules.notFound(tenant, keys.get(i))).build()).build());
                continue;
            }
            try {
                result.setDistributedDisk(node.descriptorOf(placements.placement(i)));
            } catch (IllegalArgumentException e) {
                results.add(result.setStatus(KeyError.newBuilder().setError(ErrorCode.INTERNAL_ERROR)
                        .setMessage("the master placed key " + Quoted.of(keys.get(i)) + " in " + e.getMessage())).build());
                continue;
            }
            MemoryReplicas memory = answer.getMemoryOrDefault(i, null);
            if (memory != null) {
                result.addAllMemory(memory.getReplicasList());
            }
            results.add(result.build());
        }
        return results;
    }

    /**
     * Most bytes of objects one reading thread submits at once: a group of a batch's keys is read as one submission
     * (USRBIO: one round of one ring, whose shared memory is 16 MiB), and the lease is checked before each group.
     */
    static final long GROUP_BYTES = 16L << 20;

    /**
     * Reads one batch whose mappings arrived, its keys taken in order, in groups read as one submission each, by the
     * calling thread and up to {@link #helpers} of the node's IO threads (each with its own ring on USRBIO). A key whose
     * lease has run short is looked up again, together with the rest of the batch (what is left unread is always its
     * tail), before it is read; the fresh lease covers only this batch's keys.
     */
    private List<Outcome> readBatch(String tenant, List<String> keys, List<ByteBuffer> destinations, List<MappingResult> results, Lease lease) {
        Outcome[] outcomes = new Outcome[keys.size()];
        int helpers = helpers(results, destinations);
        // A buffer named for several keys is filled in key order, one key after another, as each read moves its position.
        boolean oneByOne = !distinct(destinations);
        try {
            int from = 0;
            while (from < keys.size()) {
                if (!lease.safeNow()) {
                    List<String> rest = keys.subList(from, keys.size());
                    long asked = System.nanoTime();
                    try {
                        BatchGetDistributedPageMappingResponse fresh = node.master().batchGetMappingPacked(rest, Collections.nCopies(rest.size(), tenant));
                        List<MappingResult> refreshed = new ArrayList<>(results.subList(0, from));
                        refreshed.addAll(resultsOf(fresh, tenant, rest));
                        results = refreshed;
                        lease = Lease.askedAt(asked, fresh.getLeaseMs());
                    } catch (MasterException e) {
                        for (int i = from; i < keys.size(); i++) {
                            outcomes[i] = new Outcome(keys.get(i), statusOf(e.code()), e.getMessage(), null, null);
                        }
                        break;
                    }
                }
                List<MappingResult> mappings = results;
                Lease held = lease;
                int[] starts = groups(mappings, from, keys.size(), oneByOne ? 1 : (keys.size() - from + helpers) / (helpers + 1));
                int taken = node.shareOut(0, starts.length - 1, helpers, held::safeNow,
                        g -> readGroup(tenant, keys, mappings, destinations, starts[g], starts[g + 1], outcomes));
                from = starts[taken];
            }
        } finally {
            readHelpers.release(helpers);
        }
        return new ArrayList<>(Arrays.asList(outcomes));
    }

    /**
     * The keys {@code from..to-1} cut into groups of consecutive keys, each of at most {@code mostKeys} keys and at most
     * {@link #GROUP_BYTES} bytes (but at least one key): the groups' first keys, then {@code to}.
     */
    static int[] groups(List<MappingResult> mappings, int from, int to, int mostKeys) {
        int[] starts = new int[to - from + 1];
        int count = 0;
        int i = from;
        while (i < to) {
            starts[count++] = i;
            long bytes = 0;
            int keys = 0;
            do {
                bytes += mappings.get(i).getDistributedDisk().getObjectSize();
                keys++;
                i++;
            } while (i < to && keys < mostKeys && bytes + mappings.get(i).getDistributedDisk().getObjectSize() <= GROUP_BYTES);
        }
        starts[count++] = to;
        return Arrays.copyOf(starts, count);
    }

    /**
     * Reads keys {@code from..to-1}: each from a node's DRAM where it has a copy, the others from the shared files in one
     * submission, each checked against its CRC32C.
     */
    private void readGroup(String tenant, List<String> keys, List<MappingResult> mappings, List<ByteBuffer> destinations, int from, int to,
                           Outcome[] outcomes) {
        BucketFileIo io = null;
        BucketFileIo.Batch batch = null;
        int[] keyOf = new int[to - from];
        ByteBuffer[] windows = new ByteBuffer[to - from];
        for (int i = from; i < to; i++) {
            MappingResult result = mappings.get(i);
            String key = keys.get(i);
            ByteBuffer destination = destinations == null ? null : destinations.get(i);
            if (result.getStatus().getError() != ErrorCode.OK) {
                outcomes[i] = new Outcome(key, statusOf(result.getStatus().getError()), result.getStatus().getMessage(), null, null);
                continue;
            }
            DramReader dram = result.getMemoryCount() == 0 ? null : node.dram();
            ByteBuffer inDram = dram == null ? null : dram.read(tenant, key, result.getMemoryList(), destination);
            DistributedDiskDescriptor place = result.getDistributedDisk();
            if (inDram != null) {
                outcomes[i] = new Outcome(key, Status.OK, "", inDram, place);
                continue;
            }
            if (place.getObjectSize() > Integer.MAX_VALUE - 8) {
                outcomes[i] = new Outcome(key, Status.INVALID, "object of " + place.getObjectSize() + " bytes is too large to read into memory", null, place);
                continue;
            }
            if (destination != null && destination.remaining() < place.getObjectSize()) {
                outcomes[i] = new Outcome(key, Status.INVALID, "object of " + place.getObjectSize() + " bytes does not fit the "
                        + destination.remaining() + " bytes left in its destination buffer", null, place);
                continue;
            }
            BucketFileIo forRange = node.ioFor(place.getOffset(), place.getObjectSize());
            if (batch == null || forRange != io) {
                // The first object, or the buckets grew under this group: what was added so far is read as it stands.
                runGroup(batch, keyOf, windows, keys, mappings, destinations, outcomes);
                io = forRange;
                batch = io.batch();
            }
            ByteBuffer window = destination == null ? ByteBuffer.allocate((int) place.getObjectSize()) : destination.duplicate();
            window.limit(window.position() + (int) place.getObjectSize());
            try {
                int op = batch.read(Path.of(place.getFilePath()), place.getOffset(), window, place.getCrc32C());
                keyOf[op] = i;
                windows[op] = window;
            } catch (IllegalArgumentException e) {
                outcomes[i] = new Outcome(key, Status.IO_ERROR, "read of " + place.getFilePath() + " failed: " + e.getMessage(), null, place);
            }
        }
        runGroup(batch, keyOf, windows, keys, mappings, destinations, outcomes);
    }

    /** Reads {@code batch} (the keys {@code keyOf}) and sets each key's outcome; the batch is emptied. */
    private void runGroup(BucketFileIo.Batch batch, int[] keyOf, ByteBuffer[] windows, List<String> keys, List<MappingResult> mappings,
                          List<ByteBuffer> destinations, Outcome[] outcomes) {
        if (batch == null || batch.size() == 0) {
            return;
        }
        long start = System.nanoTime();
        IOException whole = null;
        try {
            batch.run();
        } catch (IOException e) {
            whole = e;
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        for (int op = 0; op < batch.size(); op++) {
            int i = keyOf[op];
            DistributedDiskDescriptor place = mappings.get(i).getDistributedDisk();
            IOException failure = whole != null ? whole : batch.failure(op);
            outcomes[i] = failure != null ? failed(keys.get(i), place, failure)
                    : read(keys.get(i), place, windows[op], destinations == null ? null : destinations.get(i), seconds);
            windows[op] = null;
        }
        batch.clear();
    }

    /** The outcome of a key read into {@code window}: its bytes, the destination's position moved past them. */
    private Outcome read(String key, DistributedDiskDescriptor place, ByteBuffer window, ByteBuffer destination, double seconds) {
        ByteBuffer data;
        if (destination == null) {
            data = window.flip();
        } else {
            int end = window.position();
            data = window.duplicate().position(end - (int) place.getObjectSize()).limit(end).slice();
            destination.position(end);
        }
        node.metrics().reads.inc();
        node.metrics().readLatency.observe(seconds);
        return new Outcome(key, Status.OK, "", data, place);
    }

    /** A read's failure as the key's outcome: a miss for a checksum, the mount for a missing file, else an IO error. */
    private Outcome failed(String key, DistributedDiskDescriptor place, IOException e) {
        if (e instanceof ChecksumMismatchException) {
            node.metrics().checksumFailures.inc();
            return new Outcome(key, Status.CORRUPT, e.getMessage(), null, place);
        }
        if (e instanceof BucketFileMissingException) {
            return new Outcome(key, Status.MOUNT_MISSING, e.getMessage(), null, place);
        }
        return new Outcome(key, Status.IO_ERROR, "read of " + place.getFilePath() + " failed: " + e.getMessage(), null, place);
    }

    /**
     * Helper threads for a batch of {@code results}, taken from this reader's {@code readThreads - 1}: one per
     * {@link #BYTES_PER_HELPER} of its objects, no more than its keys less one, and only as many as other batches
     * being read at the same time have left (each of their callers reads too); none when a buffer is named twice among
     * {@code destinations}, which is then filled in key order. The caller gives them back.
     */
    private int helpers(List<MappingResult> results, List<ByteBuffer> destinations) {
        long bytes = 0;
        for (MappingResult result : results) {
            bytes += result.getDistributedDisk().getObjectSize();
        }
        int wanted = (int) Math.min(Math.min(readThreads - 1, bytes / BYTES_PER_HELPER), results.size() - 1L);
        if (wanted <= 0 || !distinct(destinations)) {
            return 0;
        }
        int taken = 0;
        while (taken < wanted && readHelpers.tryAcquire()) {
            taken++;
        }
        return taken;
    }

    /** Whether no buffer is named twice among {@code destinations} (null: new buffers, all distinct). */
    private static boolean distinct(List<ByteBuffer> destinations) {
        if (destinations == null) {
            return true;
        }
        java.util.Set<ByteBuffer> seen = Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (ByteBuffer destination : destinations) {
            if (!seen.add(destination)) {
                return false;
            }
        }
        return true;
    }

    static Status statusOf(ErrorCode code) {
        return switch (code) {
            case OBJECT_NOT_FOUND -> Status.NOT_FOUND;
            case REPLICA_IS_NOT_READY -> Status.NOT_READY;
            case INVALID_PARAMS -> Status.INVALID;
            default -> Status.IO_ERROR;
        };
    }
}
