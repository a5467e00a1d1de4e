package io.mcctl.master.durability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.service.AnswerBarrier;
import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.Result;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.testkit.StateFixture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Allocations answered inside a reservation, before their own records are durable, over a real write-ahead log in a
 * temp directory: what their answers wait for, and what recovery holds when a crash loses their records (a crash is the
 * state directory's files as they were at a moment, copied aside, and recovered from).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class ReservationRecoveryTest {

    static final long PAGE = 4096;
    static final Duration DEADLINE = Duration.ofSeconds(60);
    static final Duration GRACE = Duration.ofSeconds(10);

    @TempDir
    Path dir;

    /** One bucket of 256 pages: reservations of 4 pages (a 64th), every allocation in it. */
    BucketLayout layout() {
        return new BucketLayout(dir.resolve("root"), 1, PAGE, 256 * PAGE);
    }

    Path stateDir() {
        return dir.resolve("state");
    }

    /** A live service over its log, on a clock the test moves. */
    final class Live implements AutoCloseable {
        final AtomicLong clock = new AtomicLong();
        final PageService pages;
        final WriteAheadLog wal;

        Live() throws IOException {
            wal = new WriteAheadLog(stateDir(), "test-cluster", 0, 64L << 20, System::currentTimeMillis);
            pages = PageService.builder(layout()).allocationDeadline(DEADLINE).readLease(Duration.ofSeconds(5)).allocationGrace(GRACE)
                    .nanoClock(clock::get).changeLog(wal.changeLog()).build();
        }

        Allocation allocate(String key, long pages) {
            AnswerBarrier answer = new AnswerBarrier();
            Result<Placement> r = this.pages.allocate(this.pages.tenant("t"), key, pages * PAGE, false, false, answer);
            assertTrue(r.isOk(), r::toString);
            return new Allocation(r.value(), answer.sequence(), wal.lastAppended());
        }

        void durable() throws Exception {
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() throws IOException {
            wal.close();
        }
    }

    /** An allocation, what its answer waited for, and the log's last sequence right after it (its own record's, or later). */
    record Allocation(Placement placement, long answerWaitsFor, long appendedAfter) {
        boolean overlaps(Placement other) {
            return other.bucket() == placement.bucket() && other.offset() < placement.offset() + placement.size()
                    && placement.offset() < other.offset() + other.size();
        }
    }

    @Test
    void an_allocation_inside_a_durable_reservation_is_answered_without_waiting_for_its_own_record() throws Exception {
        try (Live live = new Live()) {
            Allocation first = live.allocate("first", 1);
            assertTrue(first.answerWaitsFor() > 0 && first.answerWaitsFor() < first.appendedAfter(),
                    "the first opens a reservation, whose record alone its answer waits for: " + first);
            live.durable();
            long durable = live.wal.lastDurable();
            Allocation second = live.allocate("second", 1);
            assertTrue(second.answerWaitsFor() <= durable, "inside the durable reservation: " + second + ", durable " + durable);
            assertTrue(second.appendedAfter() > durable, "its own record was appended, and is not what the answer waits for");
            assertEquals(2, live.pages.reservedAllocationsTotal());
        }
    }

    @Test
    void pages_freed_by_a_change_not_yet_durable_are_handed_out_only_in_an_answer_that_waits_for_it() throws Exception {
        try (Live live = new Live()) {
            Allocation old = live.allocate("old", 2);
            assertTrue(live.pages.notifySuccess("t", "old", old.placement().withCrc(7)).isOk());
            live.durable();
            assertTrue(live.pages.remove("t", "old").isOk()); // no read lease: its pages are free at once
            long removed = live.wal.lastAppended();
            Allocation reuse = live.allocate("reuse", 2);
            assertEquals(old.placement().offset(), reuse.placement().offset(), "the allocator hands out the freed run first");
            assertTrue(reuse.answerWaitsFor() >= removed, "a crash before the remove is durable would give the pages back to 'old': "
                    + reuse + ", remove at " + removed);
        }
    }

    @Test
    void a_crash_that_loses_an_answered_allocation_holds_its_pages_until_its_writer_is_done() throws Exception {
        Path crashed = dir.resolve("crashed");
        Allocation lost = answeredThenLost(crashed);
        AtomicLong later = new AtomicLong();
        PageService back = StateRecovery.recover(crashed, layout(), true,
                () -> PageService.builder(layout()).allocationDeadline(DEADLINE).readLease(Duration.ofSeconds(5)).allocationGrace(GRACE).nanoClock(later::get).build()).pages;
        assertEquals(1, back.inFlightCount(), "the allocation that opened the reservation is in the log; the lost one is not");
        assertTrue(back.heldPageCount() >= 2, "held " + back.heldPageCount());
        assertTrue(back.allocator(0).isRangeAllocated(lost.placement().offset() / PAGE, 2), "the lost allocation's pages are held");
        List<Placement> after = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            Result<Placement> r = back.allocate("t", "new-" + i, PAGE, false);
            assertTrue(r.isOk(), r::toString);
            assertFalse(lost.overlaps(r.value()), r.value() + " overlaps the lost allocation " + lost.placement() + ", whose writer may write");
            after.add(r.value());
        }
        // Held for the open time, the deadline and the grace (a minute and a bit), then free again.
        later.addAndGet(Duration.ofSeconds(50).toNanos());
        back.reap();
        assertTrue(back.allocator(0).isRangeAllocated(lost.placement().offset() / PAGE, 2), "still held within the deadline");
        later.addAndGet(Duration.ofSeconds(40).toNanos());
        back.reap();
        assertFalse(back.allocator(0).isRangeAllocated(lost.placement().offset() / PAGE, 1), "released after the hold");
        assertTrue(back.exportHolds().isEmpty());
    }

    @Test
    void a_reservation_closed_before_the_crash_holds_nothing() throws Exception {
        try (Live live = new Live()) {
            live.allocate("a", 1);
            live.clock.addAndGet(Duration.ofSeconds(3).toNanos()); // past its open time
            live.pages.reap();
            assertEquals(0, live.pages.reservationCount(), "the reaper closed it");
            live.durable();
        }
        PageService back = StateFixture.recover(stateDir(), layout(), true).pages();
        assertEquals(0, back.heldPageCount());
        assertTrue(back.exportHolds().isEmpty());
        assertEquals(1, back.inFlightCount());
    }

    @Test
    void a_master_that_stops_closes_its_reservations_and_a_restart_holds_nothing() throws Exception {
        try (Live live = new Live()) {
            live.allocate("a", 1);
            live.allocate("b", 3);
            assertTrue(live.pages.reservationCount() > 0);
            live.pages.closeAllReservations();
            assertEquals(0, live.pages.reservationCount());
            live.durable();
        }
        PageService back = StateFixture.recover(stateDir(), layout(), true).pages();
        assertEquals(0, back.heldPageCount());
        assertEquals(0, back.reservationCount());
        assertEquals(4, back.allocator(0).allocatedCount(), "the two allocations alone");
    }

    @Test
    void a_second_crash_before_the_hold_ends_holds_the_pages_again_with_or_without_a_snapshot_between() throws Exception {
        Path crashed = dir.resolve("crashed");
        Allocation lost = answeredThenLost(crashed);
        for (boolean snapshot : new boolean[] {false, true}) {
            Path again = dir.resolve("again-" + snapshot);
            copy(crashed, again);
            PageService first = recoverWithLog(again);
            if (snapshot) {
                // The hold is not in the snapshot; the reservation it comes from is, and the log before it goes.
                try (WriteAheadLog wal = new WriteAheadLog(again, "test-cluster", lastSequence(again), 64L << 20, System::currentTimeMillis)) {
                    first = PageService.serving(first).changeLog(wal.changeLog()).build();
                    Snapshotter snapshotter = new Snapshotter(first, wal, again, StateFixture.layoutRecord(layout()), 1, java.util.Map.of(),
                            lastSequence(again));
                    snapshotter.take();
                    assertFalse(first.reservations().isEmpty(), "the replayed reservations stay until their holds end");
                }
            }
            PageService second = recoverWithLog(again);
            assertTrue(second.allocator(0).isRangeAllocated(lost.placement().offset() / PAGE, 2),
                    (snapshot ? "with" : "without") + " a snapshot between: held again");
            assertEquals(first.heldPageCount(), second.heldPageCount());
        }
    }

    @Test
    void a_bucket_where_allocations_land_all_over_opens_a_bounded_number_of_reservations_then_waits_for_everything() throws Exception {
        try (Live live = new Live()) {
            // 64 objects of 4 pages fill the bucket, one per reservation block; then the reservations close.
            List<Allocation> all = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                Allocation a = live.allocate("fill-" + i, 4);
                assertTrue(live.pages.notifySuccess("t", "fill-" + i, a.placement().withCrc(i)).isOk());
                all.add(a);
            }
            live.clock.addAndGet(Duration.ofSeconds(3).toNanos());
            live.pages.reap();
            live.durable();
            assertEquals(0, live.pages.reservationCount());
            // An object goes and a new one takes its room, from the top of the bucket down: each lands in another block,
            // behind the ones before (which stay open), so each opens a reservation, until the bucket has eight open.
            int waitedForEverything = 0;
            for (int i = 0; i < 16; i++) {
                int gone = 63 - 4 * i;
                assertTrue(live.pages.remove("t", "fill-" + gone).isOk());
                Allocation a = live.allocate("scattered-" + i, 4);
                assertEquals(all.get(gone).placement().offset(), a.placement().offset());
                if (a.answerWaitsFor() == AnswerBarrier.EVERYTHING) {
                    waitedForEverything++;
                }
                assertTrue(live.pages.reservationCount() <= 8, "open reservations " + live.pages.reservationCount());
            }
            assertTrue(waitedForEverything > 0, "past eight open reservations an answer waits for every record, its own too");
        }
    }

    @Test
    void a_bucket_filled_front_to_back_answers_every_allocation_in_a_reservation_opened_ahead_and_closes_those_passed() throws Exception {
        try (Live live = new Live()) {
            for (int i = 0; i < 256; i++) {
                Allocation a = live.allocate("seq-" + i, 1);
                assertEquals(i * PAGE, a.placement().offset(), "the allocator fills the bucket front to back");
                assertTrue(a.answerWaitsFor() != AnswerBarrier.EVERYTHING, "allocation " + i + " waited for every record");
                assertTrue(live.pages.reservationCount() <= 3, "after allocation " + i + ": " + live.pages.reservationCount()
                        + " reservations not closed; those the allocations passed are closed");
                live.clock.addAndGet(Duration.ofMillis(10).toNanos()); // 2.56 s in all: reservations' open time ends on the way
            }
            assertEquals(256, live.pages.reservedAllocationsTotal());
            // A reservation takes two blocks of 4 pages: 32 cover the bucket, a few more where one's open time ran out first.
            assertTrue(live.pages.reservationsOpenedTotal() <= 40, "opened " + live.pages.reservationsOpenedTotal() + " reservations");
        }
    }

    /**
     * One allocation opens a reservation and is made durable; {@code crashed} then gets the state directory as a kill -9
     * would leave it if the next record never reached the disk; the next allocation, answered with nothing of its own on
     * disk, is that record. Returns it.
     */
    private Allocation answeredThenLost(Path crashed) throws Exception {
        try (Live live = new Live()) {
            live.allocate("opens-the-reservation", 1);
            live.durable();
            copy(stateDir(), crashed);
            Allocation lost = live.allocate("lost", 2);
            assertTrue(lost.answerWaitsFor() <= live.wal.lastDurable(), "answered with nothing of its own on disk: " + lost);
            return lost;
        }
    }

    private PageService recoverWithLog(Path state) throws IOException {
        return StateRecovery.recover(state, layout(), true, () -> PageService.builder(layout()).allocationDeadline(DEADLINE).readLease(Duration.ofSeconds(5)).allocationGrace(GRACE).build()).pages;
    }

    private long lastSequence(Path state) throws IOException {
        return StateRecovery.recover(state, layout(), true).lastSequence;
    }

    private static void copy(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path file : files.toList()) {
                Files.copy(file, to.resolve(file.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }
}
