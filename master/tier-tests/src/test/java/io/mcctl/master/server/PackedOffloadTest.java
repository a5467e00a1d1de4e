package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.mcctl.master.protocol.PackedPlacements;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KeyError;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessResponse;
import io.mcctl.master.protocol.Placement;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * An offload cycle answered and notified packed gives every key the outcome the same cycle gets with one message per
 * key, and a packed notify that does not hold one record per key commits nothing.
 */
@Timeout(60)
class PackedOffloadTest {

    @TempDir
    Path root;
    TierCluster cluster;
    MasterClient writer;

    @BeforeEach
    void start() throws IOException {
        cluster = TierCluster.start(root, 8, 0);
        writer = cluster.newClient();
        DistributedDiskDescriptor committed = writer.allocate("t", "committed", 100, false).getDistributedDisk();
        assertEquals(ErrorCode.OK, writer.notifySuccess(List.of("committed"), List.of("t"), List.of(committed)).getResults(0).getError());
        writer.allocate("t", "in-flight", 100, false);
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    /** A batch of fresh keys (named after {@code prefix}) among keys that fail the same way whoever asks. */
    private static List<String> batch(String prefix) {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            keys.add(prefix + "-" + i);
        }
        keys.addAll(List.of("committed", "in-flight", "", "x".repeat(5000), prefix + "-too-big", prefix + "-empty"));
        return keys;
    }

    private List<Long> sizes(List<String> keys) {
        List<Long> sizes = new ArrayList<>();
        for (String key : keys) {
            sizes.add(key.endsWith("-too-big") ? cluster.layout().bucketSize() * 2 : key.endsWith("-empty") ? -1L : 4096L + keys.indexOf(key));
        }
        return sizes;
    }

    private static List<String> tenants(List<String> keys) {
        return Collections.nCopies(keys.size(), "t");
    }

    @ParameterizedTest
    @EnumSource(MasterClient.Transport.class)
    void every_key_is_allocated_and_committed_or_refused_as_the_unpacked_cycle_does(MasterClient.Transport transport) {
        try (MasterClient client = new MasterClient(cluster.target(), Duration.ofSeconds(10), ClientSecurity.NONE, transport)) {
            List<String> plainKeys = batch("plain");
            List<String> packedKeys = batch("packed");
            BatchAllocateDistributedPageResponse plain = client.batchAllocate(plainKeys, tenants(plainKeys), sizes(plainKeys), false, false);
            BatchAllocateDistributedPageResponse packed = client.batchAllocatePacked(packedKeys, tenants(packedKeys), sizes(packedKeys), false, false);
            assertEquals(0, packed.getResultsCount(), "no message per key");
            assertEquals(plain.getDeadlineMs(), packed.getDeadlineMs());
            PackedPlacements placements = PackedPlacements.of(packed.getPlacements(), packedKeys.size());
            Set<ErrorCode> refusals = EnumSet.noneOf(ErrorCode.class);
            List<DistributedDiskDescriptor> plainPlaces = new ArrayList<>();
            List<String> plainOk = new ArrayList<>();
            List<String> packedOk = new ArrayList<>();
            PackedPlacements toNotify = PackedPlacements.forKeys(6);
            for (int i = 0; i < packedKeys.size(); i++) {
                AllocationResult expected = plain.getResults(i);
                ErrorCode code = expected.getStatus().getError();
                assertEquals(code, placements.error(i), "key " + i);
                if (code == ErrorCode.OK) {
                    DistributedDiskDescriptor d = expected.getDistributedDisk();
                    Placement place = placements.placement(i);
                    assertEquals(d.getObjectSize(), place.size());
                    assertEquals(0, place.crc32c(), "nothing is written yet");
                    assertTrue(place.bucket() >= 0 && place.bucket() < cluster.layout().bucketCount(), "bucket " + place.bucket());
                    assertFalse(packed.containsErrors(i));
                    plainOk.add(plainKeys.get(i));
                    plainPlaces.add(d.toBuilder().setCrc32C(1000 + i).build());
                    toNotify.place(packedOk.size(), place.withCrc(1000 + i));
                    packedOk.add(packedKeys.get(i));
                } else {
                    refusals.add(code);
                    assertEquals(expected.getStatus(), packed.getErrorsOrThrow(i), "key " + i + ": the same code, message and retry hint");
                }
            }
            assertEquals(6, packedOk.size());
            assertEquals(packedKeys.size() - 6, packed.getErrorsCount(), "every refused key has its KeyError");
            assertTrue(refusals.size() >= 3, "the batch meets several kinds of refusal: " + refusals);

            NotifyDistributedDiskSuccessResponse plainNotified = client.notifySuccess(plainOk, tenants(plainOk), plainPlaces);
            NotifyDistributedDiskSuccessResponse packedNotified = client.notifySuccessPacked(packedOk, tenants(packedOk), toNotify.toByteString());
            assertEquals(0, packedNotified.getResultsCount());
            for (KeyError r : plainNotified.getResultsList()) {
                assertEquals(ErrorCode.OK, r.getError());
            }
            assertEquals(0, packedNotified.getErrorsCount(), "every key committed: nothing to say");
            List<MappingResult> found = client.batchGetMapping(packedOk, tenants(packedOk)).getResultsList();
            for (int k = 0; k < packedOk.size(); k++) {
                assertEquals(ErrorCode.OK, found.get(k).getStatus().getError(), packedOk.get(k));
                assertEquals(toNotify.placement(k).crc32c(), found.get(k).getDistributedDisk().getCrc32C(), "the CRC32C notified is the one kept");
            }
        }
    }

