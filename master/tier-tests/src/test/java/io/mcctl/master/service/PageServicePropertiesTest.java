package io.mcctl.master.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.mcctl.master.protocol.Placement;
import io.mcctl.testkit.PropertyTimeout;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
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
 * Drives {@link PageService} with a clock the test controls through random sequences of allocate, free,
 * notify, get, remove, clock steps and reaps, in lock step with a model written from the design's rules,
 * and checks after every step: the same result codes as the model; no page shared by two live things
 * (mappings, in-flight allocations, quarantined ranges); every bucket's bitmap equal, page for page, to
 * what the model holds live; allocated pages = mapped + in flight + quarantined; pages removed or
 * overwritten under a live read lease never reused before the lease ends; the counters; peek and listKeys.
 *
 * <p>Jupiter's {@code @Timeout} does not apply to jqwik properties; {@link PropertyTimeout} bounds the run
 * instead, besides the fixed number of tries and steps (about 100,000 steps, several seconds).
 */
@AddLifecycleHook(PropertyTimeout.class)
class PageServicePropertiesTest {

    static final long PAGE = 4096;
    static final Duration DEADLINE = Duration.ofMillis(100);
    static final Duration LEASE = Duration.ofMillis(70);
    static final Duration GRACE = Duration.ofMillis(50);
    static final String[] KEYS = {"k0", "k1", "k2", "k3", "k4", "k5"};

    enum Kind { ALLOCATE, FREE, NOTIFY, GET, REMOVE, ADVANCE, REAP, INVALID, RENEW, DROP }

    /** One step; the numbers are read against the state the step meets. */
    record Op(Kind kind, int tenant, int key, int a, int b, int c, int aim) {
        Op(Kind kind, int tenant, int key, int a, int b, int c) {
            this(kind, tenant, key, a, b, c, -1);
        }

        Op aimed(int aim) {
            return new Op(kind, tenant, key, a, b, c, aim);
        }

        @Override
        public String toString() {
            return kind + "(t" + tenant + ", k" + key + ", " + a + ", " + b + ", " + c + (aim >= 0 ? ", aim " + aim : "") + ")";
        }
    }

    record Setup(int buckets, int pagesPerBucket, int tenants, long clockOrigin) {
    }

    /** Outcomes and events the runs must reach, so that the property cannot pass by never getting there. */
    static final List<String> MUST_HAPPEN = List.of(
            "ALLOCATE OK", "ALLOCATE REPLICA_IS_NOT_READY", "ALLOCATE OBJECT_ALREADY_EXISTS", "ALLOCATE NO_AVAILABLE_HANDLE",
            "FREE OK", "FREE OBJECT_NOT_FOUND", "FREE INVALID_PARAMS",
            "NOTIFY OK", "NOTIFY OBJECT_NOT_FOUND", "NOTIFY INVALID_PARAMS",
            "GET OK", "GET REPLICA_IS_NOT_READY", "GET OBJECT_NOT_FOUND", "REMOVE OK", "REMOVE OBJECT_NOT_FOUND",
            "INVALID INVALID_PARAMS", "RENEW OK", "RENEW OBJECT_NOT_FOUND", "RENEW INVALID_PARAMS", "DROP OK", "DROP OBJECT_NOT_FOUND",
            "event: spill to another bucket", "event: overwrite", "event: mapping freed at once", "event: mapping quarantined behind a lease",
            "event: quarantine released by reap", "event: expired allocation reaped", "event: notify after the deadline",
            "event: expired allocation reclaimed by a new allocate", "event: expired allocation quarantined for the grace");

