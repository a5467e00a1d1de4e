package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.proto.v1.AllocateDistributedPageRequest;
import io.mcctl.master.proto.v1.DropInFlightAllocationRequest;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.FreeDistributedPageRequest;
import io.mcctl.master.proto.v1.GetDistributedPageMappingRequest;
import io.mcctl.master.proto.v1.GetReplicaListRequest;
import io.mcctl.master.proto.v1.ListKeysRequest;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.proto.v1.RemoveRequest;
import io.mcctl.master.protocol.KeyRules;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every unary call whose error quotes the key, with the longest keys allowed, over real gRPC: a stock client (grpc-java's
 * 8 KiB header limit) gets the call's error code, with the key shortened in the message and its length given, never a
 * protocol error. The longest key percent-encodes to 24 KiB in a trailer when quoted whole.
 */
@Timeout(60)
class LongValueErrorsTest {

    static final String ACCENTED = "é".repeat(KeyRules.MAX_KEY_BYTES / 2);
    static final String ASCII = "k".repeat(KeyRules.MAX_KEY_BYTES);

    @TempDir
    Path root;
    TierCluster cluster;
    ManagedChannel channel;
    MasterServiceGrpc.MasterServiceBlockingStub stub;

    @BeforeEach
    void start() throws Exception {
        cluster = TierCluster.start(root, 8, 0);
        channel = ManagedChannelBuilder.forTarget(cluster.target()).usePlaintext().build();
        stub = MasterServiceGrpc.newBlockingStub(channel);
    }

    @AfterEach
    void stop() {
        channel.shutdownNow();
        cluster.close();
    }

    MasterServiceGrpc.MasterServiceBlockingStub call() {
        return stub.withDeadlineAfter(10, TimeUnit.SECONDS);
    }

    /** The call fails with {@code code}, as status and trailer, and a message that names the value by its beginning and length. */
    static void failsWith(ErrorCode code, Executable call, String value) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, call);
        assertEquals(WireErrors.statusOf(code), e.getStatus().getCode(), e::toString);
        assertEquals(code, WireErrors.codeOf(e), e::toString);
        String description = e.getStatus().getDescription();
        assertTrue(description.contains(value.substring(0, 16)), description);
        assertTrue(description.contains("(" + value.getBytes(StandardCharsets.UTF_8).length + " bytes)"), description);
        assertTrue(description.length() < 400, "the message quotes the whole value: " + description.length() + " characters");
    }

    /** Bytes of {@code description} in the grpc-message trailer: printable ASCII but '%' as is, every other byte as %XX. */
    static int percentEncoded(String description) {
        int bytes = 0;
        for (byte b : description.getBytes(StandardCharsets.UTF_8)) {
            bytes += b >= 0x20 && b < 0x7f && b != '%' ? 1 : 3;
        }
        return bytes;
    }

    @Test
    void every_unary_call_that_quotes_a_key_answers_its_code_for_the_longest_keys() {
        for (String key : List.of(ACCENTED, ASCII)) {
            assertEquals(KeyRules.MAX_KEY_BYTES, key.getBytes(StandardCharsets.UTF_8).length);
            failsWith(ErrorCode.OBJECT_NOT_FOUND, () -> call().getDistributedPageMapping(GetDistributedPageMappingRequest.newBuilder()
                    .setTenantId("t").setKey(key).build()), key);
            failsWith(ErrorCode.OBJECT_NOT_FOUND, () -> call().remove(RemoveRequest.newBuilder().setTenantId("t").setKey(key).build()), key);
            failsWith(ErrorCode.OBJECT_NOT_FOUND, () -> call().getReplicaList(GetReplicaListRequest.newBuilder().setTenantId("t").setKey(key)
                    .build()), key);
            failsWith(ErrorCode.OBJECT_NOT_FOUND, () -> call().freeDistributedPage(FreeDistributedPageRequest.newBuilder().setTenantId("t")
                    .setKey(key).build()), key);
            failsWith(ErrorCode.OBJECT_NOT_FOUND, () -> call().dropInFlightAllocation(DropInFlightAllocationRequest.newBuilder()
                    .setTenantId("t").setKey(key).build()), key);
            AllocateDistributedPageRequest allocate = AllocateDistributedPageRequest.newBuilder().setTenantId("t").setKey(key).setSize(100).build();
            call().allocateDistributedPage(allocate);
            failsWith(ErrorCode.REPLICA_IS_NOT_READY, () -> call().allocateDistributedPage(allocate), key);
            failsWith(ErrorCode.REPLICA_IS_NOT_READY, () -> call().getDistributedPageMapping(GetDistributedPageMappingRequest.newBuilder()
                    .setTenantId("t").setKey(key).build()), key);
        }
    }

    @Test
    void a_page_token_of_thousands_of_characters_is_invalid_params_naming_it_by_its_start_and_length() {
        for (String token : List.of("x".repeat(8_000), "é".repeat(8_000))) {
            failsWith(ErrorCode.INVALID_PARAMS, () -> call().listKeys(ListKeysRequest.newBuilder().setTenantId("t").setPageToken(token).build()),
                    token);
        }
    }

    @Test
    void a_message_longer_than_any_quoting_foresees_is_cut_to_what_a_trailer_carries() {
        String description = "INVALID_PARAMS: " + "é".repeat(10_000);
        String bounded = WireErrors.bounded(description);
        assertTrue(bounded.startsWith("INVALID_PARAMS: éé"), bounded);
        assertTrue(bounded.endsWith("… (message of " + description.length() + " characters shortened)"), bounded);
        assertTrue(percentEncoded(bounded) <= WireErrors.MAX_DESCRIPTION_BYTES, percentEncoded(bounded) + " bytes: " + bounded);
        String fits = "NOT_FOUND: " + "k".repeat(500);
        assertEquals(fits, WireErrors.bounded(fits));
        assertEquals(Status.Code.INVALID_ARGUMENT, WireErrors.exception(ErrorCode.INVALID_PARAMS, "é".repeat(10_000)).getStatus().getCode());
    }
}
