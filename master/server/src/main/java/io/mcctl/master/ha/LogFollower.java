package io.mcctl.master.ha;

import io.mcctl.master.durability.StateRecovery;
import io.mcctl.master.durability.WalReader;
import io.mcctl.master.durability.WalSegmentHeader;
import io.mcctl.master.durability.WalSegments;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Path;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A standby's copy of the state: the newest snapshot, then every log record as the leader appends it, applied through
 * the same transitions the leader applied ({@link StateRecovery#applier}). Taking over then costs only the records
 * not yet applied and the bitmaps. When the log it follows is pruned under it, or a newer leader fences records it
 * had applied, it starts again from the newest snapshot.
 *
 * <p>Not thread-safe: the master's role thread alone calls it.
 */
final class LogFollower {

    private static final Logger LOG = LoggerFactory.getLogger(LogFollower.class);

    private final Path stateDir;
    private final BucketLayout layout;
    private final String clusterId;
    private final Supplier<PageService> services;
    private StateRecovery.Recovered state;
    private WalReader.Position position;
    private WalReader.RecordConsumer apply;
    private volatile long applied;
    private volatile long lastAppliedTimeMs;
    private volatile long restarts;

    LogFollower(Path stateDir, BucketLayout layout, String clusterId, Supplier<PageService> services) throws IOException {
        this.stateDir = stateDir;
        this.layout = layout;
        this.clusterId = clusterId;
        this.services = services;
        restart();
    }

    private void restart() throws IOException {
        state = StateRecovery.startFollowing(stateDir, layout, services);
        position = WalReader.Position.after(state.lastSequence);
        WalReader.RecordConsumer applier = StateRecovery.applier(state);
        apply = (record, file, offset) -> {
            applier.accept(record, file, offset);
            lastAppliedTimeMs = record.getTimeMs();
        };
        applied = state.lastSequence;
        for (String warning : state.warnings) {
            LOG.warn("follow: {}", warning);
        }
    }

    /** Applies what the log holds beyond what was applied; returns how many records. */
    long poll() throws IOException {
        long before = applied;
        try {
            position = WalReader.follow(stateDir, position, clusterId, apply);
        } catch (WalReader.FellBehindException e) {
            restarts++;
            LOG.info("follow: {}; starting again from the newest snapshot", e.getMessage());
            restart();
            position = WalReader.follow(stateDir, position, clusterId, apply);
        }
        applied = position.lastSequence();
        return Math.max(0, applied - before);
    }

    long applied() {
        return applied;
    }

    long lastAppliedTimeMs() {
        return lastAppliedTimeMs;
    }

    StateRecovery.Recovered state() {
        return state;
    }

    /** The epoch of the segment the follower is in (0 before any high-availability leader wrote). */
    long epoch() throws IOException {
        return header().map(WalSegmentHeader::leaderEpoch).orElse(0L);
    }

    /**
     * Where a new leader takes over: after the last record applied, in the segment it is in, at the byte past it.
     * Records of that epoch after it are never replayed.
     */
    WalSegmentHeader.Fence fence() throws IOException {
        return new WalSegmentHeader.Fence(epoch(), applied, position.segmentFirstSequence(), position.offset());
    }

    private java.util.Optional<WalSegmentHeader> header() throws IOException {
        if (position.segmentFirstSequence() == 0) {
            return java.util.Optional.empty();
        }
        Path segment = stateDir.resolve(WalSegments.fileName(position.segmentFirstSequence()));
        return WalSegmentHeader.read(segment);
    }
}