    @Property(tries = 2000, shrinking = ShrinkingMode.BOUNDED)
    @StatisticsReport(StatisticsReport.StatisticsReportMode.OFF)
    void page_service_agrees_with_the_model_and_keeps_every_page_in_exactly_one_place(@ForAll("setups") Setup setup,
                                                                                      @ForAll("operations") List<Op> ops) {
        Run run = new Run(setup);
        run.verify();
        for (Op op : ops) {
            PropertyTimeout.check();
            run.apply(op);
            run.verify();
        }
        Statistics.coverage(coverage -> {
            for (String outcome : MUST_HAPPEN) {
                Consumer<Integer> reached = n -> assertTrue(n > 0, "the runs never reached: " + outcome);
                coverage.check(outcome).count(reached);
            }
        });
    }

    static void happened(String outcome) {
        Statistics.collect(outcome);
    }

    @Provide
    Arbitrary<Setup> setups() {
        return Combinators.combine(
                Arbitraries.of(1, 2, 3),
                Arbitraries.of(8, 16),
                Arbitraries.of(2, 3),
                Arbitraries.of(1_000_000_000L, 0L, 123_456_789_012L, -5_000_000_000L))
                .as(Setup::new);
    }

    @Provide
    Arbitrary<List<Op>> operations() {
        Arbitrary<Integer> tenant = Arbitraries.integers().between(0, 2);
        Arbitrary<Integer> key = Arbitraries.integers().between(0, KEYS.length - 1);
        Arbitrary<Integer> raw = Arbitraries.integers().between(0, 1_000_000);
        Arbitrary<Op> allocate = Combinators.combine(tenant, key, Arbitraries.integers().between(1, 5), raw, Arbitraries.integers().between(0, 1))
                .as((t, k, pages, jitter, overwrite) -> new Op(Kind.ALLOCATE, t, k, pages, jitter, overwrite));
        Arbitrary<Op> free = Combinators.combine(tenant, key, Arbitraries.frequency(Tuple.of(6, 0), Tuple.of(2, 1), Tuple.of(2, 2)), raw)
                .as((t, k, mode, r) -> new Op(Kind.FREE, t, k, mode, r, 0));
        Arbitrary<Op> notify = Combinators.combine(tenant, key, Arbitraries.frequency(Tuple.of(8, 0), Tuple.of(2, 1), Tuple.of(1, 2)),
                        Arbitraries.integers(), raw)
                .as((t, k, mode, crc, r) -> new Op(Kind.NOTIFY, t, k, mode, crc, r));
        Arbitrary<Op> renew = Combinators.combine(tenant, key, Arbitraries.frequency(Tuple.of(8, 0), Tuple.of(2, 1), Tuple.of(1, 2)), raw)
                .as((t, k, mode, r) -> new Op(Kind.RENEW, t, k, mode, 0, r));
        Arbitrary<Op> drop = Combinators.combine(tenant, key).as((t, k) -> new Op(Kind.DROP, t, k, 0, 0, 0));
        Arbitrary<Op> get = Combinators.combine(tenant, key).as((t, k) -> new Op(Kind.GET, t, k, 0, 0, 0));
        Arbitrary<Op> remove = Combinators.combine(tenant, key).as((t, k) -> new Op(Kind.REMOVE, t, k, 0, 0, 0));
        Arbitrary<Op> advance = Combinators.combine(Arbitraries.integers().between(0, 3), raw)
                .as((mode, r) -> new Op(Kind.ADVANCE, 0, 0, mode, r, 0));
        Arbitrary<Op> reap = Arbitraries.just(new Op(Kind.REAP, 0, 0, 0, 0, 0));
        Arbitrary<Op> invalid = Combinators.combine(tenant, key, Arbitraries.integers().between(0, 4), Arbitraries.integers().between(0, 6))
                .as((t, k, which, bad) -> new Op(Kind.INVALID, t, k, which, bad, 0));
        // Most key-directed steps aim at a key that holds something (aim >= 0: the aim-th such key), the rest at any key.
        Arbitrary<Integer> aim = Arbitraries.frequencyOf(Tuple.of(3, Arbitraries.just(-1)), Tuple.of(7, Arbitraries.integers().between(0, 1000)));
        Arbitrary<Op> op = Combinators.combine(Arbitraries.frequencyOf(
                Tuple.of(25, allocate), Tuple.of(8, free), Tuple.of(20, notify), Tuple.of(12, get), Tuple.of(8, remove),
                Tuple.of(12, advance), Tuple.of(10, reap), Tuple.of(2, invalid), Tuple.of(8, renew), Tuple.of(3, drop)), aim).as(Op::aimed);
        return op.list().ofMinSize(1).ofMaxSize(100).withSizeDistribution(RandomDistribution.uniform());
    }

