package io.mcctl.master.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.protocol.Placement;
import io.mcctl.testkit.TestObjects;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link PageService} by example, on a clock the test moves. */
@Timeout(60)
class PageServiceTest {

    static final long PAGE = 4096;
    static final int BUCKETS = 4;
    static final long PAGES_PER_BUCKET = 16;
    static final long SECOND = 1_000_000_000L;
    static final Duration DEADLINE = Duration.ofSeconds(10);
    static final Duration LEASE = Duration.ofSeconds(5);
    static final Duration GRACE = Duration.ofSeconds(3);

    final BucketLayout layout = new BucketLayout(Path.of("/nonexistent/mcctl-page-service"), BUCKETS, PAGE, PAGES_PER_BUCKET * PAGE);
    long now = 42 * SECOND;
    PageService service = PageService.builder(layout).allocationDeadline(DEADLINE).readLease(LEASE).allocationGrace(GRACE).nanoClock(() -> now).build();

    // ---- helpers ----

    Placement allocate(String tenant, String key, long size) {
        Result<Placement> result = service.allocate(tenant, key, size, false);
        assertTrue(result.isOk(), () -> "allocate(" + tenant + ", " + key + ", " + size + "): " + result);
        return result.value();
    }

    Placement commit(String tenant, String key, long size, int crc) {
        Placement placement = allocate(tenant, key, size);
        Result<Void> notified = service.notifySuccess(tenant, key, placement.withCrc(crc));
        assertTrue(notified.isOk(), notified::toString);
        return placement.withCrc(crc);
    }

    long pages(Placement p) {
        return layout.pagesFor(p.size());
    }

    boolean allAllocated(Placement p) {
        return service.allocator(p.bucket()).isRangeAllocated(p.offset() / PAGE, pages(p));
    }

    boolean noneAllocated(Placement p) {
        for (long page = p.offset() / PAGE; page < p.offset() / PAGE + pages(p); page++) {
            if (service.allocator(p.bucket()).isAllocated(page)) {
                return false;
            }
        }
        return true;
    }

    long allocatedPages() {
        return service.stats().pagesAllocated();
    }

    /** Everything a rejected request must leave as it was. */
    record Snapshot(PageService.Stats stats, List<long[]> bitmaps, long allocations, long frees, List<String> keys) {
        void assertSameAs(Snapshot other) {
            assertEquals(stats, other.stats, "stats");
            assertEquals(bitmaps.size(), other.bitmaps.size());
            for (int b = 0; b < bitmaps.size(); b++) {
                assertArrayEquals(bitmaps.get(b), other.bitmaps.get(b), "bitmap of bucket " + b);
            }
            assertEquals(allocations, other.allocations, "pages allocated in total");
            assertEquals(frees, other.frees, "pages freed in total");
            assertEquals(keys, other.keys, "keys and their mappings");
        }
    }

    Snapshot snapshot(String... tenants) {
        List<long[]> bitmaps = new ArrayList<>();
        for (int b = 0; b < BUCKETS; b++) {
            bitmaps.add(service.allocator(b).bitmapWords());
        }
        List<String> keys = new ArrayList<>();
        for (String tenant : tenants) {
            for (Map.Entry<String, Placement> e : service.listKeys(tenant, "", PageService.MAX_LIST_PAGE, "").value().keys()) {
                keys.add(tenant + ":" + e.getKey() + "=" + e.getValue());
            }
        }
        return new Snapshot(service.stats(), bitmaps, service.pageAllocationsTotal(), service.pageFreesTotal(), keys);
    }

    @Nested
    class Bad_input_gets_INVALID_PARAMS_and_changes_nothing {

        Placement writing;

        @BeforeEach
        void some_state_that_must_survive() {
            commit("t", "kept", 3 * PAGE, 7);
            writing = allocate("t", "writing", 2 * PAGE);
        }

