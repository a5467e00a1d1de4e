package io.mcctl.master.durability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.testkit.FileDamage;
import io.mcctl.testkit.StateFixture;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The starting master's snapshot load: records decoded without message objects, on several threads, straight into a
 * page service, must give what protobuf and the tools' record tables give.
 */
@Timeout(120)
class SnapshotLoadTest {

    static final long PAGE = 4096;
    static final BucketLayout LAYOUT = new BucketLayout(Path.of("/nonexistent/mcctl-snapshot-load"), 16, PAGE, 64L << 20);

    @TempDir
    Path dir;

    @Provide
    Arbitrary<String> names() {
        return Arbitraries.strings().all().ofMinLength(0).ofMaxLength(300); // any code point, longer than the scratch buffers
    }

    @Property(tries = 500)
    void the_direct_decoder_reads_what_protobuf_writes(@ForAll("names") String tenant, @ForAll("names") String key, @ForAll int bucket,
                                                         @ForAll long offset, @ForAll long size, @ForAll int crc, @ForAll boolean unknownFields)
            throws Exception {
        MappingRecord record = MappingRecord.newBuilder().setTenantId(tenant).setKey(key)
                .setPlacement(PlacementRecord.newBuilder().setBucket(bucket).setOffset(offset).setSize(size).setCrc32C(crc)).build();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        CodedOutputStream out = CodedOutputStream.newInstance(bytes);
        if (unknownFields) {
            // Fields a newer mcctl might add, of every wire type, before and after the known ones.
            out.writeUInt64(9, offset);
            out.writeFixed64(10, size);
            out.writeBytes(11, ByteString.copyFromUtf8(key));
            out.writeFixed32(12, crc);
        }
        out.flush();
        bytes.write(record.toByteArray());
        if (unknownFields) {
            CodedOutputStream tail = CodedOutputStream.newInstance(bytes);
            tail.writeUInt64(13, bucket & 0xffffffffL);
            tail.flush();
        }
        byte[] encoded = bytes.toByteArray();
        MappingRecord parsed = MappingRecord.parseFrom(encoded);
        ByteBuffer buffer = ByteBuffer.allocateDirect(encoded.length + 7).position(7);
        buffer.put(encoded);
        Object[] got = new Object[5];
        new MappingRecordDecoder().decode(buffer, 7, encoded.length, (scoped, b, o, s, c, pinned, hashes) -> {
            got[0] = scoped;
            got[1] = b;
            got[2] = o;
            got[3] = s;
            got[4] = c;
        });
        assertEquals(StateRecovery.scoped(parsed.getTenantId(), parsed.getKey()), got[0]);
        assertEquals(parsed.getPlacement().getBucket(), got[1]);
        assertEquals(parsed.getPlacement().getOffset(), got[2]);
        assertEquals(parsed.getPlacement().getSize(), got[3]);
        assertEquals(parsed.getPlacement().getCrc32C(), got[4]);
    }

    /** The MAPPINGS section of a snapshot holding one record, written one way or the other. */
    SnapshotFile.SectionInfo oneMappingSection(Path into, MappingRecord record, boolean fromFields) throws Exception {
        java.nio.file.Files.createDirectories(into);
        try (SnapshotFile.Writer writer = new SnapshotFile.Writer(into, 1)) {
            writer.beginSection(SnapshotFile.Section.MAPPINGS);
            if (fromFields) {
                PlacementRecord p = record.getPlacement();
                writer.addMapping(StateRecovery.scoped(record.getTenantId(), record.getKey()), p.getBucket(), p.getOffset(), p.getSize(), p.getCrc32C());
            } else {
                writer.add(record);
            }
            writer.beginSection(SnapshotFile.Section.META);
            writer.add(SnapshotMeta.newBuilder().setFormatVersion(SnapshotFile.FORMAT_VERSION).build());
            return SnapshotFile.open(writer.finish()).info(SnapshotFile.Section.MAPPINGS);
        }
    }

