package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.etcd.EtcdClient;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.GetMasterStatusResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real etcd and real {@code mcctl master start --ha} processes: SIGTERM of the leader, as an operator or a service manager
 * stops it, hands leadership over at once. The stopping leader deletes its key and revokes its lease itself, so the
 * standby does not wait out a lease that is still alive in etcd (the TTL here is long enough that a lease left to expire
 * would still be there), and it logs no exception on the way out.
 */
@Timeout(240)
class HaHandOverProcessTest {

    static final String PREFIX = "/handover";

    @TempDir
    Path dir;

    final List<McctlProcess.Master> masters = new ArrayList<>();
    EtcdCluster etcd;

    @AfterEach
    void stop() throws Exception {
        for (McctlProcess.Master master : masters) {
            master.process().destroyForcibly();
            master.close();
        }
        if (etcd != null) {
            etcd.close();
        }
    }

    McctlProcess.Master startMaster() throws Exception {
        McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of(), "--root", dir.resolve("root").toString(), "--bucket-count", "8",
                "--bucket-size", "4MiB", "--page-size", "4KiB", "--eviction", "false", "--ha", etcd.url(PREFIX), "--ha-lease-ttl", "60s");
        masters.add(master);
        return master;
    }

    McctlProcess.Master awaitLeader() throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() - end < 0) {
            for (McctlProcess.Master master : masters) {
                try {
                    if (master.process().isAlive() && HaFailoverProcessTest.status(master).getRole() == GetMasterStatusResponse.Role.LEADER) {
                        return master;
                    }
                } catch (MasterException e) {
                    // stopped or not up yet
                }
            }
            Thread.sleep(50);
        }
        throw new AssertionError("no leader within 60 s");
    }

    /**
     * SIGTERM of {@code leader}: once it has exited, its lease is gone from etcd and no longer holds the leader key, and
     * its log says it stepped down and holds no exception. Returns the master that leads next.
     */
    McctlProcess.Master terminateAndAwaitNext(McctlProcess.Master leader, EtcdClient keys, String leaderKey) throws Exception {
        EtcdClient.Entry held = keys.get(leaderKey).orElseThrow(() -> new AssertionError("no leader key at " + leaderKey));
        assertEquals(leader.address(), held.value());
        assertTrue(keys.timeToLive(held.lease()) > 0, "the leader's lease is alive before the stop");
        long epoch = HaFailoverProcessTest.status(leader).getEpoch();
        HaFailoverProcessTest.signal("TERM", leader.process().pid());
        assertTrue(leader.process().waitFor(60, TimeUnit.SECONDS), "the leader did not exit after SIGTERM");
        masters.remove(leader);
        // Read at once after the exit: a lease left to expire would have most of its 60 s still to run.
        assertEquals(-1, keys.timeToLive(held.lease()), "the stopped leader's lease is still alive in etcd: the standby must wait it out");
        Optional<EtcdClient.Entry> now = keys.get(leaderKey);
        assertTrue(now.isEmpty() || now.get().lease() != held.lease(), "the leader key is still held by the stopped leader: " + now);
        String log = leader.log();
        assertFalse(log.contains("Exception"), "the stopping leader logged an exception:\n" + log);
        assertTrue(log.contains("stepped down as leader of epoch " + epoch + ": leader key deleted, lease revoked"), log);
        String stopping = log.substring(log.indexOf("stopping"));
        assertFalse(stopping.contains(" WARN ") || stopping.contains(" ERROR "), "the stop warned:\n" + stopping);
        McctlProcess.Master next = awaitLeader();
        assertNotEquals(leader, next);
        assertTrue(HaFailoverProcessTest.status(next).getEpoch() > epoch);
        leader.close();
        return next;
    }

    @Test
    void sigterm_of_the_leader_deletes_its_key_and_revokes_its_lease_so_a_standby_leads_at_once_and_loses_nothing() throws Exception {
        etcd = EtcdCluster.start(dir.resolve("etcd"), 1);
        startMaster();
        startMaster();
        McctlProcess.Master leader = awaitLeader();
        String leaderKey = etcd.target(PREFIX).leaderKey(HaFailoverProcessTest.status(leader).getClusterId());
        try (EtcdClient keys = new EtcdClient(etcd.target(PREFIX), Duration.ofSeconds(5))) {
            // A leader that logged nothing yet: its log segment holds a header only, which the next leader replaces.
            leader = terminateAndAwaitNext(leader, keys, leaderKey);
            try (MasterClient client = new MasterClient(leader.address(), Duration.ofSeconds(10))) {
                DistributedDiskDescriptor d = client.allocate("t", "kept", 4096, false).getDistributedDisk();
                client.notifySuccess(List.of("kept"), List.of("t"), List.of(d));
            }
            startMaster();
            // A leader with records: the next one reads them all at its take-over.
            leader = terminateAndAwaitNext(leader, keys, leaderKey);
            try (MasterClient client = new MasterClient(leader.address(), Duration.ofSeconds(10))) {
                assertTrue(client.exists("t", "kept"));
            }
        }
        McctlProcess.Done status = McctlProcess.run(dir, Map.of(), "master", "status", "--ha", etcd.url(PREFIX));
        assertEquals(0, status.exitCode(), status.out() + status.err());
        String leaderAddress = leader.address();
        assertTrue(status.out().lines().anyMatch(line -> line.contains(leaderAddress) && line.contains("leader")), status.out());
    }
}
