package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.protocol.PackedPlacements;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.master.protocol.Placement;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** A lookup answered packed says, key for key, what the same lookup answers as one message per key. */
@Timeout(60)
class PackedLookupTest {

    @TempDir
    Path root;
    TierCluster cluster;
    MasterClient writer;

    @BeforeEach
    void start() throws IOException {
        cluster = TierCluster.start(root, 8, 0);
        writer = cluster.newClient();
        for (int i = 0; i < 40; i++) {
            commit("t", "key-" + i, 1000 + 4096L * i, 0x1000_0000 + i * 7919);
        }
        commit("other", "key-0", 5000, 99);
        writer.allocate("t", "in-flight", 100, false);
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    private void commit(String tenant, String key, long size, int crc) {
        DistributedDiskDescriptor allocated = writer.allocate(tenant, key, size, false).getDistributedDisk();
        assertEquals(ErrorCode.OK, writer.notifySuccess(List.of(key), List.of(tenant),
                List.of(allocated.toBuilder().setCrc32C(crc).build())).getResults(0).getError());
    }

    @ParameterizedTest
    @EnumSource(MasterClient.Transport.class)
    void every_key_has_the_placement_or_the_error_the_unpacked_answer_gives(MasterClient.Transport transport) {
        List<String> keys = new ArrayList<>();
        for (int i = 39; i >= 0; i -= 3) {
            keys.add("key-" + i);
        }
        keys.addAll(List.of("missing", "in-flight", "", "key-1", "x".repeat(5000)));
        List<String> tenants = new ArrayList<>(Collections.nCopies(keys.size(), "t"));
        keys.add("key-3");
        tenants.add("other"); // another tenant's wall: not found there
        keys.add("key-0");
        tenants.add("other");
        try (MasterClient client = new MasterClient(cluster.target(), Duration.ofSeconds(10), ClientSecurity.NONE, transport)) {
            BatchGetDistributedPageMappingResponse plain = client.batchGetMapping(keys, tenants);
            BatchGetDistributedPageMappingResponse packed = client.batchGetMappingPacked(keys, tenants);
            assertEquals(0, packed.getResultsCount(), "no message per key");
            assertEquals(plain.getLeaseMs(), packed.getLeaseMs());
            PackedPlacements placements = PackedPlacements.of(packed.getPlacements(), keys.size());
            assertEquals(keys.size(), placements.count());
            int found = 0;
            for (int i = 0; i < keys.size(); i++) {
                MappingResult expected = plain.getResults(i);
                ErrorCode code = expected.getStatus().getError();
                assertEquals(code, placements.error(i), "key " + i + " " + keys.get(i));
                if (code == ErrorCode.OK) {
                    DistributedDiskDescriptor d = expected.getDistributedDisk();
                    assertEquals(new Placement(d.getBucket(), d.getOffset(), d.getObjectSize(), d.getCrc32C()), placements.placement(i));
                    assertFalse(packed.containsErrors(i));
                    found++;
                } else if (code == ErrorCode.OBJECT_NOT_FOUND) {
                    assertFalse(packed.containsErrors(i), "a miss carries its code alone");
                } else {
                    assertEquals(expected.getStatus(), packed.getErrorsOrThrow(i), "key " + i);
                }
            }
            assertEquals(16, found, "14 of tenant t, one of them twice, and key-0 of the other tenant");
            assertEquals(ErrorCode.REPLICA_IS_NOT_READY, placements.error(keys.indexOf("in-flight")));
            assertEquals(ErrorCode.INVALID_PARAMS, placements.error(keys.indexOf("")));
            assertEquals(ErrorCode.OBJECT_NOT_FOUND, placements.error(keys.size() - 2));
            assertEquals(3, packed.getErrorsCount(), "in flight, empty and oversized keys");
            assertTrue(packed.getMemoryMap().isEmpty());
        }
    }

    @Test
    void the_crc_keeps_all_32_bits_and_offsets_their_64() {
        commit("t", "high-crc", 10, 0xFFFF_FFFE);
        BatchGetDistributedPageMappingResponse packed = writer.batchGetMappingPacked(List.of("high-crc"), List.of("t"));
        Placement placement = PackedPlacements.of(packed.getPlacements(), 1).placement(0);
        assertEquals(0xFFFF_FFFE, placement.crc32c());
        assertEquals(writer.batchGetMapping(List.of("high-crc"), List.of("t")).getResults(0).getDistributedDisk().getOffset(),
                placement.offset());
    }

    @Test
    void an_answer_without_a_record_per_key_is_refused() {
        BatchGetDistributedPageMappingResponse plain = writer.batchGetMapping(List.of("key-1", "key-2"), List.of("t", "t"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PackedPlacements.of(plain.getPlacements(), 2));
        assertTrue(e.getMessage().contains("0 bytes for 2 keys"), e.getMessage());
    }
}
