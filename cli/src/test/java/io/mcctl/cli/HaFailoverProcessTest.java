package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.mcctl.cli.bench.EtcdCluster;
import io.mcctl.cli.bench.Signals;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.etcd.EtcdClient;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.GetMasterStatusResponse;
import io.mcctl.testkit.Tmpfs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real etcd and real {@code mcctl master start --ha} processes over one root: the leader killed with -9 round after
 * round under load, a leader stopped with SIGSTOP past its lease and woken after a standby took over, a leader stopped
 * with SIGTERM handing over at once, an etcd member lost, and etcd lost entirely.
 */
@Timeout(240)
@Tag("process")
class HaFailoverProcessTest {

    @TempDir
    Path dir;

    final List<McctlProcess.Master> masters = new ArrayList<>();
    EtcdCluster etcd;
    /** A tmpfs mounted at the root by a test that fills it, unmounted once the masters are gone. */
    Path mounted;

    @AfterEach
    void stop() throws Exception {
        for (McctlProcess.Master master : masters) {
            master.process().destroyForcibly();
            master.close();
        }
        if (etcd != null) {
            etcd.close();
        }
        if (mounted != null) {
            Tmpfs.unmount(mounted);
        }
    }

    McctlProcess.Master startMaster() throws Exception {
        return startMaster("2s");
    }

    McctlProcess.Master startMaster(String leaseTtl) throws Exception {
        List<String> args = new ArrayList<>(List.of("--root", dir.resolve("root").toString(), "--bucket-count", "8", "--bucket-size", "4MiB",
                "--page-size", "4KiB", "--allocation-deadline", "2s", "--allocation-grace", "1s", "--read-lease", "1s", "--eviction", "false",
                "--ha", etcd.url("/test"), "--ha-lease-ttl", leaseTtl));
        // Every second master's transport threads poll before they sleep: leaders and standbys of both kinds hand over.
        Map<String, String> env = masters.size() % 2 == 1 ? Map.of("MCCTL_BUSY_POLL", "100us") : Map.of();
        McctlProcess.Master master = McctlProcess.Master.start(dir, env, args.toArray(String[]::new));
        masters.add(master);
        return master;
    }

    /** Two masters, once one of them leads: the leader, then the standby. */
    List<McctlProcess.Master> leaderAndStandby() throws Exception {
        startMaster();
        startMaster();
        McctlProcess.Master leader = awaitLeader(Duration.ofSeconds(60));
        return List.of(leader, masters.get(0) == leader ? masters.get(1) : masters.get(0));
    }