        static Stream<Arguments> badAllocations() {
            long bucket = PAGES_PER_BUCKET * PAGE;
            return Stream.of(
                    Arguments.of("empty key", "t", "", PAGE),
                    Arguments.of("null key", "t", null, PAGE),
                    Arguments.of("key of 4097 bytes", "t", "k".repeat(4097), PAGE),
                    Arguments.of("key of 2049 two-byte characters (4098 bytes)", "t", "é".repeat(2049), PAGE),
                    Arguments.of("key of 1366 three-byte characters (4098 bytes)", "t", "€".repeat(1366), PAGE),
                    Arguments.of("key of 1025 characters beyond the BMP (4100 bytes)", "t", "\uD83D\uDE00".repeat(1025), PAGE),
                    Arguments.of("size 0", "t", "new", 0L),
                    Arguments.of("size -1", "t", "new", -1L),
                    Arguments.of("size of a bucket plus one byte", "t", "new", bucket + 1),
                    Arguments.of("size 0 for a committed key", "t", "kept", 0L),
                    Arguments.of("size -1 for a key in flight", "t", "writing", -1L),
                    Arguments.of("empty tenant", "", "new", PAGE),
                    Arguments.of("null tenant", null, "new", PAGE),
                    Arguments.of("tenant with a space", "a b", "new", PAGE),
                    Arguments.of("tenant with a slash", "a/b", "new", PAGE),
                    Arguments.of("tenant with a NUL", "a\0b", "new", PAGE),
                    Arguments.of("tenant of 65 characters", "t".repeat(65), "new", PAGE));
        }

        @ParameterizedTest(name = "{0}")
        @MethodSource("badAllocations")
        void allocate_with(String why, String tenant, String key, long size) {
            Snapshot before = snapshot("t");
            Result<Placement> result = service.allocate(tenant, key, size, true);
            assertEquals(ErrorCode.INVALID_PARAMS, result.error(), why + ": " + result);
            assertFalse(result.message().isBlank(), "the error says what is wrong");
            snapshot("t").assertSameAs(before);
            assertEquals(ErrorCode.REPLICA_IS_NOT_READY, service.getMapping("t", "writing").error(), "the allocation in flight is still there");
            assertTrue(service.notifySuccess("t", "writing", writing).isOk(), "and can still be committed");
        }

        @Test
        void the_limits_themselves_are_accepted() {
            assertTrue(service.allocate("t".repeat(64), "a", PAGE, false).isOk(), "tenant of 64 characters");
            assertTrue(service.allocate("t", "k".repeat(4096), PAGE, false).isOk(), "key of 4096 bytes");
            assertTrue(service.allocate("t", "whole", PAGES_PER_BUCKET * PAGE, false).isOk(), "a whole bucket");
            assertTrue(service.allocate("t", "€".repeat(1365), PAGE, false).isOk(), "key of 1365 three-byte characters (4095 bytes)");
            assertTrue(service.allocate("t", "\uD83D\uDE00".repeat(1024), PAGE, false).isOk(), "key of 1024 characters beyond the BMP (4096 bytes)");
            assertTrue(service.allocate("A-z_0.9", "any key / with: spaces", 1, false).isOk(), "every allowed tenant character");
        }

        @ParameterizedTest(name = "tenant \"{0}\"")
        @ValueSource(strings = {"", "a b", "a/b", "ttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt"})
        void every_call_refuses_a_bad_tenant(String tenant) {
            everyCallRefuses(tenant, "kept");
        }

        @Test
        void every_call_refuses_an_empty_or_oversized_key() {
            everyCallRefuses("t", "");
            everyCallRefuses("t", "k".repeat(4097));
        }

        void everyCallRefuses(String tenant, String key) {
            Snapshot before = snapshot("t");
            List<Supplier<Result<?>>> calls = List.of(
                    () -> service.free(tenant, key, null),
                    () -> service.free(tenant, key, writing),
                    () -> service.notifySuccess(tenant, key, writing),
                    () -> service.getMapping(tenant, key),
                    () -> service.peek(tenant, key),
                    () -> service.remove(tenant, key),
                    () -> service.exists(tenant, key));
            for (Supplier<Result<?>> call : calls) {
                Result<?> result = call.get();
                assertEquals(ErrorCode.INVALID_PARAMS, result.error(), "(" + tenant + ", " + key + "): " + result);
            }
            snapshot("t").assertSameAs(before);
        }

        @Test
        void listKeys_refuses_a_bad_tenant_and_a_page_size_outside_1_to_10000() {
            assertEquals(ErrorCode.INVALID_PARAMS, service.listKeys("a b", "", 10, "").error());
            assertEquals(ErrorCode.INVALID_PARAMS, service.listKeys("", "", 10, "").error());
            assertEquals(ErrorCode.INVALID_PARAMS, service.listKeys("t", "", 0, "").error());
            assertEquals(ErrorCode.INVALID_PARAMS, service.listKeys("t", "", -1, "").error());
            assertEquals(ErrorCode.INVALID_PARAMS, service.listKeys("t", "", PageService.MAX_LIST_PAGE + 1, "").error());
            assertTrue(service.listKeys("t", "", PageService.MAX_LIST_PAGE, "").isOk());
        }

