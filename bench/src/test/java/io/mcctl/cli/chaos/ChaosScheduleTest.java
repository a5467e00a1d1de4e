package io.mcctl.cli.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The short chaos schedule of every build: real etcd, three HA masters, two nodes, Java and Python workers in network
 * namespaces of their own (the tests run as root), a seeded nemesis with every fault kind, and the checker over the
 * recorded history. A fixed seed and a random one (printed, to repeat with {@code mcctl bench chaos --seed S}); and one
 * run of the harness's own cases: a process drawn for two kills in one round, and a byte flipped behind the nemesis's
 * back, which the checker must report.
 */
@Tag("process")
class ChaosScheduleTest {

    static final Path PYTHON_CLIENT = Path.of("..", "clients", "python").toAbsolutePath().normalize();

    /** Under the module's build directory, so that a failed run's folder (history, logs, report) outlives the test. */
    final Path dir = Path.of("target", "chaos-runs").toAbsolutePath();

    static String describe(Map<String, Object> report) {
        return "seed " + report.get("seed") + ": findings " + report.get("findings") + ", violations " + report.get("violations")
                + ", kept in " + report.get("folder");
    }

    @Test
    @Timeout(600)
    void a_fixed_seed_with_three_etcd_members_passes_every_check() throws Exception {
        Map<String, Object> report = ChaosRun.run(new ChaosRun.Settings(54, Duration.ofSeconds(30), 3, 2, 2, FaultKind.all(), dir,
                PYTHON_CLIENT, false), null);
        assertTrue((boolean) report.get("passed"), describe(report));
        assertTrue((int) report.get("faults_injected") > 0, "no fault was injected: " + report);
        assertTrue((int) report.get("acknowledged_writes") > 0, "nothing was acknowledged: " + report);
    }

    @Test
    @Timeout(600)
    void a_random_seed_with_one_etcd_member_passes_every_check() throws Exception {
        long seed = new java.security.SecureRandom().nextLong() & Long.MAX_VALUE;
        System.out.println("chaos schedule: random seed " + seed + " (repeat with mcctl bench chaos --seed " + seed + " --etcd-members 1)");
        Map<String, Object> report = ChaosRun.run(new ChaosRun.Settings(seed, Duration.ofSeconds(30), 1, 2, 2, FaultKind.all(), dir,
                PYTHON_CLIENT, false), null);
        assertTrue((boolean) report.get("passed"), describe(report));
    }

    /**
     * The harness's own checks share one run (each run pays for a cluster's start and the wait past every deadline
     * before the final checks): seed 4's first round holds two faults, which with one kind and one Python worker both
     * kill py0; and after the traffic, behind the nemesis's back, a byte of an acknowledged object is flipped.
     */
    private static final class HarnessRun {
        static final Map<String, Object> REPORT;
        static final String FLIPPED;

        static {
            AtomicReference<String> flipped = new AtomicReference<>();
            try {
                REPORT = ChaosRun.run(new ChaosRun.Settings(4, Duration.ofSeconds(10), 1, 1, 1, EnumSet.of(FaultKind.KILL_CLIENT),
                        Path.of("target", "chaos-runs").toAbsolutePath(), PYTHON_CLIENT, true), cluster -> flipped.set(flipAByte(cluster)));
            } catch (Exception e) {
                throw new IllegalStateException("the harness's run stopped: " + e, e);
            }
            FLIPPED = flipped.get();
        }

        /** Flips a byte in the middle of the first acknowledged object of the Java worker; returns its tenant/key. */
        private static String flipAByte(ChaosCluster cluster) throws Exception {
            try (MasterClient client = new MasterClient(cluster.haUrl(), Duration.ofSeconds(10))) {
                for (int k = 0; k < JavaWorker.KEYS; k++) {
                    for (String tenant : JavaWorker.TENANTS) {
                        String key = "j0/k" + k;
                        if (!client.exists(tenant, key)) {
                            continue;
                        }
                        DistributedDiskDescriptor place = client.getMapping(tenant, key).getDistributedDisk();
                        try (RandomAccessFile file = new RandomAccessFile(place.getFilePath(), "rw")) {
                            long at = place.getOffset() + place.getObjectSize() / 2;
                            file.seek(at);
                            int old = file.read();
                            file.seek(at);
                            file.write(old ^ 0x10);
                        }
                        return tenant + "/" + key;
                    }
                }
            }
            throw new IllegalStateException("the Java worker had no object to flip a byte of");
        }
    }

    @Test
    @Timeout(600)
    void a_process_drawn_for_two_kills_in_one_round_is_killed_and_started_once() {
        assertTrue(new java.util.Random(4).nextInt(10) < 3, "seed 4 no longer opens with a round of two faults");
        Map<String, Object> report = HarnessRun.REPORT;
        assertEquals(List.of(), report.get("findings"), describe(report));
        assertTrue((int) report.get("faults_injected") > 0, "no fault was injected: " + report);
        @SuppressWarnings("unchecked")
        Map<String, Integer> checks = (Map<String, Integer>) report.get("checks");
        assertTrue(checks.containsKey("final_present"), "the final reads did not run: " + report);
        @SuppressWarnings("unchecked")
        List<Object> violations = (List<Object>) report.get("violations");
        for (Object violation : violations) {
            assertTrue(violation.toString().contains(HarnessRun.FLIPPED), "a violation other than the flipped byte: " + violation);
        }
    }

    @Test
    @Timeout(600)
    void a_byte_flipped_where_no_fault_was_recorded_fails_the_run() throws Exception {
        Map<String, Object> report = HarnessRun.REPORT;
        String flipped = HarnessRun.FLIPPED;
        assertFalse((boolean) report.get("passed"), "a flipped byte went unnoticed: " + report);
        @SuppressWarnings("unchecked")
        Map<String, Integer> checks = (Map<String, Integer>) report.get("checks");
        assertEquals(1, checks.get("wrong_bytes_on_disk"), "the final read of " + flipped + " must fail its checksum: " + report);
        assertEquals(1, checks.get("fsck"), "fsck --deep must name " + flipped + ": " + report);
        assertTrue(report.get("violations").toString().contains(flipped), report.get("violations").toString());
        ChaosRun.deleteTree(Path.of((String) report.get("folder")));
    }

    @Test
    @Timeout(30)
    void the_damage_of_a_flip_covers_objects_written_before_it_and_no_later_ones() throws Exception {
        JsonNode start = ChaosHistory.JSON.readTree("{\"type\":\"fault\",\"phase\":\"start\",\"kind\":\"flip_byte\",\"time_ms\":1000,"
                + "\"bucket\":2,\"file_offset\":8192}");
        JsonNode end = ChaosHistory.JSON.readTree("{\"type\":\"fault\",\"phase\":\"end\",\"kind\":\"flip_byte\",\"time_ms\":3000}");
        List<ChaosChecker.Damage> damage = ChaosChecker.damage(List.of(start, end));
        assertEquals(List.of(new ChaosChecker.Damage("flip_byte", 2, 8192, 8193, 1000, 1000)), damage);
    }
}
