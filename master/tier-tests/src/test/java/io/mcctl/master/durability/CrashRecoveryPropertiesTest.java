package io.mcctl.master.durability;

import io.mcctl.master.service.eviction.EvictionPolicy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.mcctl.testkit.PropertyTimeout;
import io.mcctl.testkit.StateFixture;
import io.mcctl.testkit.Tmpfs;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.service.PageCheck;
import io.mcctl.master.service.PageService;
import io.mcctl.testkit.StateFixture.Captured;
import io.mcctl.master.service.Change;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.Result;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AddLifecycleHook;

/**
 * The master's page state against a simple model, over a real write-ahead log and real snapshots in a temp
 * directory, with crashes at random points: a crash leaves the state directory as a kill -9 would (whatever the log
 * had written), recovery rebuilds a new service from it, and the run goes on with that one. Every step is checked
 * against the model (what each key holds, what each call answers), and the pages against the claims (the master's
 * own page check: nothing leaked, nothing claimed twice). A crash taken while a change is still unacknowledged may
 * keep or lose that change, and nothing else; one taken with everything acknowledged must recover exactly the live
 * state (mappings, in-flight allocations with their deadlines, quarantine with its release times, bitmaps), with the
 * pages of every reservation left open held until its hold time. An allocation answered inside a reservation and then
 * lost with its record in a crash is remembered: no later allocation may get its pages while its writer may write.
 *
 * <p>A run's directory is a small tmpfs where the tests may mount one (they run as root), so that the log can really
 * fail: its next write finds the filesystem full. Changes made since the last durable one are then applied but not in
 * the log; no read may show them, no snapshot may keep them, and a restart must bring back exactly what the log holds.
 * Where no tmpfs can be mounted, that step does nothing.
 */
@AddLifecycleHook(PropertyTimeout.class)
class CrashRecoveryPropertiesTest {

    static final long PAGE = 4096;
    static final Duration DEADLINE = Duration.ofSeconds(30);
    static final Duration GRACE = Duration.ofSeconds(10);
    static final Duration LEASE = Duration.ofSeconds(5);
    static final String[] KEYS = {"a", "b", "c", "d", "e", "f", "ключ", "g/\uD83D\uDE00"};
    static final String[] TENANTS = {"t1", "t2"};

    enum Kind { ALLOCATE, ALLOCATE_OVERWRITE, NOTIFY, NOTIFY_WRONG, FREE, REMOVE, LOOKUP, RENEW, DROP, EXPIRE_ALL, ADVANCE, SNAPSHOT, CRASH,
        CRASH_UNACKNOWLEDGED, ANSWERED_THEN_CRASH, EVICT, QUOTA, GROW, GROW_THEN_CRASH_UNACKNOWLEDGED, PROMOTE, PROMOTION_TAKE, PROMOTION_END,
        LOG_FAILS }

    /** Eviction on, with watermarks low enough that a run of these steps crosses them. */
    static final EvictionPolicy EVICTION = new EvictionPolicy(true, 0.6, 0.4);

    record Step(Kind kind, int tenant, int key, int pages) {
        @Override
        public String toString() {
            return kind + "(" + TENANTS[tenant] + "/" + KEYS[key] + (kind == Kind.ALLOCATE || kind == Kind.ALLOCATE_OVERWRITE ? ", " + pages + " pages"
                    : kind == Kind.CRASH_UNACKNOWLEDGED ? ", cut " + pages : "") + ")";
        }
    }

    @Provide
    Arbitrary<List<Step>> runs() {
        Arbitrary<Kind> kinds = Arbitraries.frequency(
                Tuple.of(12, Kind.ALLOCATE), Tuple.of(4, Kind.ALLOCATE_OVERWRITE), Tuple.of(12, Kind.NOTIFY), Tuple.of(1, Kind.NOTIFY_WRONG),
                Tuple.of(3, Kind.FREE), Tuple.of(5, Kind.REMOVE), Tuple.of(5, Kind.LOOKUP), Tuple.of(2, Kind.RENEW), Tuple.of(2, Kind.DROP),
                Tuple.of(2, Kind.EXPIRE_ALL), Tuple.of(3, Kind.ADVANCE), Tuple.of(2, Kind.SNAPSHOT), Tuple.of(2, Kind.CRASH),
                Tuple.of(2, Kind.CRASH_UNACKNOWLEDGED), Tuple.of(3, Kind.ANSWERED_THEN_CRASH), Tuple.of(3, Kind.EVICT), Tuple.of(1, Kind.QUOTA),
                Tuple.of(1, Kind.GROW), Tuple.of(1, Kind.GROW_THEN_CRASH_UNACKNOWLEDGED),
                Tuple.of(3, Kind.PROMOTE), Tuple.of(2, Kind.PROMOTION_TAKE), Tuple.of(2, Kind.PROMOTION_END), Tuple.of(2, Kind.LOG_FAILS));
        Arbitrary<Step> step = Combinators.combine(kinds, Arbitraries.integers().between(0, TENANTS.length - 1),
                Arbitraries.integers().between(0, KEYS.length - 1), Arbitraries.integers().between(1, 40)).as(Step::new);
        return step.list().ofMinSize(20).ofMaxSize(120);
    }