    // ---- the model ----

    /** What the design says one (tenant, key) holds. */
    static final class KeyState {
        Placement committed;
        boolean leased;
        long leaseUntil;
        Placement pending;
        long pendingDeadline;

        boolean empty() {
            return committed == null && pending == null;
        }
    }

    record Quarantined(long release, int bucket, long firstPage, long pages, String what) {
    }

    static final class Run {
        final Setup setup;
        final BucketLayout layout;
        final String[] tenants;
        long now;
        final PageService service;
        final Map<String, KeyState> model = new HashMap<>();
        final List<Quarantined> quarantine = new ArrayList<>();
        final long deadlineNanos = DEADLINE.toNanos();
        final long leaseNanos = LEASE.toNanos();
        int step;

        Run(Setup setup) {
            this.setup = setup;
            this.layout = new BucketLayout(Path.of("/nonexistent/mcctl-property-root"), setup.buckets(), PAGE, setup.pagesPerBucket() * PAGE);
            this.tenants = new String[setup.tenants()];
            for (int t = 0; t < tenants.length; t++) {
                tenants[t] = "tenant-" + t;
            }
            this.now = setup.clockOrigin();
            this.service = PageService.builder(layout).allocationDeadline(DEADLINE).readLease(LEASE).allocationGrace(GRACE).nanoClock(() -> now).build();
        }

        /**
         * A deadline or release time as the service keeps it: every change carries its times in wall-clock
         * milliseconds, as the log records them, and the service rounds them up to the next millisecond of its clock
         * (counted from its construction), so that what replays is exactly what served.
         */
        long asLogged(long nanos) {
            long sinceOrigin = nanos - setup.clockOrigin();
            return setup.clockOrigin() + Math.floorDiv(sinceOrigin + 999_999, 1_000_000L) * 1_000_000L;
        }

        static String scoped(String tenant, String key) {
            return tenant + "/" + key;
        }

        KeyState state(String tenant, String key) {
            return model.computeIfAbsent(scoped(tenant, key), k -> new KeyState());
        }

        void tidy(String tenant, String key) {
            KeyState s = model.get(scoped(tenant, key));
            if (s != null && s.empty()) {
                model.remove(scoped(tenant, key));
            }
        }

        long pages(Placement p) {
            return layout.pagesFor(p.size());
        }

        static boolean sameRange(Placement a, Placement b) {
            return a != null && b != null && a.bucket() == b.bucket() && a.offset() == b.offset() && a.size() == b.size();
        }

        /** Page occupancy of every bucket as the model holds it; fails on any page held twice. */
        String[][] occupancy() {
            String[][] owner = new String[layout.bucketCount()][(int) layout.pagesPerBucket()];
            for (Map.Entry<String, KeyState> e : model.entrySet()) {
                if (e.getValue().committed != null) {
                    occupy(owner, e.getValue().committed, "mapping of " + e.getKey());
                }
                if (e.getValue().pending != null) {
                    occupy(owner, e.getValue().pending, "allocation in flight of " + e.getKey());
                }
            }
            for (Quarantined q : quarantine) {
                occupy(owner, q.bucket(), q.firstPage(), q.pages(), q.what());
            }
            return owner;
        }

        void occupy(String[][] owner, Placement p, String what) {
            occupy(owner, p.bucket(), p.offset() / PAGE, pages(p), what);
        }

