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
 * recorded history. A fixed seed and a random one (printed, to repeat with {@code mcctl bench chaos --seed S}); and a
 * byte flipped behind the nemesis's back, which the checker must report.
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

    @Test
    @Timeout(600)
    void a_process_drawn_for_two_kills_in_one_round_is_killed_and_started_once() throws Exception {
        // Seed 4's first round holds two faults; with one kind and one Python worker both kill py0.
        assertTrue(new java.util.Random(4).nextInt(10) < 3, "seed 4 no longer opens with a round of two faults");
        Map<String, Object> report = ChaosRun.run(new ChaosRun.Settings(4, Duration.ofSeconds(10), 1, 1, 1, EnumSet.of(FaultKind.KILL_CLIENT),
                dir, PYTHON_CLIENT, false), null);
        assertTrue((boolean) report.get("passed"), describe(report));
        assertTrue((int) report.get("faults_injected") > 0, "no fault was injected: " + report);
    }

    @Test
    @Timeout(600)
    void a_byte_flipped_where_no_fault_was_recorded_fails_the_run() throws Exception {
        AtomicReference<String> flipped = new AtomicReference<>();
        Map<String, Object> report = ChaosRun.run(new ChaosRun.Settings(7, Duration.ofSeconds(15), 1, 2, 0, EnumSet.noneOf(FaultKind.class), dir,
                null, true), cluster -> {
            try (MasterClient client = new MasterClient(cluster.haUrl(), Duration.ofSeconds(10))) {
                for (int k = 0; k < JavaWorker.KEYS && flipped.get() == null; k++) {
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
                        flipped.set(tenant + "/" + key);
                        break;
                    }
                }
            }
        });
        assertFalse((boolean) report.get("passed"), "a flipped byte went unnoticed: " + report);
        @SuppressWarnings("unchecked")
        Map<String, Integer> checks = (Map<String, Integer>) report.get("checks");
        assertEquals(1, checks.get("wrong_bytes_on_disk"), "the final read of " + flipped.get() + " must fail its checksum: " + report);
        assertEquals(1, checks.get("fsck"), "fsck --deep must name " + flipped.get() + ": " + report);
        assertTrue(report.get("violations").toString().contains(flipped.get()), report.get("violations").toString());
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
