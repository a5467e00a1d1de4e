package io.mcctl.master.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Timeout;

/**
 * A batch of lookups ({@link PageService#getMappings}, which reads the batch's table lines ahead without the locks)
 * answers each key as {@link PageService#getMapping} does, with the same leases and counters, a batch of existence checks
 * ({@link PageService#existsAll}) each key as {@link PageService#exists}, and a batch of allocations
 * ({@link PageService#allocateAll}, which reads ahead the same way) each key as {@link PageService#allocate}: two services
 * given the same changes on the same clock, one asked in batches and the other key by key, stay alike through random
 * commits, overwrites, removals, in-flight keys, bad keys, sizes and tenants, and tables that grow and compact.
 */
@Timeout(120)
class BatchLookupTest {

    static final long PAGE = 4096;
    static final BucketLayout LAYOUT = new BucketLayout(Path.of("/nonexistent/mcctl-batch-lookup"), 4, PAGE, 4096 * PAGE);

    long now = 1_000_000_000L;

    PageService service() {
        return PageService.builder(LAYOUT).allocationDeadline(Duration.ofSeconds(60)).readLease(Duration.ofSeconds(5)).allocationGrace(Duration.ofSeconds(3)).nanoClock(() -> now).build();
    }

    @Property(tries = 40)
    void a_batch_answers_each_key_as_a_lookup_of_it_alone(@ForAll @IntRange(min = 1, max = 400) int steps, @ForAll long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        PageService batched = service();
        PageService alone = service();
        List<String> tenants = List.of("t", "u", "bad tenant!");
        Map<String, long[]> leasedLookups = new HashMap<>(); // per tenant: {hits, misses} of the lookups asked
        int keySpace = 20 + random.nextInt(600);
        for (int step = 0; step < steps; step++) {
            now += random.nextInt(200_000_000);
            int what = random.nextInt(11);
            if (what == 10) {
                allocateBatch(batched, alone, random, tenants, keySpace, step);
            } else if (what < 7) {
                String tenant = tenants.get(random.nextInt(2));
                String key = "k" + random.nextInt(keySpace);
                long size = 1 + random.nextInt(3) * PAGE;
                boolean commit = random.nextInt(8) != 0; // the rest stay in flight
                for (PageService s : List.of(batched, alone)) {
                    Result<Placement> allocated = s.allocate(tenant, key, size, true);
                    if (allocated.isOk() && commit) {
                        s.notifySuccess(tenant, key, allocated.value().withCrc(key.hashCode() ^ step));
                    }
                }
            } else if (what < 8) {
                String tenant = tenants.get(random.nextInt(2));
                String key = "k" + random.nextInt(keySpace);
                assertEquals(batched.remove(tenant, key).isOk(), alone.remove(tenant, key).isOk());
            } else {
                int n = 1 + random.nextInt(random.nextBoolean() ? 8 : 130);
                List<String> keys = new ArrayList<>();
                List<String> owners = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    addKeyOfBatch(random, tenants, keySpace, keys, owners);
                }
                boolean existence = what == 9; // a batch asking only whether its keys exist: no lease
                List<? extends Result<?>> answers = existence ? batched.existsAll(batched.batchTenants(), owners, keys)
                        : batched.getMappings(batched.batchTenants(), owners, keys);
                assertEquals(n, answers.size());
                for (int i = 0; i < n; i++) {
                    Result<?> expected = existence ? alone.exists(owners.get(i), keys.get(i)) : alone.getMapping(owners.get(i), keys.get(i));
                    Result<?> got = answers.get(i);
                    String where = (existence ? "existence of key " : "key ") + i + " (" + owners.get(i) + ", " + keys.get(i) + ") at step " + step;
                    assertEquals(expected.isOk(), got.isOk(), where);
                    assertEquals(expected.error(), got.error(), where);
                    assertEquals(expected.message(), got.message(), where);
                    if (expected.isOk()) {
                        assertEquals(expected.value(), got.value(), where);
                    }
                    if (!existence && expected.error() != ErrorCode.INVALID_PARAMS) {
                        leasedLookups.computeIfAbsent(owners.get(i), t -> new long[2])[expected.isOk() ? 0 : 1]++;
                    }
                }
            }
        }
        Map<String, long[]> expected = alone.tenantCounters();
        Map<String, long[]> got = batched.tenantCounters();
        assertEquals(expected.keySet(), got.keySet());
        for (String tenant : expected.keySet()) {
            assertArrayEquals(expected.get(tenant), got.get(tenant), "hits and misses of " + tenant);
            long[] asked = leasedLookups.getOrDefault(tenant, new long[2]);
            assertEquals(asked[0], got.get(tenant)[2], "hits of " + tenant + ": one per leased lookup that found its key");
            assertEquals(asked[1], got.get(tenant)[3], "misses of " + tenant + ": one per leased lookup that did not");
        }
        // The leases granted: a key looked up in a batch is held as long as one looked up alone.
        for (int k = 0; k < keySpace; k++) {
            for (String tenant : tenants.subList(0, 2)) {
                Result<PageService.KeyDetail> a = alone.getMappingDetail(tenant, "k" + k);
                Result<PageService.KeyDetail> b = batched.getMappingDetail(tenant, "k" + k);
                assertEquals(a.isOk(), b.isOk());
                if (a.isOk()) {
                    assertEquals(a.value(), b.value(), tenant + " k" + k);
                }
            }
        }
        assertEquals(alone.stats().quarantinedPages(), batched.stats().quarantinedPages(), "removed pages wait out the same leases");
        assertEquals(alone.stats(), batched.stats());
    }

    /** One key of a batch and its tenant: mostly a key of the key space or just past it, now and then an empty or oversized key or a bad tenant. */
    private static void addKeyOfBatch(SplittableRandom random, List<String> tenants, int keySpace, List<String> keys, List<String> owners) {
        int kind = random.nextInt(40);
        keys.add(kind == 0 ? "" : kind == 1 ? "x".repeat(KeyRules.MAX_KEY_BYTES + 1) : "k" + random.nextInt(keySpace + 10));
        owners.add(tenants.get(random.nextInt(40) == 0 ? 2 : random.nextInt(2)));
    }

    /**
     * A batch of allocations ({@link PageService#allocateAll}, which also reads its table lines ahead) in one service and
     * the same allocations key by key in the other: the same answers, placements included, for new keys, keys in flight
     * or committed (with and without overwrite), the same key twice in a batch, bad keys, sizes and tenants; then some of
     * them committed in both.
     */
    private void allocateBatch(PageService batched, PageService alone, SplittableRandom random, List<String> tenants, int keySpace, int step) {
        int n = 1 + random.nextInt(random.nextBoolean() ? 8 : 130);
        boolean overwrite = random.nextBoolean();
        List<String> keys = new ArrayList<>();
        List<String> owners = new ArrayList<>();
        List<Long> sizes = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            addKeyOfBatch(random, tenants, keySpace, keys, owners);
            int sizeKind = random.nextInt(40);
            sizes.add(sizeKind == 0 ? 0 : sizeKind == 1 ? LAYOUT.bucketSize() + 1 : 1 + random.nextInt(3) * PAGE);
        }
        List<Result<Placement>> answers = batched.allocateAll(batched.batchTenants(), owners, keys, sizes, overwrite, false);
        assertEquals(n, answers.size());
        List<Result<Placement>> expected = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            expected.add(alone.allocate(alone.tenant(owners.get(i)), keys.get(i), sizes.get(i), overwrite, false));
        }
        for (int i = 0; i < n; i++) {
            Result<Placement> got = answers.get(i);
            String where = "allocation " + i + " (" + owners.get(i) + ", " + keys.get(i) + ", " + sizes.get(i) + ") at step " + step;
            assertEquals(expected.get(i).isOk(), got.isOk(), where);
            assertEquals(expected.get(i).error(), got.error(), where);
            assertEquals(expected.get(i).message(), got.message(), where);
            if (got.isOk()) {
                assertEquals(expected.get(i).value(), got.value(), where);
                if (random.nextInt(4) != 0) {
                    for (PageService s : List.of(batched, alone)) {
                        assertEquals(true, s.notifySuccess(owners.get(i), keys.get(i), got.value().withCrc(step)).isOk(), where);
                    }
                }
            }
        }
    }
}
