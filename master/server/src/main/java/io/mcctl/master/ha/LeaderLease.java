package io.mcctl.master.ha;

import io.mcctl.master.etcd.EtcdClient;
import io.mcctl.master.etcd.EtcdTarget;
import io.mcctl.master.etcd.LeaderRedirect;
import io.mcctl.master.etcd.MemberStatus;

import java.time.Duration;
import java.time.Instant;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A master's etcd lease, kept alive by a thread of its own, with a local deadline that always comes before etcd can
 * let the lease expire: each renewal moves the deadline to the time its keep-alive was SENT plus the TTL etcd
 * granted, less a margin of a quarter of the TTL. etcd restarts the TTL when it receives the keep-alive, after it
 * was sent, so at every instant before the deadline the lease is alive in etcd, and no other master can hold the
 * leader key. {@link #valid} is the check every durable answer of a leader passes.
 *
 * <p>Thread-safe: the deadline and the loss reason are volatile, written by the keep-alive thread only.
 */
public final class LeaderLease implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(LeaderLease.class);

    private final EtcdClient etcd;
    private final long id;
    private final long ttlNanos;
    private final long marginNanos;
    private volatile long deadlineNanos;
    private volatile String lost;
    private volatile boolean closed;
    private volatile Instant renewedAt = Instant.now();
    private final Thread keeper;
    private final Consumer<String> onLost;

    private LeaderLease(EtcdClient etcd, long id, long ttlSeconds, long sentNanos, Consumer<String> onLost) {
        this.etcd = etcd;
        this.id = id;
        this.ttlNanos = ttlSeconds * 1_000_000_000L;
        this.marginNanos = ttlNanos / 4;
        this.deadlineNanos = sentNanos + ttlNanos - marginNanos;
        this.onLost = onLost;
        this.keeper = new Thread(this::keepAlive, "mcctl-ha-lease");
        keeper.setDaemon(true);
    }

    /**
     * Grants a lease of {@code ttl} (whole seconds) and keeps it alive; {@code onLost} is told once, with the reason,
     * when it can no longer be renewed before its local deadline or etcd says it is gone.
     */
    public static LeaderLease grant(EtcdClient etcd, Duration ttl, Consumer<String> onLost) throws EtcdClient.EtcdUnavailableException {
        long sent = System.nanoTime();
        io.mcctl.master.etcd.proto.LeaseGrantResponse grant = etcd.grantLease(Math.max(1, ttl.toSeconds()));
        LeaderLease lease = new LeaderLease(etcd, grant.getID(), grant.getTTL(), sent, onLost);
        lease.keeper.start();
        return lease;
    }

    public long id() {
        return id;
    }

    public long ttlSeconds() {
        return ttlNanos / 1_000_000_000L;
    }

    /** Whether the lease is certainly alive in etcd now: not given up, before the local deadline and not known lost. */
    public boolean valid() {
        return !closed && lost == null && System.nanoTime() - deadlineNanos < 0;
    }

    /** Why the lease is lost, or null. */
    public String lostReason() {
        if (lost == null && closed) {
            return "the etcd lease was given up: this master is stopping";
        }
        if (lost == null && !valid()) {
            return "the etcd lease could not be renewed since " + renewedAt + " (its local deadline passed)";
        }
        return lost;
    }

    private void keepAlive() {
        long interval = Math.max(ttlNanos / 6, 100_000_000L);
        RepeatingProblem failures = new RepeatingProblem(HaMaster.PROBLEM_LINE_INTERVAL, System::nanoTime);
        while (!closed && lost == null) {
            try {
                Thread.sleep(interval / 1_000_000L);
            } catch (InterruptedException e) {
                return;
            }
            if (closed) {
                return;
            }
            long sent = System.nanoTime();
            try {
                long ttl = etcd.keepAlive(id);
                if (ttl <= 0) {
                    lose("etcd says lease " + Long.toHexString(id) + " has expired (last renewed at " + renewedAt + ")");
                    return;
                }
                if (System.nanoTime() - deadlineNanos >= 0) {
                    // Renewed in etcd, but the local deadline passed first: the leader has already stopped answering, and
                    // another master may have won in between, so it does not resume.
                    lose("the local lease deadline passed before the renewal sent at " + Instant.now() + " was answered");
                    return;
                }
                deadlineNanos = sent + ttl * 1_000_000_000L - marginNanos;
                renewedAt = Instant.now();
                String over = failures.cleared("lease keep-alive works again");
                if (over != null) {
                    LOG.info("{}", over);
                }
            } catch (EtcdClient.EtcdUnavailableException e) {
                String line = failures.occurred(e.condition(), "lease keep-alive failed: " + e.getMessage());
                if (line != null) {
                    LOG.warn("{}", line);
                }
                if (!valid()) {
                    lose("the etcd lease could not be renewed since " + renewedAt + ": " + e.getMessage());
                    return;
                }
            }
        }
    }

    private void lose(String reason) {
        lost = reason;
        onLost.accept(reason);
    }

    /** Stops renewing and revokes the lease (its keys go at once); a lease already gone is left. */
    @Override
    public void close() {
        revoke();
    }

    /**
     * {@link #close}, telling whether etcd revoked the lease: false when it was lost already or etcd did not answer (then
     * it expires after its TTL). From the first moment of the call the lease is no longer {@link #valid}.
     */
    public boolean revoke() {
        closed = true;
        keeper.interrupt();
        if (lost != null) {
            return false;
        }
        try {
            etcd.revokeLease(id);
            return true;
        } catch (EtcdClient.EtcdUnavailableException e) {
            LOG.warn("could not revoke the etcd lease ({}); it expires in {} s", e.getMessage(), ttlSeconds());
            return false;
        }
    }
}