        void occupy(String[][] owner, int bucket, long first, long count, String what) {
            for (long page = first; page < first + count; page++) {
                String previous = owner[bucket][(int) page];
                if (previous != null) {
                    fail("step " + step + ": page " + page + " of bucket " + bucket + " is held by " + previous + " and by " + what);
                }
                owner[bucket][(int) page] = what;
            }
        }

        boolean runFits(String[] bucketOwners, long count) {
            long run = 0;
            for (String owner : bucketOwners) {
                run = owner == null ? run + 1 : 0;
                if (run >= count) {
                    return true;
                }
            }
            return false;
        }

        void dropPending(KeyState s) {
            s.pending = null;
        }

        /**
         * An allocation ends unnotified past its deadline: its pages wait in quarantine until deadline plus grace (its
         * writer may still be writing), or are freed at once when that has passed too. Returns the pages freed at once.
         */
        long expirePending(KeyState s, String what) {
            Placement p = s.pending;
            long release = s.pendingDeadline + GRACE.toNanos();
            s.pending = null;
            if (release - now > 0) {
                quarantine.add(new Quarantined(release, p.bucket(), p.offset() / PAGE, pages(p), "expired allocation of " + what + " " + p));
                happened("event: expired allocation quarantined for the grace");
                return 0;
            }
            return pages(p);
        }

        /** A mapping leaves: freed now without a live lease, else quarantined until the lease ends. */
        void retire(KeyState s, String what) {
            Placement old = s.committed;
            if (s.leased && s.leaseUntil - now > 0) {
                quarantine.add(new Quarantined(asLogged(s.leaseUntil), old.bucket(), old.offset() / PAGE, pages(old), "quarantined " + what + " " + old));
                happened("event: mapping quarantined behind a lease");
            } else {
                happened("event: mapping freed at once");
            }
            s.committed = null;
            s.leased = false;
        }

        void apply(Op op) {
            step++;
            String tenant = tenants[op.tenant() % tenants.length];
            String key = KEYS[op.key()];
            if (op.aim() >= 0) {
                // aim at a key that holds what the step acts on: an allocation in flight or a mapping
                List<String[]> targets = new ArrayList<>();
                for (String t : tenants) {
                    for (String k : KEYS) {
                        KeyState s = model.get(scoped(t, k));
                        boolean fits = s != null && switch (op.kind()) {
                            case FREE, NOTIFY, RENEW, DROP -> s.pending != null;
                            case GET, REMOVE -> s.committed != null;
                            case ALLOCATE -> s.committed != null || s.pending != null;
                            default -> false;
                        };
                        if (fits) {
                            targets.add(new String[] {t, k});
                        }
                    }
                }
                if (!targets.isEmpty()) {
                    String[] target = targets.get(op.aim() % targets.size());
                    tenant = target[0];
                    key = target[1];
                }
            }
            switch (op.kind()) {
                case ALLOCATE -> allocate(tenant, key, op);
                case FREE -> free(tenant, key, op);
                case NOTIFY -> notifySuccess(tenant, key, op);
                case GET -> get(tenant, key);
                case REMOVE -> remove(tenant, key);
                case ADVANCE -> advance(op);
                case REAP -> reap();
                case INVALID -> invalid(tenant, key, op);
                case RENEW -> renew(tenant, key, op);
                case DROP -> drop(tenant, key);
            }
        }

        void expect(ErrorCode want, Result<?> got, String what) {
            assertEquals(want, got.error(), "step " + step + ": " + what + " answered " + got);
        }

        void outcome(Kind kind, ErrorCode code) {
            happened(kind + " " + code);
        }

