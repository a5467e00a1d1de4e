package io.mcctl.master.client;

import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessResponse;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Offload: allocate pages for a batch, pwrite each object at the place the master gave (never a bucket
 * computed here), fsync the files written, then notify with each object's CRC32C. A key whose write fails
 * has its pages freed at once, so nothing leaks until the allocation deadline.
 */
public final class TierWriter {

    /** An object to offload: its key and its bytes, possibly in several parts (a gather write). */
    public record ObjectSource(String key, List<ByteBuffer> parts) {
        public long size() {
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

    private final TierNode node;

    public TierWriter(TierNode node) {
        this.node = node;
    }

    public List<Outcome> offload(String tenant, List<ObjectSource> objects, boolean overwrite) {
        int n = objects.size();
        List<String> keys = new ArrayList<>(n);
        List<Long> sizes = new ArrayList<>(n);
        for (ObjectSource object : objects) {
            keys.add(object.key());
            sizes.add(object.size());
        }
        List<String> tenants = Collections.nCopies(n, tenant);
        BatchAllocateDistributedPageResponse allocated = node.master().batchAllocate(keys, tenants, sizes, overwrite);

        Outcome[] outcomes = new Outcome[n];
        List<Integer> written = new ArrayList<>();
        List<DistributedDiskDescriptor> writtenDescriptors = new ArrayList<>();
        List<Integer> failed = new ArrayList<>();
        Set<Path> files = new LinkedHashSet<>();
        for (int i = 0; i < n; i++) {
            AllocationResult result = allocated.getResults(i);
            if (result.getStatus().getError() != ErrorCode.OK) {
                outcomes[i] = new Outcome(keys.get(i), result.getStatus().getError(), result.getStatus().getMessage(), null);
                continue;
            }
            DistributedDiskDescriptor place = result.getDistributedDisk();
            Path file = Path.of(place.getFilePath());
            try {
                int crc = node.io().write(file, place.getOffset(), objects.get(i).parts().toArray(new ByteBuffer[0]));
                files.add(file);
                written.add(i);
                writtenDescriptors.add(place.toBuilder().setCrc32C(crc).build());
            } catch (IOException | RuntimeException e) {
                failed.add(i);
                outcomes[i] = new Outcome(keys.get(i), ErrorCode.INTERNAL_ERROR, "write failed: " + e.getMessage(), place);
            }
        }
        try {
            for (Path file : files) {
                node.sync(file);
            }
        } catch (IOException e) {
            for (int k = 0; k < written.size(); k++) {
                int i = written.get(k);
                failed.add(i);
                outcomes[i] = new Outcome(keys.get(i), ErrorCode.INTERNAL_ERROR, "fsync failed: " + e.getMessage(), writtenDescriptors.get(k));
            }
            written.clear();
            writtenDescriptors.clear();
        }
        if (!failed.isEmpty()) {
            freeFailed(tenant, keys, outcomes, failed);
        }
        if (!written.isEmpty()) {
            List<String> writtenKeys = new ArrayList<>(written.size());
            for (int i : written) {
                writtenKeys.add(keys.get(i));
            }
            NotifyDistributedDiskSuccessResponse notified = node.master().notifySuccess(writtenKeys,
                    Collections.nCopies(written.size(), tenant), writtenDescriptors);
            for (int k = 0; k < written.size(); k++) {
                int i = written.get(k);
                KeyError status = notified.getResults(k);
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