    /** What the model holds for a key. */
    static final class KeyModel {
        Placement committed;
        Placement inFlight;
        /** On the run's clock. */
        long deadline;
        /** The mapping its promotion task copies, or null; and the node holding the task (null: queued). */
        Placement promoting;
        String holder;

        /** Whether the in-flight allocation is past its deadline at {@code now} (the service's own test: deadline - now <= 0). */
        boolean expired(long now) {
            return inFlight != null && deadline - now <= 0;
        }
    }

    /**
     * An allocation answered (inside a durable reservation) whose record a crash lost: recovery does not know it, but its
     * writer may write its pages until its deadline, and late by the grace after it; until then no allocation may get them.
     */
    record Ghost(Placement placement, long writableUntil) {
        boolean overlaps(Placement other) {
            return other.bucket() == placement.bucket() && other.offset() < placement.offset() + placement.size()
                    && placement.offset() < other.offset() + other.size();
        }
    }

    /** The run's clock in nanoseconds, kept across crashes, and a wall clock tied to it: deadlines are exact on both sides. */
    final AtomicLong clock = new AtomicLong();
    static final long WALL_BASE_MS = 1_800_000_000_000L;

    /** A live service over its own log, with a clock the run moves by hand. */
    final class Live implements AutoCloseable {
        /** Evicting as {@link #EVICTION} says; a run swaps in the same service without eviction where one change must be one. */
        PageService pages;
        final WriteAheadLog wal;
        final Snapshotter snapshotter;

        Live(Path stateDir) throws IOException {
            StateRecovery.Recovered recovered = StateRecovery.recover(stateDir, layout, true,
                    () -> PageService.builder(layout).allocationDeadline(DEADLINE).readLease(LEASE).allocationGrace(GRACE).nanoClock(clock::get).wallClock(() -> WALL_BASE_MS + clock.get() / 1_000_000).build());
            wal = new WriteAheadLog(stateDir, "test-cluster", recovered.lastSequence, 64 << 10, System::currentTimeMillis);
            pages = PageService.serving(recovered.pages).changeLog(wal.changeLog()).eviction(EVICTION).build();
            wal.onFailure(pages::refuseChanges); // as the master does: no more changes once the log failed
            snapshotter = new Snapshotter(pages, wal, stateDir, StateFixture.layoutRecord(layout), 2, Map.of(), recovered.lastSequence);
        }

        void durable() throws Exception {
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() throws IOException {
            wal.close();
        }
    }

    BucketLayout layout;
    /** Whether the run's directory is a tmpfs of its own, which {@link Kind#LOG_FAILS} fills. */
    boolean onTmpfs;

    @Property(tries = 40)
    void recovered_state_equals_the_live_state_for_everything_acknowledged(@ForAll("runs") List<Step> steps) throws Exception {
        Path root = Files.createTempDirectory("mcctl-crash-property");
        clock.set(0);
        onTmpfs = Tmpfs.mount(root, "16m");
        try {
            run(root, steps);
        } finally {
            if (onTmpfs) {
                Tmpfs.unmount(root);
            }
            deleteTree(root);
        }
    }

    /**
     * Crashes after each prefix of what an allocation appends, whole and torn: the first allocation of a bucket logs a
     * reservation for itself, its own record and a reservation ahead, and a crash that keeps only the first reservation
     * must recover it holding its pages, without the one ahead.
     */
    @Example
    void a_crash_keeps_any_prefix_of_an_allocations_records() throws Exception {
        List<Step> steps = new ArrayList<>();
        for (int cut = 0; cut < 8; cut++) {
            steps.add(new Step(Kind.CRASH_UNACKNOWLEDGED, 0, cut, cut + 1));
        }
        steps.add(new Step(Kind.CRASH, 0, 0, 1));
        Path root = Files.createTempDirectory("mcctl-crash-example");
        clock.set(0);
        onTmpfs = false;
        try {
            run(root, steps);
        } finally {
            deleteTree(root);
        }
    }

    /** What a {@link Kind#LOG_FAILS} step did to one key, and the last log sequence appended by then. */
    enum Op { ALLOCATE, COMMIT, REMOVE }

    record Made(KeyModel key, Op op, Placement placement, long sequence, long answerSequence) {
    }