        void allocate(String tenant, String key, Op op) {
            long pages = op.a();
            long size = (pages - 1) * PAGE + 1 + op.b() % PAGE;
            boolean overwrite = op.c() == 1;
            String what = "allocate(" + tenant + ", " + key + ", " + size + ", overwrite=" + overwrite + ")";
            KeyState s = state(tenant, key);
            ErrorCode want;
            int wantBucket = -1;
            if (s.pending != null && s.pendingDeadline - now > 0) {
                want = ErrorCode.REPLICA_IS_NOT_READY;
            } else {
                if (s.pending != null) {
                    expirePending(s, scoped(tenant, key)); // expired: the next allocation reclaims it
                    happened("event: expired allocation reclaimed by a new allocate");
                }
                if (s.committed != null && !overwrite) {
                    want = ErrorCode.OBJECT_ALREADY_EXISTS;
                } else {
                    String[][] owners = occupancy();
                    int home = layout.homeBucket(key);
                    for (int i = 0; i < layout.bucketCount() && wantBucket < 0; i++) {
                        int bucket = (home + i) % layout.bucketCount();
                        if (runFits(owners[bucket], pages)) {
                            wantBucket = bucket;
                        }
                    }
                    want = wantBucket < 0 ? ErrorCode.NO_AVAILABLE_HANDLE : ErrorCode.OK;
                }
            }
            Result<Placement> got = service.allocate(tenant, key, size, overwrite);
            expect(want, got, what);
            outcome(Kind.ALLOCATE, want);
            if (got.isOk() && got.value().bucket() != layout.homeBucket(key)) {
                happened("event: spill to another bucket");
            }
            if (got.isOk()) {
                Placement p = got.value();
                assertEquals(wantBucket, p.bucket(), "step " + step + ": " + what + " chose the wrong bucket (home first, then home+1, ...)");
                assertEquals(size, p.size());
                assertEquals(0, p.crc32c());
                assertEquals(0, p.offset() % PAGE, "offset on a page boundary");
                assertTrue(p.offset() >= 0 && p.offset() / PAGE + pages <= layout.pagesPerBucket(), "run inside the bucket: " + p);
                for (Quarantined q : quarantine) {
                    long first = p.offset() / PAGE;
                    boolean overlaps = q.bucket() == p.bucket() && first < q.firstPage() + q.pages() && q.firstPage() < first + pages;
                    assertFalse(overlaps, "step " + step + ": " + what + " got " + p + ", pages of " + q.what()
                            + " whose read lease runs until " + q.release() + " (now " + now + ")");
                }
                s.pending = p;
                s.pendingDeadline = asLogged(now + deadlineNanos);
                occupancy(); // the new run overlaps nothing live
            }
            tidy(tenant, key);
        }

        Placement wrongOf(Placement p, int r) {
            if (p == null) {
                return new Placement(r % layout.bucketCount(), (r % layout.pagesPerBucket()) * PAGE, 1 + r % 9000, 0);
            }
            return switch (r % 4) {
                case 0 -> new Placement(p.bucket(), p.offset() + PAGE, p.size(), p.crc32c());
                case 1 -> new Placement(p.bucket(), p.offset(), p.size() + 1, p.crc32c());
                case 2 -> new Placement(-1, p.offset(), p.size(), p.crc32c()); // a path outside the layout
                default -> layout.bucketCount() > 1
                        ? new Placement((p.bucket() + 1) % layout.bucketCount(), p.offset(), p.size(), p.crc32c())
                        : new Placement(p.bucket(), p.offset() + 2 * PAGE, p.size(), p.crc32c());
            };
        }

        void free(String tenant, String key, Op op) {
            KeyState s = state(tenant, key);
            Placement arg = switch (op.a()) {
                case 0 -> s.pending != null ? s.pending : wrongOf(null, op.b());
                case 1 -> wrongOf(s.pending != null ? s.pending : s.committed, op.b());
                default -> null;
            };
            ErrorCode want;
            if (s.pending == null) {
                want = ErrorCode.OBJECT_NOT_FOUND;
            } else if (arg != null && !sameRange(arg, s.pending)) {
                want = ErrorCode.INVALID_PARAMS;
            } else {
                want = ErrorCode.OK;
            }
            expect(want, service.free(tenant, key, arg), "free(" + tenant + ", " + key + ", " + arg + ")");
            outcome(Kind.FREE, want);
            if (want == ErrorCode.OK) {
                dropPending(s);
            }
            tidy(tenant, key);
        }