    @Property(tries = 150)
    void a_mapping_written_from_its_fields_has_the_bytes_protobuf_writes(@ForAll("names") String tenant, @ForAll("names") String key,
                                                                          @ForAll int bucket, @ForAll long offset, @ForAll long size, @ForAll int crc)
            throws Exception {
        MappingRecord record = MappingRecord.newBuilder().setTenantId(tenant.replace('\0', 'x')).setKey(key)
                .setPlacement(PlacementRecord.newBuilder().setBucket(bucket).setOffset(offset).setSize(size).setCrc32C(crc)).build();
        Path base = java.nio.file.Files.createTempDirectory("mcctl-snapshot-load"); // jqwik tries get no @TempDir
        try {
            SnapshotFile.SectionInfo fromFields = oneMappingSection(base.resolve("fields"), record, true);
            SnapshotFile.SectionInfo fromRecord = oneMappingSection(base.resolve("record"), record, false);
            assertEquals(fromRecord.length(), fromFields.length());
            assertEquals(fromRecord.crc32c(), fromFields.crc32c(), "same bytes");
        } finally {
            try (var files = java.nio.file.Files.walk(base)) {
                for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    java.nio.file.Files.delete(p);
                }
            }
        }
    }

    @Test
    void a_truncated_record_is_an_error_not_a_guess() {
        byte[] encoded = MappingRecord.newBuilder().setTenantId("t").setKey("key")
                .setPlacement(PlacementRecord.newBuilder().setBucket(1).setOffset(4096).setSize(10)).build().toByteArray();
        ByteBuffer buffer = ByteBuffer.wrap(encoded);
        for (int cut = 1; cut < encoded.length; cut++) {
            int length = encoded.length - cut;
            MappingRecordDecoder decoder = new MappingRecordDecoder();
            try {
                decoder.decode(buffer, 0, length, (scoped, b, o, s, c, pinned, hashes) -> { });
                // Cutting exactly at a field boundary leaves a shorter, valid record: that is all protobuf could tell too.
                MappingRecord.parseFrom(ByteBuffer.wrap(encoded, 0, length));
            } catch (com.google.protobuf.InvalidProtocolBufferException expected) {
                assertThrows(com.google.protobuf.InvalidProtocolBufferException.class, () -> MappingRecord.parseFrom(ByteBuffer.wrap(encoded, 0, length)),
                        "cut " + cut + ": protobuf reads what the direct decoder refused");
            }
        }
    }

    /** A snapshot of {@code count} one-page mappings, page i of bucket i % 16. */
    Path snapshot(int count, long sequence) throws Exception {
        try (SnapshotFile.Writer writer = new SnapshotFile.Writer(dir, sequence)) {
            writer.beginSection(SnapshotFile.Section.MAPPINGS);
            for (int i = 0; i < count; i++) {
                writer.add(MappingRecord.newBuilder().setTenantId("tenant-" + (i % 3)).setKey("key-" + i + "-é")
                        .setPlacement(PlacementRecord.newBuilder().setBucket(i % 16).setOffset((i / 16) * PAGE).setSize(PAGE - i % 100).setCrc32C(i * 31))
                        .build());
            }
            writer.beginSection(SnapshotFile.Section.PENDING);
            writer.beginSection(SnapshotFile.Section.QUARANTINE);
            writer.beginSection(SnapshotFile.Section.META);
            writer.add(SnapshotMeta.newBuilder().setFormatVersion(SnapshotFile.FORMAT_VERSION).setClusterId("load").setRootDir(LAYOUT.root().toString())
                    .setBucketCount(LAYOUT.bucketCount()).setPageSize(PAGE).setBucketSize(LAYOUT.bucketSize()).setWalSequence(sequence)
                    .setMappings(count).build());
            return writer.finish();
        }
    }

    @Test
    void a_snapshot_read_on_several_threads_into_a_page_service_holds_exactly_the_records() throws Exception {
        int count = (int) (3 * SnapshotFile.PARALLEL_MIN_RECORDS + 123); // three shares, one of them uneven
        Path file = snapshot(count, 5);
        Map<String, MappingRecord> records = records(SnapshotFile.open(file));
        PageService pages = PageService.builder(LAYOUT).allocationDeadline(Duration.ofSeconds(60)).readLease(Duration.ofSeconds(5)).build();
        SnapshotFile.Reader reader = SnapshotFile.open(file);
        assertEquals(3, reader.readShares(SnapshotFile.Section.MAPPINGS, 3, i -> (SnapshotFile.RawRecordVisitor) (b, o, l) -> { }).size());
        StateRecovery.loadMappings(reader, pages.restorer());
        pages.restorer().finish();

        assertEquals(count, records.size());
        assertEquals(count, pages.mappingCount());
        for (Map.Entry<String, MappingRecord> e : records.entrySet()) {
            PlacementRecord want = e.getValue().getPlacement();
            String[] parts = e.getKey().split("\0", 2);
            Placement got = pages.peek(parts[0], parts[1]).value();
            assertEquals(new Placement(want.getBucket(), want.getOffset(), want.getSize(), want.getCrc32C()), got, e.getKey());
        }
        assertEquals(count, pages.stats().pagesAllocated());
    }

    @Test
    void a_section_too_large_to_map_is_streamed_into_the_same_state() throws Exception {
        int count = 5_000;
        Path file = snapshot(count, 7);
        Map<String, MappingRecord> mapped = records(SnapshotFile.open(file));
        Map<String, MappingRecord> streamed = records(SnapshotFile.open(file).mappingAtMost(0));
        assertEquals(mapped, streamed);
        PageService pages = PageService.builder(LAYOUT).allocationDeadline(Duration.ofSeconds(60)).readLease(Duration.ofSeconds(5)).build();
        StateRecovery.loadMappings(SnapshotFile.open(file).mappingAtMost(0), pages.restorer());
        pages.restorer().finish();
        assertEquals(count, pages.mappingCount());
        for (Map.Entry<String, MappingRecord> e : mapped.entrySet()) {
            PlacementRecord want = e.getValue().getPlacement();
            assertEquals(new Placement(want.getBucket(), want.getOffset(), want.getSize(), want.getCrc32C()),
                    pages.peek(e.getValue().getTenantId(), e.getValue().getKey()).value());
        }
        FileDamage.invertByte(file, SnapshotFile.open(file).info(SnapshotFile.Section.MAPPINGS).offset() + 3);
        assertThrows(CorruptStateException.class, () -> records(SnapshotFile.open(file).mappingAtMost(0)));
    }

    @Test
    void a_corrupt_record_in_a_later_share_is_reported_with_its_file_offset() throws Exception {
        int count = (int) (2 * SnapshotFile.PARALLEL_MIN_RECORDS + 10);
        Path file = snapshot(count, 6);
        SnapshotFile.SectionInfo mappings = SnapshotFile.open(file).info(SnapshotFile.Section.MAPPINGS);
        long target = mappings.offset() + mappings.length() - 40; // inside one of the last records
        FileDamage.invertByte(file, target);
        PageService pages = PageService.builder(LAYOUT).allocationDeadline(Duration.ofSeconds(60)).readLease(Duration.ofSeconds(5)).build();
        CorruptStateException e = assertThrows(CorruptStateException.class, () -> StateRecovery.loadMappings(SnapshotFile.open(file), pages.restorer()));
        assertEquals(file, e.file());
        assertTrue(e.getMessage().contains("MAPPINGS"), e.getMessage());
    }

    /** A snapshot's mappings as records by scoped key, read by protobuf's own parser. */
    static Map<String, MappingRecord> records(SnapshotFile.Reader reader) throws java.io.IOException {
        Map<String, MappingRecord> out = new java.util.HashMap<>();
        reader.read(SnapshotFile.Section.MAPPINGS, MappingRecord.parser(), m -> out.put(StateRecovery.scoped(m.getTenantId(), m.getKey()), m));
        return out;
    }
}
