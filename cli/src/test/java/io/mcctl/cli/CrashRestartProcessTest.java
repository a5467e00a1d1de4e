package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.CreateSnapshotResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.proto.v1.KeyInfo;
import io.mcctl.master.proto.v1.ListKeysResponse;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 of a real {@code mcctl master start} process under load, and a restart on the same root: nothing
 * acknowledged is lost, every byte reads back, no two objects share a page, nothing leaks.
 */
@Timeout(150)
@Tag("process")
class CrashRestartProcessTest {

    static final long PAGE = 4096;
    static final long PAGES_TOTAL = 8 * 1024; // 8 buckets of 4 MiB in 4 KiB pages
    static final List<String> TENANTS = List.of("alpha", "beta");

    @TempDir
    Path dir;

    Path root() {
        return dir.resolve("root");
    }

    McctlProcess.Master startMaster(String allocationDeadline) throws Exception {
        return McctlProcess.Master.start(dir, Map.of(), "--root", root().toString(), "--bucket-count", "8", "--bucket-size", "4MiB",
                "--page-size", "4KiB", "--allocation-deadline", allocationDeadline, "--read-lease", "1s",
                // A grace of 1 s, not the default 10: every restart waits out the grace of the allocations the crash left.
                "--allocation-grace", "1s",
                "--eviction", "false"); // every acknowledged object must stay: this is about crashes, not a full cache
    }

    static void kill9(McctlProcess.Master master) throws InterruptedException {
        master.process().destroyForcibly();
        assertTrue(master.process().waitFor(30, TimeUnit.SECONDS), "the master did not die");
    }

    /** A node of the tier in this JVM: its own connection to the master process and its own fd pool. */
    record Node(MasterClient client, TierNode tier, TierWriter writer, TierReader reader) implements AutoCloseable {
        static Node connect(McctlProcess.Master master) throws IOException {
            return connect(master, MasterClient.Transport.STREAM);
        }

        /** A node whose batch calls travel as {@code transport} says. */
        static Node connect(McctlProcess.Master master, MasterClient.Transport transport) throws IOException {
            MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(10), io.mcctl.master.client.ClientSecurity.NONE, transport);
            try {
                TierNode tier = TierNode.connect(client, true, new ClientMetrics());
                return new Node(client, tier, new TierWriter(tier), new TierReader(tier));
            } catch (IOException | RuntimeException e) {
                client.close();
                throw e;
            }
        }