        void notifySuccess(String tenant, String key, Op op) {
            KeyState s = state(tenant, key);
            int crc = op.b();
            Placement arg = switch (op.a()) {
                case 0 -> s.pending != null ? s.pending.withCrc(crc) : wrongOf(null, op.c());
                case 1 -> wrongOf(s.pending != null ? s.pending.withCrc(crc) : s.committed, op.c());
                default -> null;
            };
            ErrorCode want;
            if (arg == null) {
                want = ErrorCode.INVALID_PARAMS; // no descriptor is bad input, whatever the key holds
            } else if (s.pending == null) {
                // A notify of exactly the committed mapping is that notify retried after its answer was lost: OK, and
                // nothing changes.
                want = arg.equals(s.committed) ? ErrorCode.OK : ErrorCode.OBJECT_NOT_FOUND;
            } else if (!sameRange(arg, s.pending)) {
                want = ErrorCode.INVALID_PARAMS;
            } else if (s.pendingDeadline - now <= 0) {
                want = ErrorCode.OBJECT_NOT_FOUND;
                expirePending(s, scoped(tenant, key));
                happened("event: notify after the deadline");
            } else {
                want = ErrorCode.OK;
                if (s.committed != null) {
                    retire(s, "overwritten mapping of " + scoped(tenant, key));
                    happened("event: overwrite");
                }
                s.committed = s.pending.withCrc(crc);
                s.pending = null;
            }
            expect(want, service.notifySuccess(tenant, key, arg), "notifySuccess(" + tenant + ", " + key + ", " + arg + ")");
            outcome(Kind.NOTIFY, want);
            tidy(tenant, key);
        }

        void renew(String tenant, String key, Op op) {
            KeyState s = state(tenant, key);
            Placement arg = switch (op.a()) {
                case 0 -> s.pending != null ? s.pending : wrongOf(null, op.c());
                case 1 -> wrongOf(s.pending != null ? s.pending : s.committed, op.c());
                default -> null;
            };
            ErrorCode want;
            if (arg == null) {
                want = ErrorCode.INVALID_PARAMS;
            } else if (s.pending == null) {
                want = ErrorCode.OBJECT_NOT_FOUND;
            } else if (!sameRange(arg, s.pending)) {
                want = ErrorCode.INVALID_PARAMS;
            } else if (s.pendingDeadline - now <= 0) {
                want = ErrorCode.OBJECT_NOT_FOUND; // too late: refused, and left for the reaper
            } else {
                want = ErrorCode.OK;
                s.pendingDeadline = asLogged(now + deadlineNanos);
            }
            expect(want, service.renew(tenant, key, arg), "renew(" + tenant + ", " + key + ", " + arg + ")");
            outcome(Kind.RENEW, want);
            tidy(tenant, key);
        }

        void drop(String tenant, String key) {
            KeyState s = state(tenant, key);
            ErrorCode want = s.pending != null ? ErrorCode.OK : ErrorCode.OBJECT_NOT_FOUND;
            if (want == ErrorCode.OK) {
                expirePending(s, scoped(tenant, key));
            }
            expect(want, service.dropInFlight(tenant, key), "dropInFlight(" + tenant + ", " + key + ")");
            outcome(Kind.DROP, want);
            tidy(tenant, key);
        }

        void get(String tenant, String key) {
            KeyState s = state(tenant, key);
            ErrorCode want = s.committed != null ? ErrorCode.OK : s.pending != null ? ErrorCode.REPLICA_IS_NOT_READY : ErrorCode.OBJECT_NOT_FOUND;
            Result<Placement> got = service.getMapping(tenant, key);
            expect(want, got, "getMapping(" + tenant + ", " + key + ")");
            outcome(Kind.GET, want);
            if (got.isOk()) {
                assertEquals(s.committed, got.value(), "step " + step + ": the mapping, checksum included");
                long until = now + leaseNanos;
                if (!s.leased || until - s.leaseUntil > 0) {
                    s.leaseUntil = until;
                }
                s.leased = true;
            }
            tidy(tenant, key);
        }