    /**
     * Changes keys of {@code tenant} (allocate, commit, remove), a round of one change a key before each wait for the log,
     * with the state directory full, until the log fails; the model learns each change the log made durable. Returns the
     * changes of the round the log failed in (none when it failed creating a segment between rounds), or null when it
     * never failed: no key was left to change.
     */
    private List<Made> changeUntilTheLogFails(Live live, Map<String, KeyModel> model, String tenant, long now, String where) throws Exception {
        List<Made> round = new ArrayList<>();
        boolean failed = false;
        for (int r = 0; r < 5_000 && !failed; r++) {
            round.clear();
            try {
                for (int k = 0; k < KEYS.length; k++) {
                    String key = KEYS[k];
                    KeyModel km = model.computeIfAbsent(tenant + "\0" + key, x -> new KeyModel());
                    if (km.expired(now)) {
                        continue; // its reclaim would come first: two changes, not one
                    }
                    if (km.inFlight != null) {
                        Placement written = km.inFlight.withCrc(r * KEYS.length + k);
                        assertTrue(live.pages.notifySuccess(tenant, key, written).isOk(), where);
                        round.add(new Made(km, Op.COMMIT, written, live.wal.lastAppended(), 0));
                    } else if (km.committed != null && (r + k) % 3 == 0) {
                        assertTrue(live.pages.remove(tenant, key).isOk(), where);
                        round.add(new Made(km, Op.REMOVE, null, live.wal.lastAppended(), 0));
                    } else {
                        io.mcctl.master.service.AnswerBarrier answer = new io.mcctl.master.service.AnswerBarrier();
                        Result<Placement> allocated = live.pages.allocate(live.pages.tenant(tenant), key, PAGE, true, false, answer);
                        if (allocated.isOk()) {
                            round.add(new Made(km, Op.ALLOCATE, allocated.value(), live.wal.lastAppended(), answer.sequence()));
                        }
                    }
                }
            } catch (io.mcctl.master.service.ChangeLog.Refused refused) {
                failed = true; // the log's writer wrote on its own and failed meanwhile: that change was refused whole
            }
            if (!failed) {
                try {
                    live.durable();
                } catch (java.util.concurrent.ExecutionException e) {
                    failed = true;
                }
            }
            long durable = live.wal.lastDurable();
            for (Made made : round) {
                if (made.sequence() > durable) {
                    continue;
                }
                KeyModel km = made.key();
                switch (made.op()) {
                    case ALLOCATE -> {
                        km.inFlight = made.placement();
                        km.deadline = now + DEADLINE.toNanos();
                    }
                    case COMMIT -> {
                        km.committed = made.placement();
                        km.inFlight = null;
                        km.promoting = null;
                        km.holder = null;
                    }
                    case REMOVE -> {
                        km.committed = null;
                        km.promoting = null;
                        km.holder = null;
                    }
                }
            }
            if (round.isEmpty()) {
                break; // nothing to change: every key waits for its expiry
            }
        }
        return failed ? round : null;
    }