        @Override
        public void close() throws IOException {
            try {
                tier.close();
            } finally {
                client.close();
            }
        }
    }

    /** Bytes that follow from tenant, key and size, different for every object. */
    static byte[] content(String tenant, String key, int size) {
        SplittableRandom random = new SplittableRandom((tenant + "/" + key).hashCode() * 1_000_003L + size);
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i += 8) {
            long word = random.nextLong();
            for (int b = 0; b < 8 && i + b < size; b++) {
                bytes[i + b] = (byte) (word >>> (8 * b));
            }
        }
        byte[] name = key.getBytes(StandardCharsets.UTF_8);
        System.arraycopy(name, 0, bytes, 0, Math.min(name.length, size));
        return bytes;
    }

    static String id(String tenant, String key) {
        return tenant + "/" + key;
    }

    static String tenantOf(String id) {
        return id.substring(0, id.indexOf('/'));
    }

    static String keyOf(String id) {
        return id.substring(id.indexOf('/') + 1);
    }

    static boolean await(Duration limit, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + limit.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                return false;
            }
            Thread.sleep(20);
        }
        return true;
    }

    /**
     * What the clients know: keys whose notify returned OK and that were not removed since (with their size),
     * keys whose removal returned OK, and keys in doubt because the master died during their offload or removal.
     */
    static final class Model {
        final Map<String, Integer> acknowledged = new ConcurrentHashMap<>();
        final Set<String> removed = ConcurrentHashMap.newKeySet();
        final Map<String, Integer> inDoubt = new ConcurrentHashMap<>();
    }

    /** A bound on each client's operations in a round, far above what it does before the kill, so that a failed kill ends too. */
    static final int MAX_OPS_PER_CLIENT = 20_000;

    /** One client thread's load: batches of new keys offloaded, some of its acknowledged keys removed, until the master dies. */
    static void load(McctlProcess.Master master, MasterClient.Transport transport, Model model, String tenant, int round, long seed,
                     AtomicInteger ops, List<Throwable> failures) {
        SplittableRandom random = new SplittableRandom(seed);
        List<String> mine = new ArrayList<>();
        try (Node node = Node.connect(master, transport)) {
            // On until the master is killed under it, however long the snapshot taken meanwhile takes: a client that ran
            // out of work first would leave the kill nothing to interrupt.
            for (int op = 0; op < MAX_OPS_PER_CLIENT; op++) {
                if (mine.isEmpty() || random.nextDouble() < 0.75) {
                    int count = random.nextInt(1, 5);
                    List<TierWriter.ObjectSource> objects = new ArrayList<>();
                    Map<String, Integer> sizes = new HashMap<>();
                    for (int j = 0; j < count; j++) {
                        String key = "round-" + round + "/op-" + op + "/" + j; // the same names in both tenants
                        int size = random.nextInt(1, 48 << 10);
                        sizes.put(key, size);
                        model.inDoubt.put(id(tenant, key), size);
                        objects.add(new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(content(tenant, key, size)))));
                    }
                    List<TierWriter.Outcome> outcomes = node.writer().offload(tenant, objects, false); // throws when the master is gone
                    for (TierWriter.Outcome outcome : outcomes) {
                        String id = id(tenant, outcome.key());
                        model.inDoubt.remove(id);
                        if (outcome.ok()) {
                            model.acknowledged.put(id, sizes.get(outcome.key()));
                            mine.add(outcome.key());
                        } else if (outcome.code() != ErrorCode.NO_AVAILABLE_HANDLE) {
                            throw new AssertionError("offload of " + id + " failed: " + outcome);
                        }
                    }
                } else {
                    String key = mine.remove(random.nextInt(mine.size()));
                    String id = id(tenant, key);
                    model.inDoubt.put(id, model.acknowledged.remove(id));
                    KeyError removed = node.client().batchRemove(List.of(key), List.of(tenant)).getResults(0); // throws when the master is gone
                    if (removed.getError() != ErrorCode.OK) {
                        throw new AssertionError("removal of " + id + " failed: " + removed);
                    }
                    model.inDoubt.remove(id);
                    model.removed.add(id);
                }
                ops.incrementAndGet();
            }
        } catch (MasterException e) {
            if (!e.unreachable()) {
                failures.add(e);
            } // else the master was killed under this call: its keys stay in doubt
        } catch (Throwable e) {
            failures.add(e);
        }
    }

    /**
     * After a restart: every acknowledged key reads back byte-exact, every removed one is a miss, a key in doubt
     * is either byte-exact (then acknowledged from now on) or absent; no two mappings share a page; and once the
     * in-flight allocations from before the crash have expired, every allocated page belongs to a mapping.
     */
    static void verify(McctlProcess.Master master, Model model) throws Exception {
        try (Node node = Node.connect(master)) {
            for (String tenant : TENANTS) {
                Map<String, Integer> expected = new TreeMap<>();
                model.acknowledged.forEach((id, size) -> {
                    if (tenantOf(id).equals(tenant)) {
                        expected.put(keyOf(id), size);
                    }
                });
                List<String> keys = new ArrayList<>(expected.keySet());
                List<TierReader.Outcome> read = keys.isEmpty() ? List.of() : node.reader().get(tenant, keys);
                for (int i = 0; i < keys.size(); i++) {
                    TierReader.Outcome outcome = read.get(i);
                    String id = id(tenant, keys.get(i));
                    assertTrue(outcome.ok(), "acknowledged " + id + " is lost: " + outcome.status() + " " + outcome.message());
                    assertArrayEquals(content(tenant, keys.get(i), expected.get(keys.get(i))), bytes(outcome.data()), id);
                }
                List<String> removed = model.removed.stream().filter(id -> tenantOf(id).equals(tenant)).map(CrashRestartProcessTest::keyOf).toList();
                if (!removed.isEmpty()) {
                    for (TierReader.Outcome outcome : node.reader().get(tenant, removed)) {
                        assertEquals(TierReader.Status.NOT_FOUND, outcome.status(), id(tenant, outcome.key()) + " was removed");
                    }
                }
                List<String> doubtful = model.inDoubt.keySet().stream().filter(id -> tenantOf(id).equals(tenant)).map(CrashRestartProcessTest::keyOf)
                        .toList();
                if (!doubtful.isEmpty()) {
                    for (TierReader.Outcome outcome : node.reader().get(tenant, doubtful)) {
                        String id = id(tenant, outcome.key());
                        int size = model.inDoubt.remove(id);
                        if (outcome.ok()) {
                            assertArrayEquals(content(tenant, outcome.key(), size), bytes(outcome.data()), id + " (in doubt at the crash)");
                            model.acknowledged.put(id, size);
                        } else {
                            assertTrue(outcome.status() == TierReader.Status.NOT_FOUND || outcome.status() == TierReader.Status.NOT_READY,
                                    id + " (in doubt at the crash): " + outcome.status() + " " + outcome.message());
                            model.removed.add(id);
                        }
                    }
                }
            }
            MasterClient client = node.client();
            assertTrue(await(Duration.ofSeconds(30), () -> {
                GetStatsResponse stats = client.stats();
                return stats.getInFlightAllocations() == 0 && stats.getQuarantinedPages() == 0;
            }), "allocations from before the crash expire, quarantine drains: " + client.stats());
            List<DistributedDiskDescriptor> mappings = new ArrayList<>();
            for (String tenant : TENANTS) {
                String token = "";
                do {
                    ListKeysResponse page = client.listKeys(tenant, "", 500, token);
                    for (KeyInfo info : page.getKeysList()) {
                        mappings.add(info.getDistributedDisk());
                    }
                    token = page.getNextPageToken();
                } while (!token.isEmpty());
            }
            assertNoOverlap(mappings);
            GetStatsResponse stats = client.stats();
            long mappingPages = mappings.stream().mapToLong(d -> pagesOf(d.getObjectSize())).sum();
            assertEquals(model.acknowledged.size(), mappings.size(), "the master holds exactly the acknowledged keys");
            assertEquals(mappings.size(), stats.getMappings());
            assertEquals(mappingPages, stats.getPagesAllocated(), "pages allocated beyond the mappings (none in flight, none quarantined) leaked");
        }
    }

    static long pagesOf(long size) {
        return (size + PAGE - 1) / PAGE;
    }

    static byte[] bytes(ByteBuffer buffer) {
        ByteBuffer copy = buffer.duplicate();
        byte[] bytes = new byte[copy.remaining()];
        copy.get(bytes);
        return bytes;
    }

    static void assertNoOverlap(List<DistributedDiskDescriptor> placements) {
        Map<String, List<DistributedDiskDescriptor>> byFile = new HashMap<>();
        for (DistributedDiskDescriptor d : placements) {
            byFile.computeIfAbsent(d.getFilePath(), f -> new ArrayList<>()).add(d);
        }
        for (List<DistributedDiskDescriptor> inFile : byFile.values()) {
            inFile.sort((a, b) -> Long.compare(a.getOffset(), b.getOffset()));
            for (int i = 1; i < inFile.size(); i++) {
                DistributedDiskDescriptor before = inFile.get(i - 1);
                DistributedDiskDescriptor after = inFile.get(i);
                assertTrue(before.getOffset() + pagesOf(before.getObjectSize()) * PAGE <= after.getOffset(),
                        "two objects share a page: " + before + " and " + after);
            }
        }
    }

    /** Over the Session stream (what mcctl's client uses) and over unary calls: the same promises on both. */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(MasterClient.Transport.class)
    void three_rounds_of_load_and_kill_9_lose_nothing_acknowledged_overlap_nothing_and_leak_nothing(MasterClient.Transport transport)
            throws Exception {
        Model model = new Model();
        McctlProcess.Master master = startMaster("2s");
        try {
            for (int round = 0; round < 3; round++) {
                AtomicInteger ops = new AtomicInteger();
                List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
                List<Thread> clients = new ArrayList<>();
                for (int c = 0; c < 2; c++) {
                    McctlProcess.Master target = master;
                    String tenant = TENANTS.get(c);
                    int r = round;
                    long seed = round * 31L + c;
                    Thread t = new Thread(() -> load(target, transport, model, tenant, r, seed, ops, failures), "client-" + c);
                    clients.add(t);
                    t.start();
                }
                if (round != 1) {
                    assertTrue(await(Duration.ofSeconds(60), () -> ops.get() >= 30 || !failures.isEmpty()), () -> "no load: " + ops.get() + " operations");
                    try (MasterClient admin = new MasterClient(master.address(), Duration.ofSeconds(30))) {
                        CreateSnapshotResponse snapshot = admin.createSnapshot(); // while both clients keep writing
                        assertTrue(Files.exists(Path.of(snapshot.getPath())), snapshot.toString());
                    }
                }
                int killAt = ops.get() + 40;
                assertTrue(await(Duration.ofSeconds(60), () -> ops.get() >= killAt || !failures.isEmpty()),
                        () -> "no load: " + ops.get() + " operations, " + killAt + " awaited");
                kill9(master);
                for (Thread t : clients) {
                    t.join(30_000);
                    assertFalse(t.isAlive(), t.getName() + " did not stop after the master died");
                }
                assertEquals(List.of(), failures);
                assertTrue(ops.get() < 2 * MAX_OPS_PER_CLIENT, "the master was killed in the middle of the load, not after it");

                master = startMaster("2s");
                verify(master, model);
            }
            assertTrue(model.acknowledged.size() > 50, "enough keys survived to mean something: " + model.acknowledged.size());
            assertTrue(model.removed.size() > 5, "removes were acknowledged too: " + model.removed.size());
        } finally {
            master.close();
        }
    }

    @Test
    void a_client_writing_at_the_crash_commits_after_the_restart_within_its_deadline_or_its_pages_are_reclaimed_after_it()
            throws Exception {
        Duration deadline = Duration.ofSeconds(8);
        McctlProcess.Master master = startMaster("8s");
        long allocatedAt = System.currentTimeMillis();
        DistributedDiskDescriptor abandoned;
        DistributedDiskDescriptor writing;
        byte[] content = content("alpha", "writing", 200 << 10);
        int crc;
        try (Node node = Node.connect(master)) {
            abandoned = node.client().allocate("alpha", "abandoned", 256 << 10, false).getDistributedDisk();
            writing = node.client().allocate("alpha", "writing", content.length, false).getDistributedDisk();
            crc = node.tier().io().write(Path.of(writing.getFilePath()), writing.getOffset(), ByteBuffer.wrap(content));
            byte[] half = content("alpha", "abandoned", 128 << 10);
            node.tier().io().write(Path.of(abandoned.getFilePath()), abandoned.getOffset(), ByteBuffer.wrap(half));
            kill9(master); // both writers are mid-write: allocated, not notified
        }
        long held = pagesOf(abandoned.getObjectSize()) + pagesOf(writing.getObjectSize());

        master = startMaster("8s");
        try (Node node = Node.connect(master)) {
            GetStatsResponse stats = node.client().stats();
            // New allocations take every page they can: never one of the pre-crash writers'.
            List<String> fill = new ArrayList<>();
            for (int i = 0; i < 2100; i++) {
                fill.add("fill-" + i);
            }
            List<AllocationResult> results = node.client().batchAllocate(fill, Collections.nCopies(fill.size(), "beta"),
                    Collections.nCopies(fill.size(), 4 * PAGE), false).getResultsList();
            GetStatsResponse full = node.client().stats();
            assumeTrue(System.currentTimeMillis() < allocatedAt + deadline.toMillis(),
                    "the restart outlasted the allocation deadline: the held pages could not be checked before it");
            assertEquals(2, stats.getInFlightAllocations(), "both allocations survived the crash");
            // Besides them, the free pages of the reservations they were answered in are held (their records were durable,
            // but the restarted master cannot know that every allocation answered there was).
            assertEquals(held + stats.getReservationHeldPages(), stats.getPagesAllocated());
            List<String> granted = new ArrayList<>();
            List<DistributedDiskDescriptor> places = new ArrayList<>();
            for (int i = 0; i < results.size(); i++) {
                AllocationResult r = results.get(i);
                if (r.getStatus().getError() == ErrorCode.OK) {
                    places.add(r.getDistributedDisk());
                    granted.add(fill.get(i));
                } else {
                    assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, r.getStatus().getError(), r.toString());
                }
            }
            List<DistributedDiskDescriptor> all = new ArrayList<>(places);
            all.add(abandoned);
            all.add(writing);
            assertNoOverlap(all);
            assertTrue(granted.size() < fill.size(), "the tier was filled");
            assertEquals(held + full.getReservationHeldPages() + 4L * granted.size(), full.getPagesAllocated());
            assertTrue(PAGES_TOTAL - full.getPagesAllocated() < 4L * 10, "at most a partial run is left free between held ranges");

            List<KeyError> notified = node.client().notifySuccess(List.of("writing"), List.of("alpha"),
                    List.of(writing.toBuilder().setCrc32C(crc).build())).getResultsList();
            assumeTrue(System.currentTimeMillis() < allocatedAt + deadline.toMillis(), "the notify came after the deadline");
            assertEquals(ErrorCode.OK, notified.get(0).getError(), notified.toString());
            TierReader.Outcome read = node.reader().get("alpha", List.of("writing")).get(0);
            assertTrue(read.ok(), read.toString());
            assertArrayEquals(content, bytes(read.data()), "the object written across the crash reads back byte-exact");

            node.client().batchFree(granted, Collections.nCopies(granted.size(), "beta"), places);
            assertTrue(await(Duration.ofSeconds(30), () -> node.client().stats().getInFlightAllocations() == 0),
                    "the abandoned allocation is reclaimed at its deadline");
            // Its writer might still be writing: its pages wait out the allocation grace (and the reservations' holds theirs),
            // then nothing but the committed object is left.
            assertTrue(await(Duration.ofSeconds(30), () -> node.client().stats().getPagesAllocated() == pagesOf(writing.getObjectSize())),
                    "nothing but the committed object is left once the grace has passed");
            List<KeyError> late = node.client().notifySuccess(List.of("abandoned"), List.of("alpha"),
                    List.of(abandoned.toBuilder().setCrc32C(1).build())).getResultsList();
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, late.get(0).getError(), "a notify after the deadline is refused");
        } finally {
            master.close();
        }
    }
}