    @Test
    void a_wrong_record_fails_its_key_alone_as_a_wrong_descriptor_does() {
        List<String> keys = List.of("a", "b", "c", "d");
        List<Long> sizes = List.of(100L, 200L, 300L, 400L);
        PackedPlacements packed = PackedPlacements.of(writer.batchAllocatePacked(keys, tenants(keys), sizes, false, false).getPlacements(), 4);
        PackedPlacements sent = PackedPlacements.forKeys(4);
        for (int k = 0; k < 4; k++) {
            sent.place(k, packed.placement(k));
        }
        Placement b = packed.placement(1);
        sent.place(1, new Placement(b.bucket(), b.offset() + 4096, b.size(), 0)); // not where it was allocated
        sent.place(2, new Placement(cluster.layout().bucketCount() + 3, 0, 300, 0)); // no such bucket
        sent.miss(3, ErrorCode.OBJECT_NOT_FOUND); // a miss sent back as if it were a placement
        NotifyDistributedDiskSuccessResponse notified = writer.notifySuccessPacked(keys, tenants(keys), sent.toByteString());
        assertEquals(Set.of(1, 2, 3), notified.getErrorsMap().keySet());

        // The same wrong place as a descriptor: the same refusal.
        DistributedDiskDescriptor wrong = DistributedDiskDescriptor.newBuilder().setBucket(b.bucket())
                .setFilePath(cluster.layout().root() + "/unused").setOffset(b.offset() + 4096).setObjectSize(b.size()).build();
        writer.allocate("t", "e", 200, false);
        KeyError plain = writer.notifySuccess(List.of("e"), List.of("t"), List.of(wrong)).getResults(0);
        assertNotEquals(ErrorCode.OK, plain.getError());
        assertEquals(plain.getError(), notified.getErrorsOrThrow(1).getError());

        List<MappingResult> found = writer.batchGetMapping(keys, tenants(keys)).getResultsList();
        assertEquals(ErrorCode.OK, found.get(0).getStatus().getError(), "the right record committed its key");
        for (int k = 1; k < 4; k++) {
            assertEquals(ErrorCode.REPLICA_IS_NOT_READY, found.get(k).getStatus().getError(), "key " + keys.get(k) + " still in flight");
        }
        // Sent right, the rest commit.
        PackedPlacements right = PackedPlacements.forKeys(3);
        for (int k = 1; k < 4; k++) {
            right.place(k - 1, packed.placement(k));
        }
        assertEquals(0, writer.notifySuccessPacked(keys.subList(1, 4), tenants(keys).subList(1, 4), right.toByteString()).getErrorsCount());
    }

    @ParameterizedTest
    @EnumSource(MasterClient.Transport.class)
    void placements_of_the_wrong_length_or_beside_descriptors_commit_nothing(MasterClient.Transport transport) {
        try (MasterClient client = new MasterClient(cluster.target(), Duration.ofSeconds(10), ClientSecurity.NONE, transport)) {
            List<String> keys = List.of("a", "b");
            PackedPlacements packed = PackedPlacements.of(client.batchAllocatePacked(keys, tenants(keys), List.of(10L, 20L), false, false)
                    .getPlacements(), 2);
            ByteString records = packed.toByteString();
            MasterException shortOne = assertThrows(MasterException.class,
                    () -> client.notifySuccessPacked(keys, tenants(keys), records.substring(0, 47)));
            assertEquals(ErrorCode.INVALID_PARAMS, shortOne.code());
            assertTrue(shortOne.getMessage().contains("notify of 2 keys sends 47 bytes of placements: expected 24 bytes a key"),
                    shortOne.getMessage());

            io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessRequest both = io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessRequest
                    .newBuilder().addAllKeys(keys).addAllTenantIds(tenants(keys)).setPlacements(records)
                    .addDescriptors(DistributedDiskDescriptor.newBuilder().setBucket(0)).addDescriptors(DistributedDiskDescriptor.newBuilder().setBucket(0))
                    .build();
            io.grpc.ManagedChannel channel = io.grpc.ManagedChannelBuilder.forTarget(cluster.target()).usePlaintext().build();
            try {
                io.grpc.StatusRuntimeException twice = assertThrows(io.grpc.StatusRuntimeException.class,
                        () -> io.mcctl.master.proto.v1.MasterServiceGrpc.newBlockingStub(channel).notifyDistributedDiskSuccess(both));
                assertEquals(io.grpc.Status.Code.INVALID_ARGUMENT, twice.getStatus().getCode());
                assertTrue(twice.getStatus().getDescription().contains("notify sends both 2 descriptors and packed placements: send one of them"),
                        twice.getStatus().getDescription());
            } finally {
                channel.shutdownNow();
            }

            for (MappingResult r : client.batchGetMapping(keys, tenants(keys)).getResultsList()) {
                assertEquals(ErrorCode.REPLICA_IS_NOT_READY, r.getStatus().getError(), "nothing committed");
            }
            assertEquals(0, client.notifySuccessPacked(keys, tenants(keys), records).getErrorsCount());
        }
    }
}
