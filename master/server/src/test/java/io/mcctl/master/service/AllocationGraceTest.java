package io.mcctl.master.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.protocol.Placement;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The pages of an allocation that ended without a notify (expired, or dropped by an operator) stay out of the allocator
 * until its deadline plus the grace, and renewals move a deadline without breaking the reaper's deadline order. On a
 * clock the test moves.
 */
@Timeout(60)
class AllocationGraceTest {

    static final long PAGE = 4096;
    static final long SECOND = 1_000_000_000L;
    static final Duration DEADLINE = Duration.ofSeconds(10);
    static final Duration GRACE = Duration.ofSeconds(4);

    final BucketLayout layout = new BucketLayout(Path.of("/nonexistent/mcctl-grace"), 1, PAGE, 8 * PAGE);
    long now = 7 * SECOND;
    final PageService service = PageService.builder(layout).allocationDeadline(DEADLINE).readLease(Duration.ofSeconds(5)).allocationGrace(GRACE).nanoClock(() -> now).build();

    Placement allocate(String key, long size) {
        Result<Placement> result = service.allocate("t", key, size, false);
        assertTrue(result.isOk(), result::toString);
        return result.value();
    }

    boolean allocated(Placement p) {
        return service.allocator(p.bucket()).isRangeAllocated(p.offset() / PAGE, layout.pagesFor(p.size()));
    }

    @Test
    void an_expired_allocations_pages_are_not_handed_out_before_its_deadline_plus_grace() {
        Placement expired = allocate("late-writer", 8 * PAGE); // the whole bucket
        now += DEADLINE.toNanos();
        assertEquals(0, service.reap());
        assertEquals(0, service.inFlightCount(), "the key is no longer in flight");
        assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, service.allocate("t", "other", PAGE, false).error(),
                "no page of the expired allocation is given to another key while its writer may still be writing");
        now += GRACE.toNanos() - 1;
        assertEquals(0, service.reap());
        assertTrue(allocated(expired));
        now += 1;
        assertEquals(8, service.reap());
        assertTrue(service.allocate("t", "other", PAGE, false).isOk(), "after the grace the pages are free");
    }

    @Test
    void a_renewal_moves_the_deadline_and_keeps_the_reaper_in_deadline_order() {
        Placement a = allocate("a", PAGE);
        now += SECOND;
        Placement b = allocate("b", PAGE);
        now += 2 * SECOND;
        Result<Long> renewed = service.renew("t", "a", a);
        assertTrue(renewed.isOk(), renewed::toString);
        assertEquals(DEADLINE.toMillis(), renewed.value());
        now += DEADLINE.toNanos() - 2 * SECOND; // b's deadline; a's old one has passed too
        service.reap();
        assertEquals(1, service.inFlightCount(), "only b expired: a, renewed, is now behind it");
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.notifySuccess("t", "b", b).error());
        assertTrue(service.notifySuccess("t", "a", a.withCrc(5)).isOk(), "a renewed allocation commits past its first deadline");
    }

    @Test
    void a_renewal_with_a_wrong_descriptor_or_past_the_deadline_is_refused_and_changes_nothing() {
        Placement p = allocate("k", 2 * PAGE);
        Placement wrong = new Placement(p.bucket(), p.offset() + PAGE, p.size(), 0);
        assertEquals(ErrorCode.INVALID_PARAMS, service.renew("t", "k", wrong).error());
        assertEquals(ErrorCode.INVALID_PARAMS, service.renew("t", "k", null).error());
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.renew("t", "nothing", p).error());
        now += DEADLINE.toNanos();
        Result<Long> late = service.renew("t", "k", p);
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, late.error(), late.toString());
        assertEquals(1, service.inFlightCount(), "a refused renewal leaves the allocation to the reaper");
        service.reap();
        assertEquals(0, service.inFlightCount(), "it expired at its original deadline: the refusals moved nothing");
        assertEquals(1, service.expiredAllocationsTotal());
    }

    @Test
    void dropping_an_in_flight_allocation_frees_the_key_at_once_and_quarantines_its_pages_until_deadline_plus_grace() {
        Placement old = allocate("stuck", 3 * PAGE);
        now += SECOND;
        Result<PageService.InFlightDrop> dropped = service.dropInFlight("t", "stuck");
        assertTrue(dropped.isOk(), dropped::toString);
        assertTrue(old.sameRange(dropped.value().placement()));
        assertEquals(service.wallMillis(DEADLINE.toNanos() + GRACE.toNanos()), dropped.value().quarantinedUntilMs(),
                "quarantined until the allocation's deadline plus grace (the service's clock starts at 0)");
        assertEquals(3, service.quarantinedPageCount());
        Placement fresh = allocate("stuck", PAGE);
        assertFalse(fresh.offset() >= old.offset() && fresh.offset() < old.offset() + 3 * PAGE, "the new allocation avoids the old pages");
        now = 7 * SECOND + DEADLINE.toNanos() + GRACE.toNanos() - 1;
        service.reap(); // the new allocation expires (its pages enter quarantine); the old pages are still held
        assertTrue(allocated(old));
        now += 1;
        service.reap();
        assertFalse(service.allocator(old.bucket()).isAllocated(old.offset() / PAGE), "released at the old deadline plus grace");
    }

    @Test
    void dropping_refuses_bad_input_and_keys_without_an_allocation_and_never_touches_a_mapping() {
        Placement p = allocate("kept", PAGE);
        assertTrue(service.notifySuccess("t", "kept", p.withCrc(1)).isOk());
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.dropInFlight("t", "kept").error());
        assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.dropInFlight("t", "never").error());
        assertEquals(ErrorCode.INVALID_PARAMS, service.dropInFlight("t", "").error());
        assertEquals(ErrorCode.INVALID_PARAMS, service.dropInFlight("", "kept").error());
        assertEquals(p.withCrc(1), service.peek("t", "kept").value());
        assertEquals(0, service.quarantinedPageCount());
    }

    @Test
    void a_writer_that_frees_its_own_allocation_gives_the_pages_back_at_once() {
        Placement p = allocate("k", 8 * PAGE);
        assertTrue(service.free("t", "k", p).isOk());
        assertEquals(0, service.quarantinedPageCount(), "the writer says it has stopped: no grace needed");
        assertTrue(service.allocate("t", "other", 8 * PAGE, false).isOk());
    }

    @Test
    void a_grace_that_is_not_positive_is_refused() {
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> PageService.builder(layout).allocationDeadline(DEADLINE).readLease(Duration.ofSeconds(5)).allocationGrace(Duration.ZERO).nanoClock(() -> now).build());
    }
}