        void remove(String tenant, String key) {
            KeyState s = state(tenant, key);
            ErrorCode want = s.committed != null ? ErrorCode.OK : ErrorCode.OBJECT_NOT_FOUND;
            if (want == ErrorCode.OK) {
                retire(s, "removed mapping of " + scoped(tenant, key));
            }
            expect(want, service.remove(tenant, key), "remove(" + tenant + ", " + key + ")");
            outcome(Kind.REMOVE, want);
            tidy(tenant, key);
        }

        void advance(Op op) {
            List<Long> future = new ArrayList<>();
            for (KeyState s : model.values()) {
                if (s.pending != null && s.pendingDeadline - now > 0) {
                    future.add(s.pendingDeadline);
                }
                if (s.leased && s.leaseUntil - now > 0) {
                    future.add(s.leaseUntil);
                }
            }
            for (Quarantined q : quarantine) {
                if (q.release() - now > 0) {
                    future.add(q.release());
                }
            }
            future.sort(Long::compare);
            switch (op.a()) {
                case 0 -> now += op.b() * 100L; // up to 100 ms
                case 1 -> now = future.isEmpty() ? now + 1 : future.get(op.b() % future.size()); // exactly a deadline
                case 2 -> now = future.isEmpty() ? now + 1 : future.get(op.b() % future.size()) - 1; // one nanosecond before it
                default -> now += 1_000_000_000L; // everything runs out
            }
        }

        void reap() {
            long want = 0;
            for (Map.Entry<String, KeyState> e : model.entrySet()) {
                KeyState s = e.getValue();
                if (s.pending != null && s.pendingDeadline - now <= 0) {
                    want += expirePending(s, e.getKey());
                    happened("event: expired allocation reaped");
                }
            }
            model.values().removeIf(KeyState::empty);
            for (var it = quarantine.iterator(); it.hasNext(); ) {
                Quarantined q = it.next();
                if (q.release() - now <= 0) {
                    want += q.pages();
                    it.remove();
                    happened("event: quarantine released by reap");
                }
            }
            assertEquals(want, service.reap(), "step " + step + ": pages reap() returned to the allocators");
        }

        void invalid(String tenant, String key, Op op) {
            String badTenant = switch (op.b() % 4) {
                case 0 -> "";
                case 1 -> "a b";
                case 2 -> "a/b";
                default -> "x".repeat(65);
            };
            String badKey = op.b() % 2 == 0 ? "" : "k".repeat(4097);
            boolean tenantIsBad = op.b() < 4;
            String t = tenantIsBad ? badTenant : tenant;
            String k = tenantIsBad ? key : badKey;
            Placement some = new Placement(0, 0, PAGE, 0);
            Result<?> got = switch (op.a()) {
                case 0 -> op.b() == 6 ? service.allocate(tenant, key, op.c() % 2 == 0 ? 0 : layout.bucketSize() + 1, true)
                        : service.allocate(t, k, PAGE, true);
                case 1 -> service.free(t, k, null);
                case 2 -> service.notifySuccess(t, k, some);
                case 3 -> service.getMapping(t, k);
                default -> service.remove(t, k);
            };
            expect(ErrorCode.INVALID_PARAMS, got, "invalid call " + op);
            outcome(Kind.INVALID, ErrorCode.INVALID_PARAMS);
        }