        @Test
        void notify_without_a_descriptor() {
            Snapshot before = snapshot("t");
            assertEquals(ErrorCode.INVALID_PARAMS, service.notifySuccess("t", "writing", null).error());
            snapshot("t").assertSameAs(before);
        }
    }

    @Nested
    class An_allocation_in_flight {

        @Test
        void a_second_allocate_for_the_key_is_REPLICA_IS_NOT_READY_and_keeps_the_first() {
            Placement first = allocate("t", "k", 3 * PAGE);
            Snapshot before = snapshot("t");
            assertEquals(ErrorCode.REPLICA_IS_NOT_READY, service.allocate("t", "k", PAGE, false).error());
            assertEquals(ErrorCode.REPLICA_IS_NOT_READY, service.allocate("t", "k", PAGE, true).error(), "overwrite changes nothing here");
            snapshot("t").assertSameAs(before);
            assertTrue(service.notifySuccess("t", "k", first.withCrc(1)).isOk());
        }

        @Test
        void is_not_readable_and_does_not_exist_yet() {
            allocate("t", "k", PAGE);
            assertEquals(ErrorCode.REPLICA_IS_NOT_READY, service.getMapping("t", "k").error());
            assertEquals(ErrorCode.REPLICA_IS_NOT_READY, service.peek("t", "k").error());
            assertFalse(service.exists("t", "k").value());
            assertTrue(service.listKeys("t", "", 10, "").value().keys().isEmpty());
            assertEquals(0, service.mappingCount());
            assertEquals(1, service.inFlightCount());
        }

        @Test
        void notify_commits_it_with_its_checksum() {
            Placement p = allocate("t", "k", 5000);
            assertTrue(service.notifySuccess("t", "k", p.withCrc(0xCAFEBABE)).isOk());
            assertEquals(new Placement(p.bucket(), p.offset(), 5000, 0xCAFEBABE), service.getMapping("t", "k").value());
            assertTrue(service.exists("t", "k").value());
            assertEquals(1, service.mappingCount());
            assertEquals(0, service.inFlightCount());
            assertEquals(2, allocatedPages());
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.notifySuccess("t", "k", p).error(), "a second notify finds nothing in flight");
        }

        @Test
        void notify_with_a_descriptor_that_does_not_match_is_INVALID_PARAMS_and_changes_nothing() {
            Placement p = allocate("t", "k", 2 * PAGE);
            Snapshot before = snapshot("t");
            List<Placement> wrong = List.of(
                    new Placement(p.bucket(), p.offset() + PAGE, p.size(), 0),
                    new Placement(p.bucket(), p.offset(), p.size() - 1, 0),
                    new Placement((p.bucket() + 1) % BUCKETS, p.offset(), p.size(), 0),
                    new Placement(-1, p.offset(), p.size(), 0));
            for (Placement w : wrong) {
                Result<Void> result = service.notifySuccess("t", "k", w);
                assertEquals(ErrorCode.INVALID_PARAMS, result.error(), w.toString());
                assertTrue(result.message().contains("does not match"), result.message());
            }
            snapshot("t").assertSameAs(before);
            assertTrue(service.notifySuccess("t", "k", p).isOk(), "the right descriptor still commits");
        }

