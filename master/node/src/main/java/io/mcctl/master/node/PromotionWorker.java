package io.mcctl.master.node;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.MemoryDescriptor;
import io.mcctl.master.proto.v1.PromotionTask;
import io.mcctl.storage.io.ChecksumMismatchException;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's side of promotion into its DRAM segment: every interval it asks the master for up to
 * {@link NodeServer#PROMOTION_TASKS_PER_HEARTBEAT} tasks (PromotionObjectHeartbeat), and for each preads the source
 * pages of the shared bucket file into the range of the segment the master staged, checks their CRC32C against the
 * source's, indexes the object and notifies success; or notifies failure with the reason (CRC mismatch, short read,
 * the bucket file missing, a staged range outside the segment, ...). A node runs one only when it has both a segment
 * and the shared root.
 *
 * <p>Thread-safe: one thread of its own does all the work, and its copy buffer is that thread's alone.
 */
final class PromotionWorker implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("mcctl.node.promotion");
    private static final int COPY_CHUNK_BYTES = 256 << 10;

    private final MasterClient master;
    private final TierNode tier;
    private final DramSegment segment;
    private final String clientId;
    private final ByteBuffer chunk = ByteBuffer.allocateDirect(COPY_CHUNK_BYTES);
    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "mcctl-node-promotion");
        t.setDaemon(true);
        return t;
    });
    private String lastHeartbeatFailure;

    PromotionWorker(MasterClient master, TierNode tier, DramSegment segment, String clientId) {
        this.master = master;
        this.tier = tier;
        this.segment = segment;
        this.clientId = clientId;
    }

    void start(Duration interval) {
        long every = Math.max(1, interval.toMillis());
        thread.scheduleWithFixedDelay(this::heartbeat, every, every, TimeUnit.MILLISECONDS);
    }

    private void heartbeat() {
        long epoch = segment.epoch(); // tasks answered after a re-registration are staged under a newer one: not indexed
        List<PromotionTask> tasks;
        try {
            tasks = master.promotionHeartbeat(clientId, NodeServer.PROMOTION_TASKS_PER_HEARTBEAT);
            if (lastHeartbeatFailure != null) {
                LOG.info("promotion heartbeats answered again");
                lastHeartbeatFailure = null;
            }
        } catch (RuntimeException e) {
            if (!String.valueOf(e.getMessage()).equals(lastHeartbeatFailure)) {
                lastHeartbeatFailure = String.valueOf(e.getMessage());
                LOG.warn("promotion heartbeat failed: {} (will keep trying)", lastHeartbeatFailure);
            }
            return;
        }
        for (PromotionTask task : tasks) {
            promote(epoch, task);
        }
    }

    private void promote(long epoch, PromotionTask task) {
        String tenant = task.getTenantId();
        String key = task.getKey();
        DistributedDiskDescriptor source = task.getSource();
        MemoryDescriptor staged = task.getStaged();
        long size = source.getObjectSize();
        String problem = !staged.getClientId().equals(clientId) ? "it is staged on client " + staged.getClientId() + ", not this node"
                : staged.getSize() != size ? "its staged range has " + staged.getSize() + " bytes for a source of " + size
                : segment.checkRange(staged.getBufferAddress(), size);
        if (problem == null) {
            segment.claim(tenant, key, staged.getBufferAddress(), size);
            try {
                tier.ioFor(source.getOffset(), size).copyTo(Path.of(source.getFilePath()), source.getOffset(), size, source.getCrc32C(),
                        segment.writer(staged.getBufferAddress()), chunk);
            } catch (ChecksumMismatchException e) {
                problem = "CRC mismatch: " + e.getMessage();
            } catch (EOFException e) {
                problem = "short read: the bucket file " + source.getFilePath() + " ends before the object's " + size + " bytes at offset "
                        + source.getOffset();
            } catch (NoSuchFileException e) {
                problem = "cannot open " + source.getFilePath() + " (is the shared root mounted here?)";
            } catch (IOException | RuntimeException e) {
                problem = "read of " + source.getFilePath() + " failed: " + e.getMessage();
            }
        }
        if (problem != null) {
            LOG.warn("promotion of '{}' (tenant {}) failed: {}", key, tenant, problem);
            try {
                master.notifyPromotionFailure(clientId, tenant, key, problem);
            } catch (MasterException e) {
                LOG.warn("NotifyPromotionFailure of '{}' failed: {} (the master ends the task when this node's TTL passes)", key,
                        e.getMessage());
            }
            return;
        }
        if (!segment.index(epoch, tenant, key, staged.getBufferAddress(), size, source.getCrc32C())) {
            LOG.info("promotion of '{}' dropped: this node registered with the master again while it copied", key);
            return;
        }
        try {
            master.notifyPromotionSuccess(clientId, tenant, key, source.getCrc32C());
            LOG.debug("promoted '{}' (tenant {}, {} bytes) to offset {}", key, tenant, size, staged.getBufferAddress());
        } catch (MasterException e) {
            segment.forget(tenant, key, staged.getBufferAddress());
            LOG.warn("NotifyPromotionSuccess of '{}' refused: {}; the copy is dropped", key, e.getMessage());
        }
    }

    @Override
    public void close() {
        thread.shutdownNow();
    }
}
