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

    public List<Outcome> get(String tenant, List<String> keys) {
        long leaseStart = System.nanoTime();
        BatchGetDistributedPageMappingResponse mappings = node.master().batchGetMapping(keys, Collections.nCopies(keys.size(), tenant));
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
            outcomes.add(read(key, place));
        }
        return outcomes;
    }

    private Outcome read(String key, DistributedDiskDescriptor place) {
        if (place.getObjectSize() > Integer.MAX_VALUE - 8) {
            return new Outcome(key, Status.INVALID, "object of " + place.getObjectSize() + " bytes is too large to read into memory", null, place);
        }
        long start = System.nanoTime();
        try {
            ByteBuffer data = node.io().read(Path.of(place.getFilePath()), place.getOffset(), (int) place.getObjectSize(), place.getCrc32C());
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