        @Test
        void free_with_a_wrong_descriptor_is_INVALID_PARAMS_and_with_the_right_one_or_none_frees_at_once() {
            Placement a = allocate("t", "a", 2 * PAGE);
            Placement b = allocate("t", "b", 3 * PAGE);
            Snapshot before = snapshot("t");
            assertEquals(ErrorCode.INVALID_PARAMS, service.free("t", "a", b).error(), "another key's allocation");
            snapshot("t").assertSameAs(before);

            assertTrue(service.free("t", "a", a).isOk());
            assertTrue(noneAllocated(a));
            assertTrue(service.free("t", "b", null).isOk());
            assertTrue(noneAllocated(b));
            assertEquals(0, allocatedPages());
            assertEquals(0, service.inFlightCount());
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.free("t", "a", null).error(), "nothing left to free");
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.notifySuccess("t", "a", a).error(), "a freed allocation cannot be committed");
        }

        @Test
        void free_never_touches_a_committed_mapping() {
            Placement kept = commit("t", "k", PAGE, 3);
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.free("t", "k", kept).error());
            assertEquals(kept, service.peek("t", "k").value());
            assertTrue(allAllocated(kept));
        }

        @Test
        void notify_after_the_deadline_is_OBJECT_NOT_FOUND_and_the_pages_wait_out_the_grace_in_quarantine() {
            Placement p = allocate("t", "k", 4 * PAGE);
            now += DEADLINE.toNanos();
            Result<Void> late = service.notifySuccess("t", "k", p.withCrc(9));
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, late.error(), late.toString());
            assertTrue(allAllocated(p), "a writer late past its deadline may still be writing: its pages are not reused yet");
            assertEquals(4, service.quarantinedPageCount());
            assertEquals(0, service.inFlightCount());
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.peek("t", "k").error());
            now += GRACE.toNanos() - 1;
            assertEquals(0, service.reap(), "held until deadline plus grace");
            now += 1;
            assertEquals(4, service.reap(), "released once, at deadline plus grace (no double free)");
            assertTrue(noneAllocated(p));
            assertEquals(0, service.quarantinedPageCount());
        }

        @Test
        void one_nanosecond_before_the_deadline_notify_still_commits() {
            Placement p = allocate("t", "k", PAGE);
            now += DEADLINE.toNanos() - 1;
            assertEquals(0, service.reap());
            assertTrue(service.notifySuccess("t", "k", p).isOk());
            now += DEADLINE.toNanos();
            assertEquals(0, service.reap(), "a committed allocation is not reclaimed at its old deadline");
            assertTrue(allAllocated(p));
        }

        @Test
        void the_reaper_reclaims_it_at_the_deadline_and_a_late_notify_finds_nothing() {
            Placement p = allocate("t", "k", 3 * PAGE);
            now += DEADLINE.toNanos() - 1;
            assertEquals(0, service.reap());
            now += 1;
            assertEquals(0, service.reap(), "expired, but its pages wait out the grace");
            assertEquals(1, service.expiredAllocationsTotal());
            assertEquals(3, allocatedPages());
            assertEquals(3, service.quarantinedPageCount());
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.notifySuccess("t", "k", p).error());
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.free("t", "k", p).error());
            now += GRACE.toNanos();
            assertEquals(3, service.reap());
            assertEquals(0, allocatedPages());
        }

        @Test
        void an_expired_allocation_is_replaced_by_the_next_allocate_and_its_late_notify_cannot_hit_the_new_one() {
            Placement old = allocate("t", "k", 2 * PAGE);
            now += DEADLINE.toNanos();
            Placement fresh = allocate("t", "k", 5 * PAGE);
            assertEquals(7, allocatedPages(), "the expired allocation's pages wait out the grace while the key is allocated again");
            assertTrue(allAllocated(old));
            assertEquals(1, service.inFlightCount());
            assertEquals(ErrorCode.INVALID_PARAMS, service.notifySuccess("t", "k", old).error());
            assertEquals(ErrorCode.INVALID_PARAMS, service.free("t", "k", old).error());
            assertEquals(0, service.reap(), "the old allocation's expiry finds it replaced");
            assertTrue(service.notifySuccess("t", "k", fresh).isOk());
        }
    }

    @Nested
    class A_committed_key {

        @Test
        void allocate_without_overwrite_is_OBJECT_ALREADY_EXISTS_and_changes_nothing() {
            commit("t", "k", PAGE, 1);
            Snapshot before = snapshot("t");
            Result<Placement> result = service.allocate("t", "k", PAGE, false);
            assertEquals(ErrorCode.OBJECT_ALREADY_EXISTS, result.error());
            snapshot("t").assertSameAs(before);
        }

        @Test
        void overwrite_without_a_lease_replaces_the_mapping_at_notify_and_frees_the_old_pages_at_once() {
            Placement old = commit("t", "k", 3 * PAGE, 1);
            Placement fresh = service.allocate("t", "k", 2 * PAGE, true).value();
            assertEquals(old, service.peek("t", "k").value(), "the old mapping serves until the notify");
            assertTrue(allAllocated(old));
            assertTrue(service.notifySuccess("t", "k", fresh.withCrc(2)).isOk());
            assertEquals(fresh.withCrc(2), service.peek("t", "k").value());
            assertTrue(noneAllocated(old));
            assertEquals(2, allocatedPages());
            assertEquals(1, service.mappingCount());
            assertEquals(0, service.quarantinedPageCount());
        }

        @Test
        void overwrite_under_a_read_lease_keeps_the_old_pages_until_the_lease_ends() {
            Placement old = commit("t", "k", 3 * PAGE, 1);
            long leaseEnd = now + LEASE.toNanos();
            assertTrue(service.getMapping("t", "k").isOk());
            Placement fresh = service.allocate("t", "k", 3 * PAGE, true).value();
            assertTrue(service.notifySuccess("t", "k", fresh).isOk());
            assertEquals(3, service.quarantinedPageCount());
            assertTrue(allAllocated(old), "quarantined pages stay allocated");
            assertEquals(6, allocatedPages());

            now = leaseEnd - 1;
            assertEquals(0, service.reap());
            Placement other = allocate("t", "other", 3 * PAGE);
            assertFalse(other.bucket() == old.bucket() && other.offset() < old.offset() + 3 * PAGE && old.offset() < other.offset() + 3 * PAGE,
                    "an allocation during the lease never gets the old pages: " + other + " vs " + old);

            now = leaseEnd;
            assertEquals(3, service.reap());
            assertTrue(noneAllocated(old));
            assertEquals(0, service.quarantinedPageCount());
        }

        @Test
        void remove_without_a_lease_frees_at_once_and_a_second_remove_is_OBJECT_NOT_FOUND() {
            Placement p = commit("t", "k", 2 * PAGE, 1);
            assertTrue(service.remove("t", "k").isOk());
            assertTrue(noneAllocated(p));
            assertEquals(0, service.mappingCount());
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.remove("t", "k").error());
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.getMapping("t", "k").error());
        }

        @Test
        void each_read_extends_the_lease_and_a_remove_waits_for_the_last_one() {
            Placement p = commit("t", "k", 2 * PAGE, 1);
            service.getMapping("t", "k");
            now += 3 * SECOND;
            long lastLeaseEnd = now + LEASE.toNanos();
            service.getMapping("t", "k");
            now += SECOND;
            service.peek("t", "k"); // a peek grants nothing
            assertTrue(service.remove("t", "k").isOk());
            assertEquals(2, service.quarantinedPageCount());
            now = lastLeaseEnd - 1;
            assertEquals(0, service.reap());
            assertTrue(allAllocated(p));
            now = lastLeaseEnd;
            assertEquals(2, service.reap());
            assertTrue(noneAllocated(p));
        }

        @Test
        void a_lease_that_has_run_out_no_longer_holds_the_pages() {
            Placement p = commit("t", "k", 2 * PAGE, 1);
            service.getMapping("t", "k");
            now += LEASE.toNanos();
            assertTrue(service.remove("t", "k").isOk());
            assertEquals(0, service.quarantinedPageCount());
            assertTrue(noneAllocated(p));
        }

        @Test
        void the_new_mapping_of_an_overwrite_does_not_inherit_the_old_mappings_lease() {
            commit("t", "k", PAGE, 1);
            service.getMapping("t", "k");
            Placement fresh = service.allocate("t", "k", PAGE, true).value();
            service.notifySuccess("t", "k", fresh);
            assertEquals(1, service.quarantinedPageCount(), "the old pages wait for the lease");
            assertTrue(service.remove("t", "k").isOk());
            assertTrue(noneAllocated(fresh), "nobody ever read the new mapping, so its pages are free at once");
        }
    }

    @Nested
    class Any_clock_origin {
        // System.nanoTime() may be negative; a service whose clock starts below zero must behave like any other.

        void startClockAt(long nanos) {
            now = nanos;
            service = PageService.builder(layout).allocationDeadline(DEADLINE).readLease(LEASE).allocationGrace(GRACE).nanoClock(() -> now).build();
        }

        @Test
        void a_mapping_nobody_read_is_freed_at_once_on_a_negative_clock() {
            startClockAt(-1_000 * SECOND);
            Placement p = commit("t", "k", 2 * PAGE, 1);
            assertTrue(service.remove("t", "k").isOk());
            assertEquals(0, service.quarantinedPageCount(), "no read lease was ever granted");
            assertTrue(noneAllocated(p));
        }

        @Test
        void a_read_lease_holds_the_pages_on_a_negative_clock() {
            startClockAt(-1_000 * SECOND);
            Placement p = commit("t", "k", 2 * PAGE, 1);
            service.getMapping("t", "k");
            assertTrue(service.remove("t", "k").isOk());
            assertEquals(2, service.quarantinedPageCount(), "the lease granted at the read holds the pages");
            Placement other = allocate("t", "other", 2 * PAGE);
            assertTrue(other.bucket() != p.bucket() || other.offset() != p.offset());
            now += LEASE.toNanos();
            assertEquals(2, service.reap());
            assertTrue(noneAllocated(p));
        }

        @Test
        void deadlines_work_across_zero() {
            startClockAt(-SECOND);
            Placement p = allocate("t", "k", PAGE);
            now += DEADLINE.toNanos() - 1;
            assertEquals(0, service.reap());
            now += 1;
            assertEquals(0, service.reap());
            now += GRACE.toNanos();
            assertEquals(1, service.reap());
            assertTrue(noneAllocated(p));
        }
    }

    @Nested
    class Placement_across_buckets {

        @Test
        void a_key_lands_in_its_home_bucket() {
            for (String key : List.of("a", "b", "c", "d", "e", "f", "g")) {
                Placement p = allocate("t", key, PAGE);
                assertEquals(layout.homeBucket(key), p.bucket(), key);
            }
            assertEquals(0, service.spillsTotal());
        }

        @ParameterizedTest(name = "home bucket {0}")
        @ValueSource(ints = {1, BUCKETS - 1})
        void a_full_home_bucket_spills_to_the_next_one(int home) {
            List<String> keys = TestObjects.keysWithHome(layout, home, "fill-", 7);
            // Five runs of 3 pages leave one free page in the home bucket: no run of 3 fits any more.
            for (String key : keys.subList(0, 5)) {
                assertEquals(home, allocate("t", key, 3 * PAGE).bucket());
            }
            assertEquals(1, PAGES_PER_BUCKET - service.allocator(home).allocatedCount());
            Placement spilled = allocate("t", keys.get(5), 3 * PAGE);
            assertEquals((home + 1) % BUCKETS, spilled.bucket(), "the next bucket, wrapping after the last");
            assertEquals(1, service.spillsTotal());
            assertTrue(service.notifySuccess("t", keys.get(5), spilled).isOk(), "the placement names the bucket it is really in");
            assertEquals(spilled, service.peek("t", keys.get(5)).value());
            assertEquals(home, allocate("t", keys.get(6), PAGE).bucket(), "a smaller object that fits still lands at home");
        }

        @Test
        void spill_skips_every_full_bucket() {
            int home = 2;
            for (int i = 0; i < 3; i++) {
                int bucket = (home + i) % BUCKETS;
                allocate("t", TestObjects.keysWithHome(layout, bucket, "full-" + i + "-", 1).get(0), PAGES_PER_BUCKET * PAGE);
            }
            Placement p = allocate("t", TestObjects.keysWithHome(layout, home, "late-", 1).get(0), PAGE);
            assertEquals((home + 3) % BUCKETS, p.bucket());
        }

        @Test
        void NO_AVAILABLE_HANDLE_only_when_no_bucket_has_a_run_that_fits() {
            // Fill every bucket with one-page objects, then free every other page: 8 free pages per bucket, no two adjacent.
            List<String> freed = new ArrayList<>();
            for (int b = 0; b < BUCKETS; b++) {
                List<String> keys = TestObjects.keysWithHome(layout, b, "page-" + b + "-", (int) PAGES_PER_BUCKET);
                for (String key : keys) {
                    Placement p = allocate("t", key, PAGE);
                    assertEquals(b, p.bucket());
                    if ((p.offset() / PAGE) % 2 == 0) {
                        freed.add(key);
                    }
                }
            }
            for (String key : freed) {
                assertTrue(service.free("t", key, null).isOk());
            }
            Snapshot before = snapshot("t");
            Result<Placement> refused = service.allocate("t", "two-pages", 2 * PAGE, false);
            assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, refused.error());
            assertTrue(refused.message().contains("2 free consecutive pages"), refused.message());
            snapshot("t").assertSameAs(before);
            assertEquals(1, service.allocationFailuresTotal());
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.peek("t", "two-pages").error(), "the refused key left nothing behind");
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, service.free("t", "two-pages", null).error());

            assertTrue(service.allocate("t", "one-page", PAGE, false).isOk(), "a single page still fits");
        }

        @Test
        void an_overwrite_that_finds_no_room_keeps_the_old_mapping() {
            Placement old = commit("t", "k", PAGES_PER_BUCKET * PAGE, 5);
            for (int b = 0; b < BUCKETS; b++) {
                if (b != old.bucket()) {
                    allocate("t", "filler-" + b, PAGES_PER_BUCKET * PAGE);
                }
            }
            assertEquals(ErrorCode.NO_AVAILABLE_HANDLE, service.allocate("t", "k", PAGE, true).error());
            assertEquals(old, service.getMapping("t", "k").value());
            assertEquals(0, service.allocator(old.bucket()).largestFreeRun());
        }
    }

    @Nested
    class Listing_keys {

        final TreeSet<String> expectedA = new TreeSet<>();
        final TreeSet<String> expectedB = new TreeSet<>();

        @BeforeEach
        void keys_in_two_tenants() {
            for (int i = 0; i < 13; i++) {
                for (String prefix : List.of("a/", "b/", "ab")) {
                    String key = prefix + String.format("%02d", i);
                    commit("tenant-a", key, 1, i);
                    expectedA.add(key);
                }
                if (i % 2 == 0) {
                    commit("tenant-b", "a/" + i, 1, i);
                    expectedB.add("a/" + i);
                }
            }
            allocate("tenant-a", "a/in-flight", 1); // not committed: not listed
        }

        List<String> listAll(String tenant, String prefix, int pageSize) {
            List<String> all = new ArrayList<>();
            String token = "";
            for (int pages = 0; pages < 1000; pages++) {
                PageService.KeyPage page = service.listKeys(tenant, prefix, pageSize, token).value();
                assertTrue(page.keys().size() <= pageSize);
                page.keys().forEach(e -> all.add(e.getKey()));
                if (page.nextToken().isEmpty()) {
                    return all;
                }
                assertEquals(pageSize, page.keys().size(), "only the last page is short");
                token = page.nextToken();
            }
            throw new AssertionError("listing never ended");
        }

        @ParameterizedTest(name = "page size {0}")
        @ValueSource(ints = {1, 4, 7, 39, 1000})
        void pages_through_a_tenants_keys_each_exactly_once_in_order(int pageSize) {
            assertEquals(new ArrayList<>(expectedA), listAll("tenant-a", "", pageSize));
            assertEquals(new ArrayList<>(expectedB), listAll("tenant-b", "", pageSize));
        }

        @ParameterizedTest(name = "page size {0}")
        @ValueSource(ints = {1, 5, 1000})
        void a_prefix_lists_only_its_keys(int pageSize) {
            List<String> expected = expectedA.stream().filter(k -> k.startsWith("a/")).toList();
            assertEquals(expected, listAll("tenant-a", "a/", pageSize));
            assertEquals(expectedA.stream().filter(k -> k.startsWith("a")).toList(), listAll("tenant-a", "a", pageSize));
            assertEquals(List.of(), listAll("tenant-a", "zzz", pageSize));
        }

        @Test
        void the_listing_carries_each_keys_mapping() {
            for (Map.Entry<String, Placement> e : service.listKeys("tenant-b", "", 100, "").value().keys()) {
                assertEquals(service.peek("tenant-b", e.getKey()).value(), e.getValue());
            }
        }

        @Test
        void a_tenant_with_no_keys_lists_nothing() {
            assertEquals(List.of(), listAll("tenant-c", "", 10));
            assertEquals(List.of(), listAll("tenant", "", 10), "a tenant whose name prefixes another's sees none of its keys");
        }
    }

    @Test
    void stats_add_up() {
        commit("t1", "a", 3 * PAGE, 1);
        commit("t2", "a", PAGE, 1);
        allocate("t3", "b", 2 * PAGE);
        service.getMapping("t1", "a");
        service.remove("t1", "a");
        PageService.Stats stats = service.stats();
        assertEquals(new PageService.Stats(1, 1, 3, 6, BUCKETS * PAGES_PER_BUCKET, 2), stats);
        long perBucket = Arrays.stream(new int[] {0, 1, 2, 3}).mapToLong(b -> service.allocator(b).allocatedCount()).sum();
        assertEquals(stats.pagesAllocated(), perBucket);
        assertNotEquals(0, service.pageAllocationsTotal());
    }
}