    private void run(Path root, List<Step> steps) throws Exception {
        // Few pages, so that allocations meet full buckets, spills and quarantine.
        layout = new BucketLayout(root.resolve("root"), 2, PAGE, 64 * PAGE);
        Path stateDir = root.resolve("state");
        Files.createDirectories(stateDir);
        Map<String, KeyModel> model = new HashMap<>();
        List<Ghost> ghosts = new ArrayList<>();
        Live live = new Live(stateDir);
        int crashes = 0;
        try {
            for (int i = 0; i < steps.size(); i++) {
                PropertyTimeout.check();
                Step step = steps.get(i);
                String where = "step " + i + " " + step + " of " + steps;
                String tenant = TENANTS[step.tenant()];
                String key = KEYS[step.key()];
                KeyModel km = model.computeIfAbsent(tenant + "\0" + key, k -> new KeyModel());
                long now = clock.get();
                Live stepStart = live;
                long evictedBefore = evicted(live.pages);
                switch (step.kind()) {
                    case ALLOCATE, ALLOCATE_OVERWRITE -> {
                        boolean overwrite = step.kind() == Kind.ALLOCATE_OVERWRITE;
                        // Every third allocation soft-pins its object: pins are logged, snapshotted and replayed too.
                        Result<Placement> r = live.pages.allocate(tenant, key, step.pages() * PAGE - 7, overwrite, step.pages() % 3 == 0);
                        if (km.expired(now)) {
                            km.inFlight = null; // the allocate reclaims it first
                        }
                        if (km.inFlight != null) {
                            assertEquals(ErrorCode.REPLICA_IS_NOT_READY, r.error(), where);
                        } else if (km.committed != null && !overwrite) {
                            assertEquals(ErrorCode.OBJECT_ALREADY_EXISTS, r.error(), where);
                        } else if (r.isOk()) {
                            km.inFlight = r.value();
                            km.deadline = now + DEADLINE.toNanos();
                            for (Ghost ghost : ghosts) {
                                assertTrue(ghost.writableUntil - now <= 0 || !ghost.overlaps(r.value()), where + ": " + r.value()
                                        + " overlaps " + ghost + ", an allocation answered before the last crash whose writer may still write");
                            }
                        } else {
                            assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, r.error(), where);
                        }
                    }
                    case NOTIFY -> {
                        Placement written = km.inFlight != null ? km.inFlight.withCrc(i) : new Placement(0, 0, 1, i);
                        io.mcctl.master.service.AnswerBarrier answer = new io.mcctl.master.service.AnswerBarrier();
                        Result<Void> r = live.pages.notifySuccess(live.pages.tenant(tenant), key, written, answer);
                        // Its answer waits for its own commit (or, sent again, for the commit made already), nothing after.
                        assertEquals(!r.isOk() ? io.mcctl.master.service.AnswerBarrier.EVERYTHING
                                : km.inFlight != null && !km.expired(now) ? live.wal.lastAppended() : 0, answer.sequence(), where + ": " + r);
                        if (km.expired(now)) {
                            assertEquals(ErrorCode.OBJECT_NOT_FOUND, r.error(), where + ": past its deadline");
                            km.inFlight = null;
                        } else if (km.inFlight != null) {
                            assertTrue(r.isOk(), where + ": " + r);
                            lookUpBeforeTheCommitIsDurable(live, tenant, key, written, where);
                            km.committed = written;
                            km.inFlight = null;
                            km.promoting = null; // an overwrite ends the task of the mapping it replaced
                            km.holder = null;
                        } else if (!r.isOk()) {
                            assertTrue(r.error() == ErrorCode.OBJECT_NOT_FOUND || r.error() == ErrorCode.INVALID_PARAMS, where + ": " + r);
                        } else {
                            assertEquals(km.committed, written, where + ": only the very commit may be repeated");
                        }
                    }
                    case NOTIFY_WRONG -> {
                        if (km.inFlight != null) {
                            Placement wrong = new Placement(km.inFlight.bucket(), km.inFlight.offset() + PAGE, km.inFlight.size(), 1);
                            assertEquals(ErrorCode.INVALID_PARAMS, live.pages.notifySuccess(tenant, key, wrong).error(), where);
                        }
                    }
                    case FREE -> {
                        Result<Void> r = live.pages.free(tenant, key, km.inFlight);
                        assertEquals(km.inFlight != null, r.isOk(), where + ": " + r);
                        km.inFlight = null;
                    }
                    case REMOVE -> {
                        Result<Void> r = live.pages.remove(tenant, key);
                        assertEquals(km.committed != null, r.isOk(), where + ": " + r);
                        km.committed = null;
                        km.promoting = null; // the remove ends the task of its source
                        km.holder = null;
                    }
                    case LOOKUP -> {
                        Result<Placement> r = live.pages.getMapping(tenant, key);
                        if (km.committed != null) {
                            assertEquals(km.committed, r.value(), where);
                        } else {
                            assertEquals(km.inFlight != null ? ErrorCode.REPLICA_IS_NOT_READY : ErrorCode.OBJECT_NOT_FOUND, r.error(), where);
                        }
                    }
                    case RENEW -> {
                        Result<Long> r = live.pages.renew(tenant, key, km.inFlight);
                        assertEquals(km.inFlight != null && !km.expired(now), r.isOk(), where + ": " + r);
                        if (r.isOk()) {
                            km.deadline = now + DEADLINE.toNanos();
                        }
                    }
                    case DROP -> {
                        Result<PageService.InFlightDrop> r = live.pages.dropInFlight(tenant, key);
                        assertEquals(km.inFlight != null, r.isOk(), where + ": " + r);
                        km.inFlight = null;
                    }
                    case PROMOTE -> {
                        Result<io.mcctl.master.service.Promotions.Task> r = live.pages.promotions().queue(tenant, key);
                        assertEquals(km.committed != null, r.isOk(), where + ": " + r);
                        if (r.isOk() && km.promoting == null) {
                            km.promoting = km.committed;
                        }
                        if (r.isOk()) {
                            assertEquals(km.promoting, r.value().placement(), where + ": one task per object");
                        }
                    }
                    case PROMOTION_TAKE -> {
                        if (km.promoting != null) {
                            boolean taken = live.pages.promotions().take(tenant, key, km.promoting, "node-" + step.pages() % 2);
                            assertEquals(km.holder == null, taken, where + ": a task is taken once");
                            if (taken) {
                                km.holder = "node-" + step.pages() % 2;
                            }
                        }
                    }
                    case PROMOTION_END -> {
                        String node = "node-" + step.pages() % 2;
                        Result<Placement> r = live.pages.promotions().end(tenant, key, node,
                                step.pages() % 3 == 0 ? io.mcctl.master.service.Change.PromotionOutcome.FAILED
                                        : io.mcctl.master.service.Change.PromotionOutcome.SUCCEEDED);
                        boolean holds = km.promoting != null && node.equals(km.holder);
                        assertEquals(holds, r.isOk(), where + ": only the holder ends a task: " + r);
                        if (holds) {
                            assertEquals(km.promoting, r.value(), where);
                            km.promoting = null;
                            km.holder = null;
                        }
                    }
                    case ADVANCE -> clock.addAndGet(TimeUnit.MILLISECONDS.toNanos(step.pages() * 1_500L));
                    case EXPIRE_ALL -> {
                        // Past every deadline, grace and lease.
                        clock.addAndGet(TimeUnit.HOURS.toNanos(2));
                        live.pages.reap();
                        model.values().forEach(m -> m.inFlight = null);
                        assertEquals(0, live.pages.inFlightCount(), where);
                        assertEquals(0, live.pages.quarantinedPageCount(), where + ": every range's time has come");
                    }
                    case EVICT -> live.pages.evictToWatermark(1000);
                    // A quota of 0 (none) or of some pages: kept in the log and snapshots like any change.
                    case QUOTA -> assertTrue(live.pages.setQuota(tenant, step.pages() % 4 == 0 ? 0 : step.pages() * 2 * PAGE).isOk(), where);
                    // Buckets grow by some pages (the files are not the service's business): the added pages are free.
                    case GROW -> {
                        long size = live.pages.layout().bucketSize();
                        long free = freePages(live.pages);
                        Result<Long> r = live.pages.growLayout(size + step.pages() * PAGE);
                        assertEquals(size, r.value(), where);
                        assertEquals(size + step.pages() * PAGE, live.pages.layout().bucketSize(), where);
                        assertEquals(free + (long) step.pages() * layout.bucketCount(), freePages(live.pages), where + ": the added pages are free");
                        assertTrue(live.pages.growLayout(size).error() == ErrorCode.INVALID_PARAMS, where + ": shrinking is refused");
                    }
                    case GROW_THEN_CRASH_UNACKNOWLEDGED -> {
                        // A grow appended and not waited for: the crash keeps it or loses it, whole, and nothing else.
                        live.durable();
                        StateFixture.Captured without = StateFixture.capture(live.pages);
                        assertTrue(live.pages.growLayout(live.pages.layout().bucketSize() + step.pages() * PAGE).isOk(), where);
                        StateFixture.Captured with = StateFixture.capture(live.pages);
                        Live recovered = crash(live, stateDir, root, crashes++);
                        List<String> got = StateFixture.dump(recovered.pages);
                        assertTrue(sameState(with.afterCrash(recovered.pages), got) || sameState(without.afterCrash(recovered.pages), got), where
                                + ": recovered neither with nor without the unacknowledged grow:\n" + String.join("\n", got));
                        live = recovered;
                        model.values().forEach(m -> m.holder = null); // holders are not logged: every task is queued again
                    }
                    case ANSWERED_THEN_CRASH -> {
                        // An allocation whose answer waited for nothing of its own, then a crash that loses its record (the
                        // state directory as it was, everything durable, before the allocation): recovery must hold its pages
                        // for as long as its writer may write them.
                        if (km.inFlight != null) {
                            break;
                        }
                        live.durable();
                        StateFixture.Captured before = StateFixture.capture(live.pages);
                        Path durableCopy = copyState(stateDir, root, crashes);
                        long durable = live.wal.lastDurable();
                        live.pages = live.pages.withEviction(EvictionPolicy.OFF);
                        io.mcctl.master.service.AnswerBarrier answer = new io.mcctl.master.service.AnswerBarrier();
                        Result<Placement> r = live.pages.allocate(live.pages.tenant(tenant), key, step.pages() * PAGE, true, false, answer);
                        live.pages = live.pages.withEviction(EVICTION);
                        if (r.isOk() && answer.sequence() <= durable) {
                            ghosts.add(new Ghost(r.value(), now + DEADLINE.toNanos() + GRACE.toNanos()));
                        }
                        Live recovered = crashTo(live, durableCopy, stateDir);
                        crashes++;
                        assertSameState(before.afterCrash(recovered.pages), StateFixture.dump(recovered.pages), where);
                        live = recovered;
                        model.values().forEach(m -> m.holder = null); // holders are not logged: every task is queued again
                    }
                    case SNAPSHOT -> {
                        live.durable();
                        live.snapshotter.take();
                    }
                    case LOG_FAILS -> {
                        if (!onTmpfs) {
                            break;
                        }
                        live.durable();
                        live.pages = live.pages.withEviction(EvictionPolicy.OFF); // each change the one the model expects
                        Path filler = root.resolve("filler");
                        Tmpfs.fill(filler);
                        List<Made> lastRound = changeUntilTheLogFails(live, model, tenant, now, where);
                        if (lastRound == null) {
                            Files.delete(filler);
                            live.pages = live.pages.withEviction(EVICTION);
                            break;
                        }
                        long durable = live.wal.lastDurable();
                        java.util.Set<KeyModel> unlogged = new java.util.HashSet<>();
                        for (Made made : lastRound) {
                            if (made.sequence() > durable && made.op() != Op.ALLOCATE) {
                                unlogged.add(made.key()); // its mapping was made or removed by a change the log does not hold
                            }
                        }
                        // Reads once the log failed, on every path: a mapping the log does not hold is a miss, never data.
                        List<String> ids = new ArrayList<>();
                        List<String> names = new ArrayList<>();
                        List<KeyModel> held = new ArrayList<>();
                        model.forEach((scoped, keyModel) -> {
                            String[] parts = scoped.split("\0", 2);
                            ids.add(parts[0]);
                            names.add(parts[1]);
                            held.add(keyModel);
                        });
                        io.mcctl.master.service.AnswerBarrier wait = new io.mcctl.master.service.AnswerBarrier();
                        List<Result<Placement>> batch = live.pages.getMappings(live.pages.batchTenants(), ids, names, wait);
                        List<Result<Boolean>> exist = live.pages.existsAll(live.pages.batchTenants(), ids, names, wait);
                        assertEquals(0, wait.sequence(), where + ": the log failed, so no lookup waits for it");
                        for (int k = 0; k < names.size(); k++) {
                            KeyModel keyModel = held.get(k);
                            String which = where + ": " + ids.get(k) + "/" + names.get(k) + " after the log failed at " + durable;
                            Placement expected = unlogged.contains(keyModel) ? null : keyModel.committed;
                            for (Result<Placement> seen : List.of(batch.get(k), live.pages.getMapping(ids.get(k), names.get(k)),
                                    live.pages.peek(ids.get(k), names.get(k)))) {
                                if (expected == null) {
                                    assertTrue(!seen.isOk(), which + ": the log does not hold it, yet it reads " + seen);
                                } else {
                                    assertEquals(expected, seen.value(), which);
                                }
                            }
                            assertEquals(expected != null, exist.get(k).value(), which);
                        }
                        // Space is back, but no snapshot is written that would keep changes the log does not hold (when the
                        // log failed creating a segment, everything appended is durable: a snapshot holds no more than it).
                        Files.delete(filler);
                        if (live.wal.lastAppended() > durable) {
                            int snapshots = SnapshotFile.list(stateDir).size();
                            Live failedLive = live;
                            org.junit.jupiter.api.Assertions.assertThrows(IOException.class, () -> failedLive.snapshotter.take(), where);
                            assertEquals(snapshots, SnapshotFile.list(stateDir).size(), where + ": a snapshot published after the log failed");
                        } else {
                            live.snapshotter.take();
                        }
                        for (Made made : lastRound) {
                            if (made.op() == Op.ALLOCATE && made.sequence() > durable && made.answerSequence() <= durable) {
                                // Answered inside a durable reservation, its own record lost: its writer may write its pages.
                                ghosts.add(new Ghost(made.placement(), now + DEADLINE.toNanos() + GRACE.toNanos()));
                            }
                        }
                        // The restart: exactly what the log holds, which the model has learnt change by change (checked below).
                        live = crash(live, stateDir, root, crashes++);
                        assertEquals(durable, live.wal.lastAppended(), where + ": the restart replayed records past the last durable one");
                        model.values().forEach(m -> m.holder = null); // holders are not logged: every task is queued again
                    }
                    case CRASH -> {
                        live.durable();
                        StateFixture.Captured before = StateFixture.capture(live.pages);
                        Live recovered = crash(live, stateDir, root, crashes++);
                        assertSameState(before.afterCrash(recovered.pages), StateFixture.dump(recovered.pages), where);
                        live = recovered;
                        model.values().forEach(m -> m.holder = null); // holders are not logged: every task is queued again
                    }
                    case CRASH_UNACKNOWLEDGED -> {
                        // An allocation appended and not waited for, then a crash. The allocation may append several records
                        // (a reservation opened for it, its own, reservations closed behind it and one opened ahead), and the
                        // log's writer writes whatever has gathered whenever it wakes, so a crash may keep any prefix of them:
                        // a torn write cuts between or inside them, and a busy machine holds the allocating thread between
                        // two appends longer than the writer waits. Which prefix survives is chosen here, not left to timing:
                        // the log is copied once all of it is on disk and cut after the chosen record (inside the next one
                        // for odd steps: a torn frame). Recovery must give the state of exactly that prefix, and nothing else.
                        // Only where the allocate makes no change before (no expired allocation of the key to reclaim first).
                        if (km.inFlight != null) {
                            break;
                        }
                        live.durable();
                        long before = live.wal.lastAppended();
                        StateFixture.Captured without = StateFixture.capture(live.pages);
                        live.pages = live.pages.withEviction(EvictionPolicy.OFF); // one change, not evictions before it
                        Result<Placement> r = live.pages.allocate(tenant, key, PAGE, true);
                        live.pages = live.pages.withEviction(EVICTION);
                        StateFixture.Captured with = StateFixture.capture(live.pages);
                        live.durable();
                        Path copy = copyState(stateDir, root, crashes);
                        List<Change> appended = changesAfter(copy, before);
                        assertEquals(new java.util.HashSet<>(with.reservations()),
                                new java.util.HashSet<>(stateAfter(without, with, appended, where).reservations()), where + ": the log's records "
                                + appended + " against the live reservations");
                        int kept = step.pages() % (appended.size() + 1);
                        cutLogAfter(copy, before + kept, step.pages() % 2 == 1);
                        Captured prefix = stateAfter(without, with, appended.subList(0, kept), where);
                        Live recovered = crashTo(live, copy, stateDir);
                        crashes++;
                        assertSameState(prefix.afterCrash(recovered.pages), StateFixture.dump(recovered.pages), where + ": recovered with "
                                + kept + " of the allocation's " + appended.size() + " records " + appended);
                        boolean allocationKept = appended.subList(0, kept).stream().anyMatch(c -> c instanceof Change.Allocated);
                        assertTrue(r.isOk() || !allocationKept, where + ": a refused allocation logged " + appended);
                        km.inFlight = allocationKept ? r.value() : null;
                        km.deadline = now + DEADLINE.toNanos();
                        live = recovered;
                        model.values().forEach(m -> m.holder = null); // holders are not logged: every task is queued again
                    }
                }
                live.durable();
                if (live == stepStart) {
                    reconcileEvictions(live.pages, model, evicted(live.pages) - evictedBefore, where);
                }
                checkPages(live.pages, where);
                checkModel(live.pages, model, where);
            }
        } finally {
            live.close();
        }
    }

