package io.mcctl.master.service;

import io.mcctl.master.protocol.KeyRules;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.eviction.EvictionPolicy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.PropertyTimeout;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.RandomDistribution;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.statistics.StatisticsReport;

/**
 * Allocations that make room by eviction, on a clock the test moves, through random sequences of allocations of mixed
 * sizes (some pinned), commits, frees, reads (leases), removes and clock steps by tenants without quotas, checked
 * against a model of which pages eviction may take (free pages, and committed objects that are unpinned or, when nothing
 * unpinned is left, pinned; never pages in flight or quarantined):
 * <ul>
 *   <li>an allocation refused NO_AVAILABLE_HANDLE evicted nothing, unless every window it found held leased objects: then
 *       it evicted one window's objects, their pages with the free ones make a run of its size, and it says when;</li>
 *   <li>an allocation that evicted lies where it evicted: the objects it evicted lie in its pages, except the last, which
 *       may reach past their end, so what it evicts is at most its pages plus the rest of one object;</li>
 *   <li>when the model finds a window (and the tier holds few enough objects that every one is a place the service looks
 *       around), the allocation is not refused without evicting;</li>
 *   <li>no page is lost, leaked or shared (a page check at the end).</li>
 * </ul>
 */
@AddLifecycleHook(PropertyTimeout.class)
class RoomEvictionPropertiesTest {

    static final long PAGE = 4096;
    static final Duration DEADLINE = Duration.ofMillis(100);
    static final Duration LEASE = Duration.ofMillis(70);
    static final Duration GRACE = Duration.ofMillis(50);
    static final int KEYS = 10;
    static final String[] TENANTS = {"tenant-a", "tenant-b"};

    enum Kind { ALLOCATE, NOTIFY, FREE, GET, REMOVE, ADVANCE, REAP }

    record Op(Kind kind, int tenant, int key, int pages, boolean pin, int millis) {
    }

    record Setup(int buckets, int pagesPerBucket) {
    }

    static final List<String> MUST_HAPPEN = List.of("refused without evicting", "evicted and placed", "evicted leased objects and deferred",
            "refused while no window existed", "evicted several objects for one allocation", "evicted pinned objects");

    @Property(tries = 1000, shrinking = ShrinkingMode.BOUNDED)
    @StatisticsReport(StatisticsReport.StatisticsReportMode.OFF)
    void an_allocation_evicts_only_the_objects_of_a_window_it_then_takes(@ForAll("setups") Setup setup, @ForAll("operations") List<Op> ops) {
        Run run = new Run(setup);
        for (Op op : ops) {
            PropertyTimeout.check();
            run.apply(op);
        }
        PageCheck check = run.service.checkPages(0, false, 4);
        assertTrue(check.clean(), check.toString());
        assertEquals(run.committed.size(), run.service.mappingCount(), "the model holds every committed object the service holds");
        assertEquals(0, run.service.roomsLostTotal(), "nothing runs alongside: no window can be lost");
        Statistics.coverage(coverage -> {
            for (String outcome : MUST_HAPPEN) {
                Consumer<Integer> reached = n -> assertTrue(n > 0, "the runs never reached: " + outcome);
                coverage.check(outcome).count(reached);
            }
        });
    }

    @Provide
    Arbitrary<Setup> setups() {
        return Combinators.combine(Arbitraries.of(1, 2, 3), Arbitraries.of(8, 16, 32)).as(Setup::new);
    }

    @Provide
    Arbitrary<List<Op>> operations() {
        Arbitrary<Integer> tenant = Arbitraries.integers().between(0, TENANTS.length - 1);
        Arbitrary<Integer> key = Arbitraries.integers().between(0, KEYS - 1);
        Arbitrary<Op> allocate = Combinators.combine(tenant, key, Arbitraries.frequency(Tuple.of(6, 1), Tuple.of(3, 2), Tuple.of(2, 3),
                        Tuple.of(2, 5), Tuple.of(1, 8), Tuple.of(1, 13)), Arbitraries.frequency(Tuple.of(9, false), Tuple.of(1, true)))
                .as((t, k, pages, pin) -> new Op(Kind.ALLOCATE, t, k, pages, pin, 0));
        Arbitrary<Op> notify = Combinators.combine(tenant, key).as((t, k) -> new Op(Kind.NOTIFY, t, k, 0, false, 0));
        Arbitrary<Op> free = Combinators.combine(tenant, key).as((t, k) -> new Op(Kind.FREE, t, k, 0, false, 0));
        Arbitrary<Op> get = Combinators.combine(tenant, key).as((t, k) -> new Op(Kind.GET, t, k, 0, false, 0));
        Arbitrary<Op> remove = Combinators.combine(tenant, key).as((t, k) -> new Op(Kind.REMOVE, t, k, 0, false, 0));
        Arbitrary<Op> advance = Arbitraries.integers().between(1, 120).map(ms -> new Op(Kind.ADVANCE, 0, 0, 0, false, ms));
        Arbitrary<Op> reap = Arbitraries.just(new Op(Kind.REAP, 0, 0, 0, false, 0));
        return Arbitraries.frequencyOf(Tuple.of(30, allocate), Tuple.of(30, notify), Tuple.of(3, free), Tuple.of(10, get),
                        Tuple.of(4, remove), Tuple.of(10, advance), Tuple.of(4, reap))
                .list().ofMinSize(1).ofMaxSize(120).withSizeDistribution(RandomDistribution.uniform());
    }

