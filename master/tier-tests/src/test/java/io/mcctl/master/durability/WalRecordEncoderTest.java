package io.mcctl.master.durability;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.mcctl.testkit.PropertyTimeout;
import io.mcctl.master.proto.v1.Allocated;
import io.mcctl.master.proto.v1.Committed;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.WalRecord;
import io.mcctl.master.service.Change;
import io.mcctl.master.service.ChangeLog;
import io.mcctl.master.protocol.Placement;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The log's hand-encoded records give the very bytes protobuf gives for the same record built with its
 * builders: for any field values, including empty and non-ASCII strings, unpaired surrogates, zero and
 * negative numbers; and such records read back through the log as the records they stand for.
 */
@Timeout(60)
@AddLifecycleHook(PropertyTimeout.class)
class WalRecordEncoderTest {

    @Provide
    Arbitrary<String> strings() {
        return Arbitraries.oneOf(
                Arbitraries.strings().ascii().ofMaxLength(200),
                Arbitraries.strings().all().ofMaxLength(200), // any code point, unpaired surrogates too
                Arbitraries.just(""));
    }

    @Provide
    Arbitrary<Long> longs() {
        return Arbitraries.oneOf(Arbitraries.longs(), Arbitraries.longs().between(0, 1L << 40), Arbitraries.of(0L, -1L, Long.MIN_VALUE, 127L, 128L));
    }

    @Provide
    Arbitrary<Placement> placements() {
        Arbitrary<Integer> ints = Arbitraries.oneOf(Arbitraries.integers(), Arbitraries.integers().between(0, 255), Arbitraries.of(0, -1));
        return Combinators.combine(ints, longs(), longs(), ints).as(Placement::new);
    }

    @Provide
    Arbitrary<Placement> maybePlacements() {
        return placements().injectNull(0.3);
    }

    static PlacementRecord record(Placement p) {
        return PlacementRecord.newBuilder().setBucket(p.bucket()).setOffset(p.offset()).setSize(p.size()).setCrc32C(p.crc32c()).build();
    }

    static byte[] encodedBy(int size, java.util.function.Consumer<ByteBuffer> put) {
        ByteBuffer out = ByteBuffer.allocate(size + 16).order(ByteOrder.LITTLE_ENDIAN);
        put.accept(out);
        assertEquals(size, out.position(), "the size function and the bytes put agree");
        return Arrays.copyOf(out.array(), out.position());
    }

    @Property(tries = 1000)
    void an_allocated_record_is_encoded_as_protobuf_encodes_it(@ForAll("strings") String tenant, @ForAll("strings") String key,
                                                                @ForAll("placements") Placement placement, @ForAll("longs") long deadlineMs,
                                                                @ForAll boolean overwrite, @ForAll boolean pin) {
        PropertyTimeout.check();
        byte[] expected = WalRecord.newBuilder().setAllocated(Allocated.newBuilder().setTenantId(tenant).setKey(key)
                .setPlacement(record(placement)).setDeadlineMs(deadlineMs).setOverwrite(overwrite).setPin(pin)).build().toByteArray();
        byte[] actual = encodedBy(WalRecordEncoder.allocatedSize(tenant, key, placement, deadlineMs, overwrite, pin),
                out -> WalRecordEncoder.putAllocated(out, tenant, key, placement, deadlineMs, overwrite, pin));
        assertArrayEquals(expected, actual);
    }

    @Property(tries = 1000)
    void a_committed_record_is_encoded_as_protobuf_encodes_it(@ForAll("strings") String tenant, @ForAll("strings") String key,
                                                               @ForAll("placements") Placement placement,
                                                               @ForAll("maybePlacements") Placement replaced, @ForAll("longs") long releaseMs,
                                                               @ForAll boolean pinned) {
        PropertyTimeout.check();
        Committed.Builder committed = Committed.newBuilder().setTenantId(tenant).setKey(key).setPlacement(record(placement)).setPinned(pinned);
        if (replaced != null) {
            committed.setReplaced(record(replaced)).setReplacedReleaseMs(releaseMs);
        }
        byte[] expected = WalRecord.newBuilder().setCommitted(committed).build().toByteArray();
        byte[] actual = encodedBy(WalRecordEncoder.committedSize(tenant, key, placement, replaced, releaseMs, pinned),
                out -> WalRecordEncoder.putCommitted(out, tenant, key, placement, replaced, releaseMs, pinned));
        assertArrayEquals(expected, actual);
    }