    /**
     * Looks up a mapping just committed, before the test waited for the log: it is seen only once the log holds its
     * commit. A lookup that can wait says which sequence to wait for and then finds it; one that cannot is a miss until then.
     */
    private static void lookUpBeforeTheCommitIsDurable(Live live, String tenant, String key, Placement written, String where) throws Exception {
        long commit = live.wal.lastAppended();
        long durableBefore = live.wal.lastDurable();
        Result<Placement> peeked = live.pages.peek(tenant, key);
        long durableAfter = live.wal.lastDurable();
        if (peeked.isOk()) {
            assertEquals(written, peeked.value(), where);
            assertTrue(durableAfter >= commit, where + ": seen before the log held its commit " + commit + " (durable: " + durableAfter + ")");
        } else {
            assertTrue(durableBefore < commit, where + ": a miss though the log held its commit: " + peeked);
        }
        io.mcctl.master.service.AnswerBarrier wait = new io.mcctl.master.service.AnswerBarrier();
        Result<Placement> waited = live.pages.getMapping(live.pages.tenant(tenant), key, wait);
        if (PageService.waitsForLog(waited)) {
            assertEquals(commit, wait.sequence(), where + ": waits for the commit itself");
            live.wal.whenDurable(wait.sequence()).get(10, TimeUnit.SECONDS);
            waited = live.pages.getMapping(tenant, key);
        } else {
            assertEquals(0, wait.sequence(), where);
        }
        assertEquals(written, waited.value(), where);
    }

