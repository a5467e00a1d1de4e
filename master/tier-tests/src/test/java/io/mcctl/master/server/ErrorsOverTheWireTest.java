package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.mcctl.master.protocol.BatchLimits;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.BatchExistKeyResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.proto.v1.MappingResult;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** Mooncake error codes over real gRPC: single calls throw, batch calls answer per key, malformed batches change nothing. */
@Timeout(60)
class ErrorsOverTheWireTest {

    @TempDir
    Path root;
    TierCluster cluster;
    MasterClient client;
    DistributedDiskDescriptor committed;

    @BeforeEach
    void start() throws IOException {
        cluster = TierCluster.start(root, 8, 0);
        client = cluster.newClient();
        committed = client.allocate("t", "present", 5000, false).getDistributedDisk();
        assertEquals(ErrorCode.OK, client.notifySuccess(List.of("present"), List.of("t"),
                List.of(committed.toBuilder().setCrc32C(77).build())).getResults(0).getError());
        client.allocate("t", "in-flight", 100, false);
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    MasterException fails(ErrorCode code, Status.Code status, Executable call) {
        MasterException e = assertThrows(MasterException.class, call);
        assertEquals(code, e.code(), e.getMessage());
        assertFalse(e.unreachable());
        StatusRuntimeException wire = assertInstanceOf(StatusRuntimeException.class, e.getCause());
        assertEquals(status, wire.getStatus().getCode());
        Metadata trailers = wire.getTrailers();
        assertEquals(code.name(), trailers == null ? null : trailers.get(WireErrors.ERROR_CODE_KEY), "the trailer carries the name");
        assertTrue(wire.getStatus().getDescription().startsWith(code.name() + ": "), wire.getStatus().getDescription());
        assertFalse(e.getMessage().startsWith(code.name()), "the client's message drops the prefix: " + e.getMessage());
        return e;
    }

    record State(long mappings, long inFlight, long pages, long quarantined) {
        static State of(GetStatsResponse s) {
            return new State(s.getMappings(), s.getInFlightAllocations(), s.getPagesAllocated(), s.getQuarantinedPages());
        }
    }

    @Nested
    class Single_key_calls_throw_with_the_code {

        @Test
        void get_of_a_missing_key_is_OBJECT_NOT_FOUND() {
            MasterException e = fails(ErrorCode.OBJECT_NOT_FOUND, Status.Code.NOT_FOUND, () -> client.getMapping("t", "missing"));
            assertTrue(e.getMessage().contains("missing"), e.getMessage());
        }

        @Test
        void an_empty_key_is_INVALID_PARAMS() {
            State before = State.of(client.stats());
            MasterException e = fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT, () -> client.allocate("t", "", 100, false));
            assertTrue(e.getMessage().contains("key is empty"), e.getMessage());
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT, () -> client.getMapping("t", ""));
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT, () -> client.remove("t", ""));
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT, () -> client.exists("t", ""));
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT, () -> client.allocate("bad tenant", "k", 100, false));
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT, () -> client.allocate("t", "k", 0, false));
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT, () -> client.listKeys("t", "", -5, ""));
            assertEquals(before, State.of(client.stats()));
        }

        @Test
        void a_committed_key_without_overwrite_is_OBJECT_ALREADY_EXISTS() {
            fails(ErrorCode.OBJECT_ALREADY_EXISTS, Status.Code.ALREADY_EXISTS, () -> client.allocate("t", "present", 100, false));
        }

        @Test
        void a_key_in_flight_is_REPLICA_IS_NOT_READY() {
            fails(ErrorCode.REPLICA_IS_NOT_READY, Status.Code.FAILED_PRECONDITION, () -> client.getMapping("t", "in-flight"));
            fails(ErrorCode.REPLICA_IS_NOT_READY, Status.Code.FAILED_PRECONDITION, () -> client.allocate("t", "in-flight", 100, true));
        }

        @Test
        void a_free_with_another_allocations_descriptor_is_INVALID_PARAMS_and_keeps_the_allocation() {
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT, () -> client.free("t", "in-flight", committed));
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT,
                    () -> client.free("t", "in-flight", committed.toBuilder().setFilePath("/elsewhere/bucket_00.data").build()));
            assertEquals(1, client.stats().getInFlightAllocations());
            client.free("t", "in-flight", null);
            assertEquals(0, client.stats().getInFlightAllocations());
        }

        @Test
        void remove_and_get_replica_list_of_a_missing_key_are_OBJECT_NOT_FOUND() {
            fails(ErrorCode.OBJECT_NOT_FOUND, Status.Code.NOT_FOUND, () -> client.remove("t", "missing"));
            fails(ErrorCode.OBJECT_NOT_FOUND, Status.Code.NOT_FOUND, () -> client.replicaList("t", "missing"));
            fails(ErrorCode.OBJECT_NOT_FOUND, Status.Code.NOT_FOUND, () -> client.free("t", "missing", null));
        }
    }

    @Nested
    class Batch_calls_answer_per_key {

        @Test
        void a_full_batch_of_the_longest_keys_is_answered_per_key_not_refused_for_its_size() {
            // 10,000 keys of the longest allowed length: a request of about 41 MiB.
            List<String> keys = new java.util.ArrayList<>();
            for (int i = 0; i < BatchLimits.MAX_BATCH; i++) {
                String n = Integer.toString(i);
                keys.add(n + "k".repeat(io.mcctl.master.protocol.KeyRules.MAX_KEY_BYTES - n.length()));
            }
            keys.set(0, "present");
            var response = client.batchGetMapping(keys, java.util.Collections.nCopies(keys.size(), "t"));
            assertEquals(keys.size(), response.getResultsCount());
            assertEquals(ErrorCode.OK, response.getResults(0).getStatus().getError(), "the committed key");
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, response.getResults(keys.size() - 1).getStatus().getError());
        }

        @Test
        void one_bad_key_in_a_batch_of_three_fails_only_that_key() {
            List<AllocationResult> results = client.batchAllocate(List.of("b1", "", "b3"), List.of("t", "t", "t"),
                    List.of(100L, 100L, 100L), false).getResultsList();
            assertEquals(ErrorCode.OK, results.get(0).getStatus().getError());
            assertEquals(ErrorCode.INVALID_PARAMS, results.get(1).getStatus().getError());
            assertFalse(results.get(1).hasDistributedDisk());
            assertEquals(ErrorCode.OK, results.get(2).getStatus().getError());
            assertEquals(3, client.stats().getInFlightAllocations(), "in-flight, b1 and b3");

            List<KeyError> notified = client.notifySuccess(List.of("b1", "never-allocated", "b3"), List.of("t", "t", "t"),
                    List.of(results.get(0).getDistributedDisk(), results.get(0).getDistributedDisk(), results.get(2).getDistributedDisk()))
                    .getResultsList();
            assertEquals(List.of(ErrorCode.OK, ErrorCode.OBJECT_NOT_FOUND, ErrorCode.OK), notified.stream().map(KeyError::getError).toList());

            List<MappingResult> mappings = client.batchGetMapping(List.of("b1", "missing", "b3"), List.of("t", "t", "t")).getResultsList();
            assertEquals(ErrorCode.OK, mappings.get(0).getStatus().getError());
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, mappings.get(1).getStatus().getError());
            assertTrue(mappings.get(1).getStatus().getMessage().contains("missing"));
            assertEquals(ErrorCode.OK, mappings.get(2).getStatus().getError());

            BatchExistKeyResponse exist = client.batchExists(List.of("b1", "", "nope"), List.of("t", "t", "t"));
            assertEquals(List.of(true, false, false), exist.getExistsList());
            assertEquals(ErrorCode.INVALID_PARAMS, exist.getResults(1).getError());
            assertEquals(ErrorCode.OK, exist.getResults(2).getError());

            List<KeyError> removed = client.batchRemove(List.of("b1", "b1", "b3"), List.of("t", "t", "t")).getResultsList();
            assertEquals(List.of(ErrorCode.OK, ErrorCode.OBJECT_NOT_FOUND, ErrorCode.OK), removed.stream().map(KeyError::getError).toList());
        }

        @Test
        void batch_free_answers_per_key() {
            List<AllocationResult> results = client.batchAllocate(List.of("f1", "f2"), List.of("t", "t"), List.of(100L, 100L), false)
                    .getResultsList();
            List<KeyError> freed = client.batchFree(List.of("f1", "f2", "f3"), List.of("t", "t", "t"),
                    List.of(results.get(0).getDistributedDisk(), results.get(0).getDistributedDisk(), results.get(0).getDistributedDisk()))
                    .getResultsList();
            assertEquals(List.of(ErrorCode.OK, ErrorCode.INVALID_PARAMS, ErrorCode.OBJECT_NOT_FOUND), freed.stream().map(KeyError::getError).toList());
        }
    }

    @Nested
    class Mismatched_batch_lengths_fail_the_whole_call_and_change_nothing {

        @Test
        void allocate_with_fewer_tenants_or_sizes_than_keys() {
            State before = State.of(client.stats());
            MasterException tenants = fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT,
                    () -> client.batchAllocate(List.of("x1", "x2", "x3"), List.of("t", "t"), List.of(1L, 1L, 1L), false));
            assertTrue(tenants.getMessage().contains("3 keys but 2 tenant_ids"), tenants.getMessage());
            MasterException sizes = fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT,
                    () -> client.batchAllocate(List.of("x1", "x2"), List.of("t", "t"), List.of(1L), false));
            assertTrue(sizes.getMessage().contains("sizes"), sizes.getMessage());
            assertEquals(before, State.of(client.stats()));
            assertFalse(client.batchExists(List.of("x1", "x2", "x3"), List.of("t", "t", "t")).getExistsList().contains(true));
        }

        @Test
        void notify_free_get_remove_and_exist_with_mismatched_lengths() {
            State before = State.of(client.stats());
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT,
                    () -> client.notifySuccess(List.of("in-flight"), List.of("t"), List.of()));
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT,
                    () -> client.batchFree(List.of("in-flight", "x"), List.of("t", "t"), List.of(committed)));
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT,
                    () -> client.batchFree(List.of("in-flight"), List.of(), List.of()));
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT,
                    () -> client.batchGetMapping(List.of("present"), List.of("t", "t")));
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT,
                    () -> client.batchRemove(List.of("present", "in-flight"), List.of("t")));
            fails(ErrorCode.INVALID_PARAMS, Status.Code.INVALID_ARGUMENT,
                    () -> client.batchExists(List.of("present"), List.of()));
            assertEquals(before, State.of(client.stats()));
            assertTrue(client.exists("t", "present"));
        }
    }
}