    @TempDir
    Path dir;

    @Test
    void records_logged_through_the_change_log_read_back_as_the_records_they_stand_for() throws Exception {
        Placement first = new Placement(7, 4096 * 3, 5000, 0);
        Placement written = first.withCrc(0xCAFEBABE);
        Placement older = new Placement(200, 0, 1, -5);
        List<WalRecord.Builder> expected = List.of(
                WalRecord.newBuilder().setAllocated(Allocated.newBuilder().setTenantId("t").setKey("ключ/1").setPlacement(record(first))
                        .setDeadlineMs(1_800_000_000_000L)),
                WalRecord.newBuilder().setCommitted(Committed.newBuilder().setTenantId("t").setKey("ключ/1").setPlacement(record(written))),
                WalRecord.newBuilder().setAllocated(Allocated.newBuilder().setTenantId("t").setKey("k2").setPlacement(record(first))
                        .setDeadlineMs(1).setOverwrite(true)),
                WalRecord.newBuilder().setCommitted(Committed.newBuilder().setTenantId("t").setKey("k2").setPlacement(record(written))
                        .setReplaced(record(older)).setReplacedReleaseMs(1_800_000_000_500L)),
                WalRecord.newBuilder().setRemoved(io.mcctl.master.proto.v1.Removed.newBuilder().setTenantId("t").setKey("gone")
                        .setPlacement(record(written)).setReleaseMs(5)));
        try (WriteAheadLog wal = new WriteAheadLog(dir, "test-cluster", 0, WriteAheadLogTest.BIG_SEGMENTS, () -> 1_700_000_000_000L)) {
            ChangeLog log = wal.changeLog();
            log.append(new Change.Allocated("t", "ключ/1", first, 1_800_000_000_000L, false));
            log.append(new Change.Committed("t", "ключ/1", written, null, 0));
            log.append(new Change.Allocated("t", "k2", first, 1, true));
            log.append(new Change.Committed("t", "k2", written, older, 1_800_000_000_500L));
            log.append(new Change.Removed("t", "gone", written, 5)); // the builder path, between hand-encoded records
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }
        List<WalRecord> read = new ArrayList<>();
        WalReader.read(dir, 0, false, (record, file, offset) -> read.add(record));
        assertEquals(expected.size(), read.size());
        for (int i = 0; i < expected.size(); i++) {
            assertEquals(expected.get(i).setSequence(i + 1).setTimeMs(1_700_000_000_000L).build(), read.get(i), "record " + (i + 1));
        }
    }

    @Test
    void a_record_refused_for_a_missing_field_leaves_nothing_in_the_log() throws Exception {
        Placement placement = new Placement(1, 0, 10, 0);
        try (WriteAheadLog wal = new WriteAheadLog(dir, "test-cluster", 0, WriteAheadLogTest.BIG_SEGMENTS, () -> 1_700_000_000_000L)) {
            wal.appendAllocated("t", "before", placement, 5, false, false);
            assertThrows(NullPointerException.class, () -> wal.appendAllocated("t", null, placement, 5, false, false));
            assertThrows(NullPointerException.class, () -> wal.appendCommitted(null, "k", placement, null, 0, false));
            assertEquals(2, wal.appendAllocated("t", "after", placement, 5, false, true), "no sequence was used up");
            wal.whenDurable().get(10, TimeUnit.SECONDS);
        }
        List<String> keys = new ArrayList<>();
        WalReader.read(dir, 0, false, (record, file, offset) -> keys.add(record.getAllocated().getKey()));
        assertEquals(List.of("before", "after"), keys);
    }
}