    /**
     * Leaves the state directory as a kill -9 of the master would: the files as they are, with no clean close (which
     * would trim the log), copied aside before the old log's writer could change them; then recovers from the copy.
     */
    private Live crash(Live live, Path stateDir, Path root, int crash) throws Exception {
        return crashTo(live, copyState(stateDir, root, crash), stateDir);
    }

    /** The changes of the records after {@code sequence} in the state directory {@code dir}'s log, in order. */
    private static List<Change> changesAfter(Path dir, long sequence) throws IOException {
        List<Change> changes = new ArrayList<>();
        WalReader.read(dir, sequence, false, (record, file, offset) -> changes.add(ChangeCodec.decode(record)));
        return changes;
    }

    /**
     * Leaves in {@code dir}'s log the records up to {@code lastKept} only, as a crash that wrote no more would: the file
     * ends where the next record starts ({@code torn}: a few bytes into it), and no later segment is there.
     */
    private static void cutLogAfter(Path dir, long lastKept, boolean torn) throws IOException {
        long[] cut = {-1};
        Path[] in = {null};
        WalReader.read(dir, lastKept, false, (record, file, offset) -> {
            if (record.getSequence() == lastKept + 1) {
                cut[0] = offset;
                in[0] = file;
            }
        });
        if (in[0] == null) {
            return; // nothing after it
        }
        for (WalSegments.Segment segment : WalSegments.list(dir)) {
            if (segment.firstSequence() > lastKept + 1) {
                Files.delete(segment.path());
            }
        }
        try (java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(in[0], java.nio.file.StandardOpenOption.WRITE)) {
            channel.truncate(cut[0] + (torn ? FrameCodec.HEADER_BYTES + 2 : 0));
        }
    }