    /** Offloads 4 KiB under {@code key} of tenant t through {@code master}: allocated, then committed. */
    static void commit(McctlProcess.Master master, String key) {
        try (MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(10))) {
            DistributedDiskDescriptor d = client.allocate("t", key, 4096, false).getDistributedDisk();
            client.notifySuccess(List.of(key), List.of("t"), List.of(d));
        }
    }

    static GetMasterStatusResponse status(McctlProcess.Master master) {
        try (MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(2))) {
            return client.masterStatus();
        }
    }

    /** The one live master that says it leads, waiting for an election (at most {@code limit}). */
    McctlProcess.Master awaitLeader(Duration limit) throws InterruptedException {
        long end = System.nanoTime() + limit.toNanos();
        while (System.nanoTime() - end < 0) {
            for (McctlProcess.Master master : masters) {
                if (master.process().isAlive()) {
                    try {
                        if (status(master).getRole() == GetMasterStatusResponse.Role.LEADER) {
                            return master;
                        }
                    } catch (MasterException e) {
                        // stopped or not up yet
                    }
                }
            }
            Thread.sleep(50);
        }
        throw new AssertionError("no leader within " + limit.toSeconds() + " s");
    }

    @Test
    void five_rounds_of_kill_9_of_the_leader_under_load_lose_nothing_acknowledged_and_overlap_or_leak_nothing() throws Exception {
        etcd = EtcdCluster.start(dir.resolve("etcd"), 1);
        for (int i = 0; i < 3; i++) {
            startMaster();
        }
        CrashRestartProcessTest.Model model = new CrashRestartProcessTest.Model();
        McctlProcess.Master leader = awaitLeader(Duration.ofSeconds(60));
        long lastEpoch = status(leader).getEpoch();
        for (int round = 0; round < 5; round++) {
            AtomicInteger ops = new AtomicInteger();
            List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
            List<Thread> clients = new ArrayList<>();
            for (int c = 0; c < 2; c++) {
                McctlProcess.Master target = leader;
                String tenant = CrashRestartProcessTest.TENANTS.get(c);
                int r = round;
                long seed = round * 31L + c;
                Thread t = new Thread(() -> CrashRestartProcessTest.load(target, io.mcctl.master.client.MasterClient.Transport.STREAM, model, tenant, r, seed, ops, failures), "client-" + c);
                clients.add(t);
                t.start();
            }
            int killAt = 40;
            assertTrue(CrashRestartProcessTest.await(Duration.ofSeconds(60), () -> ops.get() >= killAt || !failures.isEmpty()), "no load");
            CrashRestartProcessTest.kill9(leader);
            masters.remove(leader);
            for (Thread t : clients) {
                t.join(30_000);
                assertFalse(t.isAlive(), t.getName() + " did not stop after the leader died");
            }
            assertEquals(List.of(), failures);
            assertTrue(ops.get() < 2 * CrashRestartProcessTest.MAX_OPS_PER_CLIENT, "the leader was killed in the middle of the load, not after it");
            startMaster(); // the killed one comes back, as a standby
            leader = awaitLeader(Duration.ofSeconds(60));
            long epoch = status(leader).getEpoch();
            assertTrue(epoch > lastEpoch, "a new epoch: " + epoch + " after " + lastEpoch);
            lastEpoch = epoch;
            CrashRestartProcessTest.verify(leader, model);
        }
        assertTrue(model.acknowledged.size() > 50, "enough keys survived to mean something: " + model.acknowledged.size());
        McctlProcess.Done fsck = McctlProcess.run(dir, Map.of(), "fsck", "--master", leader.address());
        assertEquals(0, fsck.exitCode(), fsck.out() + fsck.err());
        McctlProcess.Done status = McctlProcess.run(dir, Map.of(), "master", "status", "--ha", etcd.url("/test"));
        assertEquals(0, status.exitCode(), status.out() + status.err());
        String leaderAddress = leader.address();
        String leaderRow = status.out().lines().filter(line -> line.contains(leaderAddress)).findFirst().orElse("");
        assertTrue(leaderRow.contains("leader"), status.out());
        assertEquals(2, status.out().lines().filter(line -> line.contains("standby")).count(), status.out());
    }

    @Test
    void a_leader_stopped_past_its_lease_and_woken_after_a_standby_took_over_answers_no_change_and_adds_nothing_replayed() throws Exception {
        etcd = EtcdCluster.start(dir.resolve("etcd"), 1);
        List<McctlProcess.Master> started = leaderAndStandby();
        McctlProcess.Master old = started.get(0);
        McctlProcess.Master standby = started.get(1);
        commit(old, "before");
        long pid = old.process().pid();
        Signals.send(pid, "STOP");
        CompletableFuture<Object> sentWhileStopped;
        CompletableFuture<Object> lookedUpWhileStopped;
        try {
            McctlProcess.Master leader = awaitLeader(Duration.ofSeconds(60));
            assertEquals(standby, leader);
            commit(leader, "after");
            // Sent to the stopped process: its kernel takes the bytes, the process reads them when woken.
            MasterClient toOld = new MasterClient(old.address(), Duration.ofSeconds(30));
            sentWhileStopped = CompletableFuture.supplyAsync(() -> {
                try {
                    return toOld.allocate("t", "woken", 4096, false);
                } catch (MasterException e) {
                    return e;
                } finally {
                    toOld.close();
                }
            });
            // A lookup too: the woken leader must not hand out descriptors from a state the new leader has changed since.
            MasterClient lookupToOld = new MasterClient(old.address(), Duration.ofSeconds(30));
            lookedUpWhileStopped = CompletableFuture.supplyAsync(() -> {
                try {
                    return lookupToOld.batchGetMapping(List.of("before"), List.of("t"));
                } catch (MasterException e) {
                    return e;
                } finally {
                    lookupToOld.close();
                }
            });
            Thread.sleep(300); // let the requests reach the stopped process's socket (their outcome is checked, not the time)
        } finally {
            Signals.send(pid, "CONT");
        }
        Object looked = lookedUpWhileStopped.get(60, TimeUnit.SECONDS);
        assertTrue(looked instanceof MasterException, "the woken leader answered a lookup: " + looked);
        Object answer = sentWhileStopped.get(60, TimeUnit.SECONDS);
        assertTrue(answer instanceof MasterException, "the woken leader answered a change OK: " + answer);
        assertTrue(((MasterException) answer).getMessage().contains("lease") || ((MasterException) answer).getMessage().contains("standby"),
                ((MasterException) answer).getMessage());
        // Whatever the woken leader wrote, a master that recovers the state must not see it.
        for (McctlProcess.Master master : new ArrayList<>(masters)) {
            CrashRestartProcessTest.kill9(master);
            masters.remove(master);
        }
        McctlProcess.Master fresh = startMaster();
        assertEquals(fresh, awaitLeader(Duration.ofSeconds(60)));
        try (MasterClient client = new MasterClient(fresh.address(), Duration.ofSeconds(10))) {
            assertTrue(client.exists("t", "before"));
            assertTrue(client.exists("t", "after"));
            assertEquals(0, client.stats().getInFlightAllocations(), "an allocation of the woken leader was replayed: " + client.stats());
        }
    }

    @Test
    void a_standby_taking_over_on_a_full_root_says_why_tries_again_and_leads_once_space_is_back() throws Exception {
        Path root = Files.createDirectories(dir.resolve("root"));
        assumeTrue(Tmpfs.mount(root, "32m"), "needs root to mount a tmpfs");
        mounted = root;
        etcd = EtcdCluster.start(dir.resolve("etcd"), 1);
        List<McctlProcess.Master> started = leaderAndStandby();
        McctlProcess.Master old = started.get(0);
        McctlProcess.Master standby = started.get(1);
        commit(old, "before");
        Path filler = root.resolve("filler");
        Tmpfs.fill(filler);
        CrashRestartProcessTest.kill9(old);
        masters.remove(old);

        // The standby wins the election but cannot write the header of its log segment: it says so, and keeps trying.
        String reason = "";
        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!(reason.contains("write the header of log segment") && reason.contains("No space left on device"))) {
            assertTrue(System.nanoTime() - end < 0, "the standby never said why it does not lead; last: " + reason);
            GetMasterStatusResponse status = status(standby);
            assertNotEquals(GetMasterStatusResponse.Role.LEADER, status.getRole(), "led with no room for its log");
            reason = status.getReason();
            Thread.sleep(50);
        }
        assertTrue(reason.startsWith("this master cannot follow or lead: "), reason);
        try (MasterClient client = new MasterClient(standby.address(), Duration.ofSeconds(10))) {
            MasterException refused = assertThrows(MasterException.class,
                    () -> client.allocate("t", "while-full", 4096, false));
            assertTrue(refused.getMessage().contains("No space left on device"), refused.getMessage());
        }
        Thread.sleep(2000); // several attempts fail the same way: the master keeps going, logging the problem once
        assertTrue(standby.process().isAlive(), "the standby stopped on a full root");

        Files.delete(filler);
        assertEquals(standby, awaitLeader(Duration.ofSeconds(60)));
        commit(standby, "after");
        try (MasterClient client = new MasterClient(standby.address(), Duration.ofSeconds(10))) {
            assertTrue(client.exists("t", "before"));
            assertTrue(client.exists("t", "after"));
        }
        String log = standby.log();
        assertTrue(log.contains("write the header of log segment") && log.contains("; trying again"), log);
        assertTrue(log.contains("high availability: working again after"), log);
    }

    @Test
    void losing_one_etcd_member_of_three_keeps_the_service_and_losing_all_stops_changes_with_the_reason() throws Exception {
        etcd = EtcdCluster.start(dir.resolve("etcd"), 3);
        // A lease well beyond etcd's own election (1 s timeout here), which losing the member that leads etcd costs, and
        // beyond the keep-alive stalls of a loaded two-core machine while it happens.
        startMaster("10s");
        startMaster("10s");
        McctlProcess.Master leader = awaitLeader(Duration.ofSeconds(60));
        etcd.kill(0); // the first endpoint, the one every master asks first
        try (MasterClient client = new MasterClient(leader.address(), Duration.ofSeconds(10))) {
            for (int i = 0; i < 60; i++) {
                String key = "k" + i;
                DistributedDiskDescriptor d = client.allocate("t", key, 4096, false).getDistributedDisk();
                client.notifySuccess(List.of(key), List.of("t"), List.of(d));
                Thread.sleep(150); // spread over more than one lease TTL
            }
            assertEquals(GetMasterStatusResponse.Role.LEADER, status(leader).getRole());
            // The two members left hang (SIGSTOP): every call to etcd now runs to its deadline, the slowest way to lose it.
            etcd.pause(1);
            etcd.pause(2);
            MasterException refused = null;
            for (int i = 0; refused == null && i < 400; i++) {
                try {
                    DistributedDiskDescriptor d = client.allocate("t", "late" + i, 4096, false).getDistributedDisk();
                    client.notifySuccess(List.of("late" + i), List.of("t"), List.of(d));
                    Thread.sleep(50);
                } catch (MasterException e) {
                    refused = e;
                }
            }
            assertTrue(refused != null, "the leader kept taking changes with etcd gone");
            assertTrue(refused.getMessage().contains("lease"), refused.getMessage());
            // The refusal comes from the log's own lease check; the role thread steps down on its next look at the lease.
            assertTrue(CrashRestartProcessTest.await(Duration.ofSeconds(10), () -> status(leader).getRole() != GetMasterStatusResponse.Role.LEADER),
                    "the leader did not step down");
            GetMasterStatusResponse status = status(leader);
            assertNotEquals(GetMasterStatusResponse.Role.LEADER, status.getRole());
            assertTrue(status.getReason().contains("lease"), status.toString());
            // The role thread drops the term, then follows the log and asks etcd for a lease, each time until the call's
            // deadline, until it says it cannot follow or lead: every call meanwhile is refused with the reason, never
            // with a bare "no leader is known yet".
            boolean cannotLead = false;
            for (int i = 0; !cannotLead && i < 600; i++) {
                String key = "stepped-down" + i;
                MasterException again = assertThrows(MasterException.class, () -> client.allocate("t", key, 4096, false));
                assertTrue(again.getMessage().contains("lease"), again.getMessage());
                cannotLead = status(leader).getReason().contains("cannot follow or lead");
                Thread.sleep(50);
            }
            assertTrue(cannotLead, "the master never said that it cannot follow or lead: " + status(leader));
        }
    }

    /**
     * SIGTERM of {@code leader}: once it has exited, its lease is gone from etcd and no longer holds the leader key, and
     * its log says it stepped down and holds no exception. Returns the master that leads next.
     */
    McctlProcess.Master terminateAndAwaitNext(McctlProcess.Master leader, EtcdClient keys, String leaderKey) throws Exception {
        EtcdClient.Entry held = keys.get(leaderKey).orElseThrow(() -> new AssertionError("no leader key at " + leaderKey));
        assertEquals(leader.address(), held.value());
        assertTrue(keys.timeToLive(held.lease()) > 0, "the leader's lease is alive before the stop");
        long epoch = status(leader).getEpoch();
        Signals.send(leader.process().pid(), "TERM");
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
        McctlProcess.Master next = awaitLeader(Duration.ofSeconds(60));
        assertNotEquals(leader, next);
        assertTrue(status(next).getEpoch() > epoch);
        leader.close();
        return next;
    }

    @Test
    void sigterm_of_the_leader_deletes_its_key_and_revokes_its_lease_so_a_standby_leads_at_once_and_loses_nothing() throws Exception {
        etcd = EtcdCluster.start(dir.resolve("etcd"), 1);
        // A lease long enough that one left to expire would still be alive in etcd when the stopped leader has exited.
        startMaster("60s");
        startMaster("60s");
        McctlProcess.Master leader = awaitLeader(Duration.ofSeconds(60));
        String leaderKey = etcd.target("/test").leaderKey(status(leader).getClusterId());
        try (EtcdClient keys = new EtcdClient(etcd.target("/test"), Duration.ofSeconds(5))) {
            // A leader that logged nothing yet: its log segment holds a header only, which the next leader replaces.
            leader = terminateAndAwaitNext(leader, keys, leaderKey);
            try (MasterClient client = new MasterClient(leader.address(), Duration.ofSeconds(10))) {
                DistributedDiskDescriptor d = client.allocate("t", "kept", 4096, false).getDistributedDisk();
                client.notifySuccess(List.of("kept"), List.of("t"), List.of(d));
            }
            startMaster("60s");
            // A leader with records: the next one reads them all at its take-over.
            leader = terminateAndAwaitNext(leader, keys, leaderKey);
            try (MasterClient client = new MasterClient(leader.address(), Duration.ofSeconds(10))) {
                assertTrue(client.exists("t", "kept"));
            }
        }
        McctlProcess.Done status = McctlProcess.run(dir, Map.of(), "master", "status", "--ha", etcd.url("/test"));
        assertEquals(0, status.exitCode(), status.out() + status.err());
        String leaderAddress = leader.address();
        assertTrue(status.out().lines().anyMatch(line -> line.contains(leaderAddress) && line.contains("leader")), status.out());
    }

}