        /** Everything the model says, checked against the service. */
        void verify() {
            String[][] owners = occupancy(); // fails on any page held twice
            long committedPages = 0;
            long pendingPages = 0;
            long mappings = 0;
            long inFlight = 0;
            Set<String> liveTenants = new HashSet<>();
            Map<String, TreeMap<String, Placement>> listed = new HashMap<>();
            for (Map.Entry<String, KeyState> e : model.entrySet()) {
                KeyState s = e.getValue();
                String tenant = e.getKey().substring(0, e.getKey().indexOf('/'));
                liveTenants.add(tenant);
                if (s.committed != null) {
                    committedPages += pages(s.committed);
                    mappings++;
                    listed.computeIfAbsent(tenant, x -> new TreeMap<>()).put(e.getKey().substring(tenant.length() + 1), s.committed);
                }
                if (s.pending != null) {
                    pendingPages += pages(s.pending);
                    inFlight++;
                }
            }
            long quarantined = quarantine.stream().mapToLong(Quarantined::pages).sum();

            long allocated = 0;
            for (int b = 0; b < layout.bucketCount(); b++) {
                var allocator = service.allocator(b);
                allocated += allocator.allocatedCount();
                for (int page = 0; page < layout.pagesPerBucket(); page++) {
                    boolean held = owners[b][page] != null;
                    if (held != allocator.isAllocated(page)) {
                        fail("step " + step + " (now " + now + "): page " + page + " of bucket " + b + " is "
                                + (held ? "held by " + owners[b][page] + " but free in the bitmap" : "free in the model but allocated in the bitmap"));
                    }
                }
            }
            assertEquals(quarantined, service.quarantinedPageCount(), "step " + step + ": quarantined pages");
            assertEquals(committedPages + pendingPages + service.quarantinedPageCount(), allocated,
                    "step " + step + ": allocated pages = mapped + in flight + quarantined");
            assertEquals(mappings, service.mappingCount(), "step " + step + ": mappingCount");
            assertEquals(inFlight, service.inFlightCount(), "step " + step + ": inFlightCount");
            PageService.Stats stats = service.stats();
            assertEquals(allocated, stats.pagesAllocated());
            assertEquals(liveTenants.size(), stats.tenants(), "step " + step + ": tenants with a key");
            // The service's own check (fsck --master) must agree: no leak, no false free, no overlap, and the counts it saw.
            PageCheck check = service.checkPages(0, false, 100);
            assertTrue(check.clean(), () -> "step " + step + ": checkPages found " + check);
            assertEquals(mappings, check.mappings(), "step " + step + ": checkPages mappings");
            assertEquals(inFlight, check.inFlight(), "step " + step + ": checkPages in flight");
            assertEquals(committedPages + pendingPages + quarantined, check.buckets().stream().mapToLong(PageCheck.BucketCounters::claimedPages).sum(),
                    "step " + step + ": pages checkPages saw claimed");

            for (String tenant : tenants) {
                for (String key : KEYS) {
                    KeyState s = model.get(scoped(tenant, key));
                    Result<Placement> peek = service.peek(tenant, key);
                    if (s != null && s.committed != null) {
                        assertTrue(peek.isOk(), "step " + step + ": peek(" + tenant + ", " + key + ") answered " + peek);
                        assertEquals(s.committed, peek.value());
                    } else {
                        ErrorCode want = s != null && s.pending != null ? ErrorCode.REPLICA_IS_NOT_READY : ErrorCode.OBJECT_NOT_FOUND;
                        expect(want, peek, "peek(" + tenant + ", " + key + ")");
                    }
                }
                Result<PageService.KeyPage> list = service.listKeys(tenant, "", 1000, "");
                assertTrue(list.isOk());
                TreeMap<String, Placement> got = new TreeMap<>();
                for (Map.Entry<String, Placement> e : list.value().keys()) {
                    if (got.put(e.getKey(), e.getValue()) != null) {
                        fail("step " + step + ": listKeys(" + tenant + ") listed " + e.getKey() + " twice");
                    }
                }
                assertEquals(listed.getOrDefault(tenant, new TreeMap<>()), got, "step " + step + ": listKeys(" + tenant + ")");
                assertEquals(new ArrayList<>(got.keySet()), list.value().keys().stream().map(Map.Entry::getKey).toList(), "listed in key order");
                assertEquals("", list.value().nextToken());
            }
        }
    }
}