    /**
     * The state after {@code kept}, a prefix of the records an allocation appended to {@code without}'s state, which all
     * of them make {@code with}'s: the mappings, allocations and bitmaps of {@code with} once the allocation's own record
     * is kept, the reservations of {@code without} with those opened and closed by the kept records.
     */
    private static Captured stateAfter(Captured without, Captured with, List<Change> kept, String where) {
        Captured base = kept.stream().anyMatch(c -> c instanceof Change.Allocated) ? with : without;
        List<Change.Reserved> reservations = new ArrayList<>(without.reservations());
        for (Change change : kept) {
            if (change instanceof Change.Reserved opened) {
                reservations.add(opened);
            } else if (change instanceof Change.ReservationClosed closed) {
                assertTrue(reservations.removeIf(o -> o.bucket() == closed.bucket() && o.firstPage() == closed.firstPage()
                        && o.pages() == closed.pages() && o.openUntilMs() == closed.openUntilMs()), where + ": closes no open reservation: " + closed);
            } else {
                assertTrue(change instanceof Change.Allocated, where + ": an allocation logged " + change);
            }
        }
        return new Captured(base.lines(), reservations, base.bitmaps(), base.quarantinedPages());
    }

    /** The state directory's files as they are now, copied aside. */
    private static Path copyState(Path stateDir, Path root, int crash) throws IOException {
        Path copy = root.resolve("crash-" + crash);
        Files.createDirectories(copy);
        try (Stream<Path> files = Files.list(stateDir)) {
            for (Path file : files.toList()) {
                Files.copy(file, copy.resolve(file.getFileName()), StandardCopyOption.COPY_ATTRIBUTES);
            }
        }
        return copy;
    }