    /** A committed object. */
    record Held(String scoped, Placement placement, boolean pinned) {
        long firstPage() {
            return placement.offset() / PAGE;
        }

        long endPage() {
            return firstPage() + (placement.size() + PAGE - 1) / PAGE;
        }
    }


    static final class Run {
        final Setup setup;
        final BucketLayout layout;
        long now = 5_000_000_000L;
        final PageService service;
        /** The placement each key was allocated last, for its notify, and whether its commit is pinned. */
        final Map<String, Placement> allocated = new HashMap<>();
        final Map<String, Boolean> pinned = new HashMap<>();
        /** The model: every committed object, as commits, removes and the evictions seen put it. */
        final Map<String, Held> committed = new HashMap<>();
        /** Until when (service clock) each key's committed object is leased, by this test's reads. */
        final Map<String, Long> leasedUntil = new HashMap<>();

        Run(Setup setup) {
            this.setup = setup;
            this.layout = new BucketLayout(Path.of("/nonexistent/mcctl-room-eviction"), setup.buckets(), PAGE, setup.pagesPerBucket() * PAGE);
            // No watermark pass: only allocations evict.
            this.service = PageService.builder(layout).allocationDeadline(DEADLINE).readLease(LEASE).allocationGrace(GRACE).nanoClock(() -> now)
                    .eviction(new EvictionPolicy(true, 1.0, 1.0)).build();
        }

        void apply(Op op) {
            String tenant = TENANTS[op.tenant()];
            String key = "k" + op.key();
            String scoped = KeyRules.scopedKey(tenant, key);
            switch (op.kind()) {
                case ALLOCATE -> allocate(op, tenant, key, scoped);
                case NOTIFY -> {
                    Placement placement = allocated.get(scoped);
                    if (placement != null && service.notifySuccess(tenant, key, placement.withCrc(7)).isOk()) {
                        leasedUntil.remove(scoped);
                        committed.put(scoped, new Held(scoped, placement, pinned.get(scoped)));
                    }
                }
                case FREE -> {
                    Placement placement = allocated.get(scoped);
                    if (placement != null) {
                        service.free(tenant, key, placement);
                    }
                }
                case GET -> {
                    if (service.getMapping(tenant, key).isOk()) {
                        leasedUntil.put(scoped, now + LEASE.toNanos());
                    }
                }
                case REMOVE -> {
                    if (service.remove(tenant, key).isOk()) {
                        committed.remove(scoped);
                    }
                }
                case ADVANCE -> now += op.millis() * 1_000_000L;
                case REAP -> service.reap();
            }
        }

