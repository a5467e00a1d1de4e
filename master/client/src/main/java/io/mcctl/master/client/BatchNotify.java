package io.mcctl.master.client;

import com.google.protobuf.ByteString;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.proto.v1.KvBlocks;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessResponse;
import io.mcctl.master.protocol.PackedPlacements;
import io.mcctl.master.protocol.Placement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The notify of a batch's written objects, which commits them. It is resent, with backoff, within the allocation
 * deadline on the writer's clock; once an attempt may have reached the master, the notify's failure is outcome unknown,
 * and the exception says how to find out.
 */
final class BatchNotify {

    /** Pause between notify attempts while the master is restarting: doubled each time up to the last. */
    private static final long[] NOTIFY_BACKOFF_MILLIS = {50, 100, 200, 400, 800, 1000};

    private BatchNotify() {
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
    static List<KeyError> send(MasterClient master, List<String> keys, List<String> tenants, List<DistributedDiskDescriptor> written,
                               boolean packed, WriterFence fence, List<KvBlocks> kvBlocks) {
        ByteString records = packed ? packedRecords(written) : null;
        MasterException mayHaveLanded = null; // the first failed attempt that may have reached the master
        for (int attempt = 0; ; attempt++) {
            try {
                if (!packed) {
                    return master.notifySuccess(keys, tenants, written, kvBlocks).getResultsList();
                }
                NotifyDistributedDiskSuccessResponse notified = master.notifySuccessPacked(keys, tenants, records, kvBlocks);
                List<KeyError> results = new ArrayList<>(keys.size());
                for (int k = 0; k < keys.size(); k++) {
                    results.add(notified.getErrorsOrDefault(k, TierWriter.OK));
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
}
