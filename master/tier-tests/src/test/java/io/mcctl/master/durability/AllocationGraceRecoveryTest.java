package io.mcctl.master.durability;

import static io.mcctl.testkit.StateFixture.assertSameState;
import static io.mcctl.testkit.StateFixture.dump;
import static io.mcctl.testkit.StateFixture.recover;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.Result;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.testkit.StateFixture;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Renewals, operator drops and the grace after an allocation's deadline, logged and replayed: a restarted master holds
 * exactly what the live one held, whatever the wall clock the log was stamped with did.
 */
@Timeout(60)
class AllocationGraceRecoveryTest {

    static final long PAGE = 4096;
    static final long MILLI = 1_000_000L;

    @TempDir
    Path dir;

    BucketLayout layout() {
        return StateFixture.layout(dir.resolve("root"));
    }

    Path stateDir() {
        return dir.resolve("state");
    }

    static Placement allocate(PageService pages, String key, long size) {
        Result<Placement> r = pages.allocate("t", key, size, false);
        assertTrue(r.isOk(), r::toString);
        return r.value();
    }

    @Test
    void renewals_drops_and_expiries_into_the_grace_replay_to_the_live_state() throws Exception {
        assertReplaysExactly(System::currentTimeMillis);
    }

    @Test
    void a_log_stamped_by_a_wall_clock_far_ahead_still_replays_every_quarantine() throws Exception {
        // The master decides on its monotonic clock; the log's times come from the wall clock. With the wall clock a minute
        // ahead every release time is "before" its record: replay must still quarantine what the master quarantined.
        assertReplaysExactly(() -> System.currentTimeMillis() + 60_000);
    }

    @Test
    void a_log_stamped_by_a_wall_clock_behind_replays_the_same() throws Exception {
        assertReplaysExactly(() -> System.currentTimeMillis() - 60_000);
    }

    private void assertReplaysExactly(LongSupplier logClock) throws Exception {
        AtomicLong now = new AtomicLong();
        PageService pages = PageService.builder(layout()).allocationDeadline(Duration.ofSeconds(2)).readLease(Duration.ofSeconds(5)).allocationGrace(Duration.ofSeconds(30)).nanoClock(now::get).build();
        try (WriteAheadLog wal = new WriteAheadLog(stateDir(), "test-cluster", 0, 64L << 20, logClock)) {
            pages = PageService.serving(pages).changeLog(wal.changeLog()).build();
            allocate(pages, "abandoned", 3 * PAGE);
            Placement renewed = allocate(pages, "renewed", 2 * PAGE);
            allocate(pages, "dropped", 5 * PAGE);
            now.addAndGet(1500 * MILLI);
            assertTrue(pages.renew("t", "renewed", renewed).isOk());
            assertTrue(pages.dropInFlight("t", "dropped").isOk());
            Placement leased = allocate(pages, "leased", PAGE);
            assertTrue(pages.notifySuccess("t", "leased", leased.withCrc(3)).isOk());
            wal.whenDurable().get(10, TimeUnit.SECONDS); // as the notify is answered: a lookup finds it once the log holds it
            assertTrue(pages.getMapping("t", "leased").isOk());
            assertTrue(pages.remove("t", "leased").isOk()); // quarantined behind its read lease
            now.addAndGet(700 * MILLI);
            pages.reap(); // "abandoned" expires into the grace; "renewed" is still in flight
            assertEquals(1, pages.inFlightCount());
            assertEquals(3 + 5 + 1, pages.quarantinedPageCount(), "expired, dropped and removed pages all wait");
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }
        StateFixture.Restored restored = recover(stateDir(), layout(), true);
        assertSameState(StateFixture.capture(pages).afterCrash(restored.pages()), dump(restored.pages()), "replayed");
    }

    @Test
    void an_allocation_restored_past_its_deadline_is_held_until_its_deadline_plus_grace() throws Exception {
        AtomicLong now = new AtomicLong();
        PageService pages = PageService.builder(layout()).allocationDeadline(Duration.ofSeconds(1)).readLease(Duration.ofSeconds(5)).nanoClock(now::get).build();
        Placement p;
        try (WriteAheadLog wal = new WriteAheadLog(stateDir(), "test-cluster", 0, 64L << 20, System::currentTimeMillis)) {
            pages = PageService.serving(pages).changeLog(wal.changeLog()).build();
            p = allocate(pages, "writing", 4 * PAGE);
            pages.closeAllReservations(); // as a master that stops does: the restart holds nothing but the allocation
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }
        AtomicLong later = new AtomicLong();
        StateFixture.Restored restored = recover(stateDir(), layout(), true, later::get); // grace: the default
        PageService back = restored.pages();
        assertEquals(1, back.inFlightCount());
        later.addAndGet(Duration.ofSeconds(2).toNanos()); // past the deadline on any reading of the wall clock
        assertEquals(0, back.reap(), "expired, and held for the grace: its writer may still be writing");
        assertEquals(0, back.inFlightCount());
        assertEquals(4, back.quarantinedPageCount());
        assertTrue(back.allocator(p.bucket()).isRangeAllocated(p.offset() / PAGE, 4));
        later.addAndGet(PageService.DEFAULT_ALLOCATION_GRACE.toNanos());
        assertEquals(4, back.reap(), "released at deadline plus grace");
    }
}