        void allocate(Op op, String tenant, String key, String scoped) {
            long pages = op.pages();
            if (pages > setup.pagesPerBucket()) {
                return;
            }
            // The test's 20 keys lie in 20 shards, so with no more than the sample's size every takeable one is sampled.
            boolean mayFind = takeable().size() <= Evictor.EVICTION_SAMPLES;
            boolean windowBefore = windowExists(pages);
            boolean pinnedOnly = !committed.isEmpty() && committed.values().stream().allMatch(Held::pinned);
            long evictedBefore = service.evictedTotal(Change.RemoveReason.EVICTED_ALLOCATION);
            Result<Placement> result = service.allocate(tenant, key, pages * PAGE - 100, true, op.pin());
            List<Held> victims = new ArrayList<>();
            for (Held held : List.copyOf(committed.values())) {
                Result<Placement> still = service.peek(KeyRules.tenantOf(held.scoped()), KeyRules.keyOf(held.scoped()));
                if (!still.isOk() || !still.value().sameRange(held.placement())) {
                    victims.add(held);
                    committed.remove(held.scoped());
                }
            }
            victims.sort(Comparator.comparingLong(Held::firstPage));
            String where = op + " -> " + result + ", evicted " + victims;
            assertEquals(victims.size(), service.evictedTotal(Change.RemoveReason.EVICTED_ALLOCATION) - evictedBefore, where);
            if (result.isOk()) {
                allocated.put(scoped, result.value());
                pinned.put(scoped, op.pin());
            }
            if (result.isOk() || result.error() != ErrorCode.NO_AVAILABLE_HANDLE) {
                if (!victims.isEmpty()) {
                    assertTrue(result.isOk(), where);
                    Statistics.collect("evicted and placed");
                    checkWindow(victims, pages, result.value().bucket(), result.value().offset() / PAGE, pinnedOnly, where);
                }
                return;
            }
            if (victims.isEmpty()) {
                Statistics.collect("refused without evicting");
                if (!windowBefore) {
                    Statistics.collect("refused while no window existed");
                }
                // Every takeable object is a place the service looks around when there are few enough of them.
                assertFalse(mayFind && windowBefore, "the model finds room the service did not make: " + where);
                return;
            }
            // Refused after evicting: only for objects under read leases, whose pages are free once the leases end.
            Statistics.collect("evicted leased objects and deferred");
            assertTrue(victims.stream().anyMatch(v -> leasedUntil.getOrDefault(v.scoped(), Long.MIN_VALUE) - now > 0),
                    "refused after evicting no leased object: " + where);
            assertTrue(result.retryAfterMillis() > 0, "refused after evicting without saying when the room is free: " + where);
            int bucket = victims.get(0).placement().bucket();
            checkWindow(victims, pages, bucket, -1, pinnedOnly, where);
            boolean[] room = new boolean[setup.pagesPerBucket()];
            for (int page = 0; page < room.length; page++) {
                room[page] = !service.allocator(bucket).isAllocated(page);
            }
            for (Held v : victims) {
                for (long page = v.firstPage(); page < v.endPage(); page++) {
                    room[(int) page] = true;
                }
            }
            assertTrue(longestRun(room) >= pages, "the objects evicted make no room of " + pages + " pages: " + where);
        }

        /**
         * The victims of one allocation of {@code pages} lie in one bucket, inside the window from {@code first} (-1: from
         * the first victim's first page), except that the last may reach past its end; and what they held is at most the
         * window's pages plus the last one's; pinned ones only when nothing unpinned was left ({@code pinnedOnly}).
         */
        void checkWindow(List<Held> victims, long pages, int bucket, long first, boolean pinnedOnly, String where) {
            long start = first >= 0 ? first : victims.get(0).firstPage();
            long bytes = 0;
            for (int i = 0; i < victims.size(); i++) {
                Held v = victims.get(i);
                assertEquals(bucket, v.placement().bucket(), "a victim outside the allocation's bucket: " + where);
                assertTrue(v.firstPage() >= start && v.firstPage() < start + pages, "a victim outside the window: " + where);
                if (i < victims.size() - 1) {
                    assertTrue(v.endPage() <= start + pages, "a victim other than the last reaches past the window: " + where);
                }
                assertTrue(!v.pinned() || pinnedOnly, "a pinned victim while unpinned objects were left: " + where);
                if (v.pinned()) {
                    Statistics.collect("evicted pinned objects");
                }
                bytes += v.placement().size();
            }
            assertTrue(bytes <= pages * PAGE + victims.get(victims.size() - 1).placement().size(), "evicted " + bytes + " bytes: " + where);
            if (victims.size() > 1) {
                Statistics.collect("evicted several objects for one allocation");
            }
        }

        /** The committed objects eviction may take: unpinned ones, or every one when all are pinned. */
        List<Held> takeable() {
            boolean allPinned = committed.values().stream().allMatch(Held::pinned);
            return committed.values().stream().filter(h -> allPinned || !h.pinned()).toList();
        }

        /** Whether some bucket has {@code pages} pages in a row that are free or held by takeable objects. */
        boolean windowExists(long pages) {
            for (int b = 0; b < setup.buckets(); b++) {
                boolean[] room = new boolean[setup.pagesPerBucket()];
                for (int page = 0; page < room.length; page++) {
                    room[page] = !service.allocator(b).isAllocated(page);
                }
                for (Held h : takeable()) {
                    if (h.placement().bucket() == b) {
                        for (long page = h.firstPage(); page < h.endPage(); page++) {
                            room[(int) page] = true;
                        }
                    }
                }
                if (longestRun(room) >= pages) {
                    return true;
                }
            }
            return false;
        }

        static long longestRun(boolean[] room) {
            long best = 0;
            long run = 0;
            for (boolean free : room) {
                run = free ? run + 1 : 0;
                best = Math.max(best, run);
            }
            return best;
        }
    }
}
