package io.mcctl.master.client;

import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.storage.io.BucketFileMissingException;
import io.mcctl.storage.io.ChecksumMismatchException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import com.google.common.util.concurrent.ListenableFuture;

/**
 * Get: one BatchGetDistributedPageMapping for the whole batch, then a direct pread of each object from the
 * shared bucket file and a CRC32C check. No byte passes through the node that wrote the object. A read that
 * would start after the mapping's read lease has run out asks for the mapping again first.
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

    private final TierNode node;

    public TierReader(TierNode node) {
        this.node = node;
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

    /** Mapping lookups asked for ahead of the batch being read. */
    static final int LOOKUPS_AHEAD = 2;

    private record Lookahead(List<String> batch, long askedNanos, ListenableFuture<BatchGetDistributedPageMappingResponse> mappings) {
    }

    /**
     * Reads {@code keys} in batches of {@code batchSize}, keeping the mapping lookups of the next
     * {@value #LOOKUPS_AHEAD} batches in flight while the current batch is read, so the round trips to
     * the master overlap the preads.
     */
    public void getPipelined(String tenant, List<String> keys, int batchSize, BatchSink sink) throws IOException {
        List<String> tenants = Collections.nCopies(batchSize, tenant);
        java.util.ArrayDeque<Lookahead> ahead = new java.util.ArrayDeque<>();
        int nextFrom = 0;
        while (nextFrom < keys.size() || !ahead.isEmpty()) {
            while (ahead.size() <= LOOKUPS_AHEAD && nextFrom < keys.size()) {
                List<String> batch = keys.subList(nextFrom, Math.min(keys.size(), nextFrom + batchSize));
                ahead.add(new Lookahead(batch, System.nanoTime(), node.master().batchGetMappingAsync(batch, tenants.subList(0, batch.size()))));
                nextFrom += batch.size();
            }
            Lookahead current = ahead.poll();
            BatchGetDistributedPageMappingResponse mappings = node.master().await(current.mappings());
            sink.accept(readBatch(tenant, current.batch(), sink.destinations(current.batch()), mappings, current.askedNanos()));
        }
    }

    private List<Outcome> get(String tenant, List<String> keys, List<ByteBuffer> destinations) {
        long leaseStart = System.nanoTime();
        BatchGetDistributedPageMappingResponse mappings = node.master().batchGetMapping(keys, Collections.nCopies(keys.size(), tenant));
        return readBatch(tenant, keys, destinations, mappings, leaseStart);
    }

    /** Reads one batch whose mappings arrived; {@code leaseStart} is when they were asked for (the lease runs from no earlier). */
    private List<Outcome> readBatch(String tenant, List<String> keys, List<ByteBuffer> destinations,
                                    BatchGetDistributedPageMappingResponse mappings, long leaseStart) {
        long leaseNanos = mappings.getLeaseMs() * 1_000_000L;
        List<Outcome> outcomes = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            String key = keys.get(i);
            MappingResult result = mappings.getResults(i);
            if (result.getStatus().getError() != ErrorCode.OK) {
                outcomes.add(new Outcome(key, statusOf(result.getStatus().getError()), result.getStatus().getMessage(), null, null));
                continue;
            }
            DistributedDiskDescriptor place = result.getDistributedDisk();
            // Keep a safety margin of a tenth of the lease for the read itself.
            if (System.nanoTime() - leaseStart > leaseNanos - leaseNanos / 10) {
                try {
                    long again = System.nanoTime();
                    GetDistributedPageMappingResponse fresh = node.master().getMapping(tenant, key);
                    place = fresh.getDistributedDisk();
                    leaseStart = again;
                    leaseNanos = fresh.getLeaseMs() * 1_000_000L;
                } catch (MasterException e) {
                    outcomes.add(new Outcome(key, statusOf(e.code()), e.getMessage(), null, null));
                    continue;
                }
            }
            outcomes.add(read(key, place, destinations == null ? null : destinations.get(i)));
        }
        return outcomes;
    }

    private Outcome read(String key, DistributedDiskDescriptor place, ByteBuffer destination) {
        if (place.getObjectSize() > Integer.MAX_VALUE - 8) {
            return new Outcome(key, Status.INVALID, "object of " + place.getObjectSize() + " bytes is too large to read into memory", null, place);
        }
        if (destination != null && destination.remaining() < place.getObjectSize()) {
            return new Outcome(key, Status.INVALID, "object of " + place.getObjectSize() + " bytes does not fit the " + destination.remaining()
                    + " bytes left in its destination buffer", null, place);
        }
        long start = System.nanoTime();
        try {
            ByteBuffer data;
            if (destination == null) {
                data = node.io().read(Path.of(place.getFilePath()), place.getOffset(), (int) place.getObjectSize(), place.getCrc32C());
            } else {
                ByteBuffer window = destination.duplicate();
                window.limit(window.position() + (int) place.getObjectSize());
                int from = window.position();
                node.io().readInto(Path.of(place.getFilePath()), place.getOffset(), window, place.getCrc32C());
                destination.position(window.position());
                data = window.duplicate().position(from).limit(window.position()).slice();
            }
            node.metrics().reads.inc();
            node.metrics().readLatency.observe((System.nanoTime() - start) / 1e9);
            return new Outcome(key, Status.OK, "", data, place);
        } catch (ChecksumMismatchException e) {
            node.metrics().checksumFailures.inc();
            return new Outcome(key, Status.CORRUPT, e.getMessage(), null, place);
        } catch (BucketFileMissingException e) {
            return new Outcome(key, Status.MOUNT_MISSING, e.getMessage(), null, place);
        } catch (IOException | IllegalArgumentException e) {
            return new Outcome(key, Status.IO_ERROR, "read of " + place.getFilePath() + " failed: " + e.getMessage(), null, place);
        }
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