    /** The old process is gone, and {@code copy} is what it left in its state directory; recovers from it. */
    private Live crashTo(Live live, Path copy, Path stateDir) throws Exception {
        live.close();
        deleteTree(stateDir);
        Files.move(copy, stateDir);
        return new Live(stateDir);
    }

    private static long freePages(PageService pages) {
        long free = 0;
        for (int b = 0; b < pages.layout().bucketCount(); b++) {
            free += pages.allocator(b).pageCount() - pages.allocator(b).allocatedCount();
        }
        return free;
    }

    private static long evicted(PageService pages) {
        return pages.evictedTotal();
    }

    /**
     * The model learns which committed objects the step evicted: exactly as many as the service counted, each a
     * committed mapping (never an allocation in flight, which {@link #checkModel} then still finds).
     */
    private static void reconcileEvictions(PageService pages, Map<String, KeyModel> model, long evicted, String where) {
        long gone = 0;
        for (Map.Entry<String, KeyModel> e : model.entrySet()) {
            KeyModel km = e.getValue();
            String[] parts = e.getKey().split("\0", 2);
            if (km.committed != null && !pages.peek(parts[0], parts[1]).isOk()) {
                gone++;
                km.committed = null;
                km.promoting = null;
                km.holder = null;
            }
        }
        assertEquals(evicted, gone, where + ": committed objects gone against evictions counted");
    }

    private static void checkPages(PageService pages, String where) {
        PageCheck check = pages.checkPages(0, false, 10);
        assertEquals(0, check.overlapPages(), where + ": overlaps " + check.overlaps());
        assertEquals(0, check.leakedPages(), where + ": leaked " + check.leaked());
        assertEquals(0, check.falseFreePages(), where + ": false free " + check.falseFree());
    }

    private static void checkModel(PageService pages, Map<String, KeyModel> model, String where) {
        long committed = 0;
        long inFlight = 0;
        for (Map.Entry<String, KeyModel> e : model.entrySet()) {
            String[] parts = e.getKey().split("\0", 2);
            KeyModel km = e.getValue();
            Result<Placement> peek = pages.peek(parts[0], parts[1]);
            if (km.committed != null) {
                committed++;
                assertEquals(km.committed, peek.value(), where + ": " + e.getKey());
            } else if (km.inFlight != null) {
                assertEquals(ErrorCode.REPLICA_IS_NOT_READY, peek.error(), where + ": " + e.getKey());
            } else {
                assertEquals(ErrorCode.OBJECT_NOT_FOUND, peek.error(), where + ": " + e.getKey());
            }
            if (km.inFlight != null) {
                inFlight++;
            }
        }
        assertEquals(committed, pages.mappingCount(), where);
        assertEquals(inFlight, pages.inFlightCount(), where);
        java.util.Set<String> wantTasks = new java.util.TreeSet<>();
        model.forEach((k, km) -> {
            if (km.promoting != null) {
                wantTasks.add(k.replace('\0', '/') + " " + km.promoting + " held by " + km.holder);
            }
        });
        java.util.Set<String> gotTasks = new java.util.TreeSet<>();
        pages.promotions().list().forEach(t -> gotTasks.add(t.tenant() + "/" + t.key() + " " + t.placement() + " held by " + t.holder()));
        assertEquals(wantTasks, gotTasks, where + ": promotion tasks");
    }

    private static boolean sameState(List<String> a, List<String> b) {
        return a.equals(b);
    }

    private static void assertSameState(List<String> want, List<String> got, String where) {
        if (!want.equals(got)) {
            List<String> missing = new ArrayList<>(want);
            missing.removeAll(got);
            List<String> extra = new ArrayList<>(got);
            extra.removeAll(want);
            fail(where + ": recovered state differs from the live one\n  lost: " + missing + "\n  gained: " + extra);
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> files = Files.walk(root)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
