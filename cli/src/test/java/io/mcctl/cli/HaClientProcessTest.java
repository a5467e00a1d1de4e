package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.cli.bench.EtcdCluster;
import io.mcctl.cli.bench.Signals;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetMasterStatusResponse;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Clients given {@code --master etcd://...} against real etcd and real {@code master start --ha} processes: they find
 * the leader, keep working through the same client across a kill -9 of the leader, and a call that reaches a master
 * that no longer leads is sent on to the leader.
 */
@Timeout(240)
@Tag("process")
class HaClientProcessTest {

    @TempDir
    Path dir;

    private final HaFailoverProcessTest cluster = new HaFailoverProcessTest();

    @AfterEach
    void stop() throws Exception {
        cluster.stop();
    }

    /**
     * A blocking call through a client given etcd, while no master leads, fails once its deadline leaves no time for
     * another attempt. It used to wait forever: the last refusal came from the retry thread straight to the listener, and
     * the blocking caller, asleep until a callback is handed to its own thread, never woke. Found by the chaos harness
     * (mcctl bench chaos --seed 1 --faults kill_master: a new client right after the leader's kill -9).
     */
    @Test
    @Timeout(120)
    void a_blocking_call_while_no_master_leads_fails_within_its_deadline_instead_of_waiting_forever() throws Exception {
        cluster.etcd = EtcdCluster.start(dir.resolve("etcd"), 1);
        for (int i = 0; i < 3; i++) {
            try (MasterClient client = new MasterClient(cluster.etcd.url("/nobody"), Duration.ofMillis(800))) {
                MasterException e = assertThrows(MasterException.class, client::layout);
                assertTrue(e.getMessage().contains("no leader found"), e.getMessage());
            }
        }
    }

    @Test
    void clients_given_etcd_follow_the_leader_across_a_kill_9_and_a_refusal_by_a_deposed_leader_without_losing_an_acknowledged_key()
            throws Exception {
        cluster.dir = dir;
        cluster.etcd = EtcdCluster.start(dir.resolve("etcd"), 1);
        for (int i = 0; i < 3; i++) {
            cluster.startMaster();
        }
        String etcd = cluster.etcd.url("/test");
        McctlProcess.Master first = cluster.awaitLeader(Duration.ofSeconds(60));
        CrashRestartProcessTest.Model model = new CrashRestartProcessTest.Model();
        String tenant = CrashRestartProcessTest.TENANTS.get(0);
        try (MasterClient client = new MasterClient(etcd, Duration.ofSeconds(10));
             TierNode tier = TierNode.connect(client, true, new ClientMetrics())) {
            TierWriter writer = new TierWriter(tier);
            AtomicInteger acknowledged = new AtomicInteger();
            AtomicBoolean stopping = new AtomicBoolean();
            List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
            Thread load = new Thread(() -> offloadUntilStopped(writer, model, tenant, stopping, acknowledged, failures), "etcd-client");
            load.start();
            assertTrue(CrashRestartProcessTest.await(Duration.ofSeconds(60), () -> acknowledged.get() >= 30 || !failures.isEmpty()), "no load");
            CrashRestartProcessTest.kill9(first);
            cluster.masters.remove(first);
            int atKill = acknowledged.get();

            // A CLI started right after the kill finds the new leader within its deadline, while etcd may still name the dead one.
            Path file = dir.resolve("object.bin");
            byte[] bytes = CrashRestartProcessTest.content(tenant, "cli-key", 70_000);
            Files.write(file, bytes);
            McctlProcess.Done offload = McctlProcess.run(dir, Map.of(), "offload", "--master", etcd, "--tenant", tenant, "cli-key",
                    file.toString());
            assertEquals(0, offload.exitCode(), offload.out() + offload.err());
            model.acknowledged.put(CrashRestartProcessTest.id(tenant, "cli-key"), bytes.length);
            McctlProcess.Done get = McctlProcess.run(dir, Map.of(), "get", "--master", etcd, "--tenant", tenant, "cli-key", "--out", dir.resolve("back.bin").toString());
            assertEquals(0, get.exitCode(), get.out() + get.err());
            assertArrayEquals(bytes, Files.readAllBytes(dir.resolve("back.bin")));

            // The client that was writing when the leader died goes on through the new one.
            assertTrue(CrashRestartProcessTest.await(Duration.ofSeconds(60), () -> acknowledged.get() >= atKill + 30 || !failures.isEmpty()),
                    "the etcd client did not go on after the kill: " + acknowledged.get() + " acknowledged, " + atKill + " at the kill");
            stopping.set(true);
            load.join(30_000);
            assertFalse(load.isAlive());
            assertEquals(List.of(), failures);

            // Stop the leader past its lease, let the other master take over, wake it: it refuses as a non-leader, and the
            // client, whose channel still points at it, is sent on.
            McctlProcess.Master second = cluster.awaitLeader(Duration.ofSeconds(60));
            assertEquals(second.address(), client.masterStatus().getAddress(), "the client follows the leader");
            long pid = second.process().pid();
            Signals.send(pid, "STOP");
            McctlProcess.Master third;
            try {
                third = cluster.awaitLeader(Duration.ofSeconds(60));
            } finally {
                Signals.send(pid, "CONT");
            }
            assertNotEquals(second, third);
            assertTrue(CrashRestartProcessTest.await(Duration.ofSeconds(30),
                    () -> HaFailoverProcessTest.status(second).getRole() != GetMasterStatusResponse.Role.LEADER), "the woken leader stepped down");
            byte[] late = CrashRestartProcessTest.content(tenant, "after-redirect", 9_000);
            List<TierWriter.Outcome> redirected = writer.offload(tenant, List.of(new TierWriter.ObjectSource("after-redirect",
                    List.of(ByteBuffer.wrap(late)))), false);
            assertTrue(redirected.get(0).ok(), redirected.toString());
            model.acknowledged.put(CrashRestartProcessTest.id(tenant, "after-redirect"), late.length);
            assertEquals(third.address(), client.masterStatus().getAddress());
        }
        McctlProcess.Master leader = cluster.awaitLeader(Duration.ofSeconds(60));
        try (MasterClient client = new MasterClient(leader.address(), Duration.ofSeconds(10))) {
            List<String> unknown = new ArrayList<>();
            String token = "";
            do {
                io.mcctl.master.proto.v1.ListKeysResponse page = client.listKeys(tenant, "", 500, token);
                page.getKeysList().stream().map(info -> CrashRestartProcessTest.id(tenant, info.getKey()))
                        .filter(id -> !model.acknowledged.containsKey(id) && !model.inDoubt.containsKey(id)).forEach(unknown::add);
                token = page.getNextPageToken();
            } while (!token.isEmpty());
            assertEquals(List.of(), unknown, "mappings of keys the client was never told about");
        }
        CrashRestartProcessTest.verify(leader, model);
    }

    /** Batches of new keys through one writer until told to stop; a batch whose outcome the fail-over made unknown stays in doubt. */
    static void offloadUntilStopped(TierWriter writer, CrashRestartProcessTest.Model model, String tenant, AtomicBoolean stopping,
                                    AtomicInteger acknowledged, List<Throwable> failures) {
        try {
            for (int op = 0; !stopping.get(); op++) {
                List<TierWriter.ObjectSource> objects = new ArrayList<>();
                Map<String, Integer> sizes = new HashMap<>();
                for (int j = 0; j < 3; j++) {
                    String key = "op-" + op + "/" + j;
                    int size = 1 + (op * 7919 + j * 104_729) % (40 << 10);
                    sizes.put(key, size);
                    model.inDoubt.put(CrashRestartProcessTest.id(tenant, key), size);
                    objects.add(new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(CrashRestartProcessTest.content(tenant, key, size)))));
                }
                List<TierWriter.Outcome> outcomes;
                try {
                    outcomes = writer.offload(tenant, objects, false);
                } catch (MasterException e) {
                    if (!e.unreachable()) {
                        throw e;
                    }
                    continue; // the allocation's outcome is unknown (the leader died under it): not resent, its keys stay in doubt
                }
                for (TierWriter.Outcome outcome : outcomes) {
                    String id = CrashRestartProcessTest.id(tenant, outcome.key());
                    if (outcome.ok()) {
                        model.inDoubt.remove(id);
                        model.acknowledged.put(id, sizes.get(outcome.key()));
                        acknowledged.incrementAndGet();
                    } else if (outcome.code() == ErrorCode.NO_AVAILABLE_HANDLE) {
                        model.inDoubt.remove(id);
                    } // else in doubt: a notify whose outcome stayed unknown
                }
            }
        } catch (Throwable e) {
            failures.add(e);
        }
    }
}
