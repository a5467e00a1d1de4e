package io.mcctl.cli.chaos;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;

/** The faults the nemesis of a chaos run injects, by name as the report and {@code --faults} spell them. */
public enum FaultKind {
    /** kill -9 of a master (the leader half the time), started again after the hold. */
    KILL_MASTER,
    /** kill -9 of a node (one holds a DRAM segment), started again after the hold. */
    KILL_NODE,
    /** kill -9 of an etcd member (with one member: all of etcd), started again after the hold. */
    KILL_ETCD,
    /** kill -9 of a Python worker mid-operation (its in-flight allocations must expire), started again. */
    KILL_CLIENT,
    /** SIGSTOP of the leader past its lease TTL, then SIGCONT: a deposed leader wakes up. */
    PAUSE_LEADER,
    /** SIGSTOP of a Python worker past its allocation deadline, then SIGCONT: a writer must fence itself. */
    PAUSE_CLIENT,
    /** SIGSTOP of a node past the client TTL, then SIGCONT. */
    PAUSE_NODE,
    /** SIGSTOP of an etcd member, then SIGCONT. */
    PAUSE_ETCD,
    /** The leader cut from every etcd member. */
    PARTITION_LEADER_ETCD,
    /** The leader cut from every client (this side's Java workers, nodes, Python workers), still reaching etcd. */
    PARTITION_LEADER_CLIENTS,
    /** A node or a Python worker cut from everyone (its link down). */
    PARTITION_CLIENT,
    /** Packet loss (10-40%) on a link of a master, etcd member or client; where the kernel has no netem, a token bucket with a queue of a few packets. */
    NETEM_LOSS,
    /** Delay (50-300 ms with jitter) on a link; where the kernel has no netem, a token bucket of 1-4 Mbit/s queueing up to 400 ms. */
    NETEM_DELAY,
    /** The root's filesystem (bucket files and the state directory) filled to the last byte, then freed. */
    FILL_ROOT,
    /** One byte of a committed object flipped in its bucket file. */
    FLIP_BYTE,
    /** A bucket file truncated, then grown back to its size (as an operator would restore it). */
    TRUNCATE_BUCKET,
    /** A bucket file deleted, then created again empty at its size. */
    DELETE_BUCKET,
    /** Idle TCP connections to the leader by the thousand, held, then closed. */
    IDLE_FLOOD,
    /**
     * Session streams to the leader held open by clients that send nothing, or send lookups and take no answer, then
     * cancelled: the master must keep serving the others, and end such a stream only past session_backlog.
     */
    IDLE_SESSION,
    /** A snapshot taken, then the leader killed (-9) and started again: it recovers from the snapshot and the log after it. */
    SNAPSHOT_RESTART;

    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static FaultKind of(String label) {
        try {
            return valueOf(label.strip().toUpperCase(Locale.ROOT).replace('-', '_'));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown fault '" + label + "': allowed are all or " + names());
        }
    }

    public static String names() {
        StringBuilder out = new StringBuilder();
        for (FaultKind kind : values()) {
            out.append(out.length() == 0 ? "" : ", ").append(kind.label());
        }
        return out.toString();
    }

    public static Set<FaultKind> all() {
        return EnumSet.allOf(FaultKind.class);
    }
}
