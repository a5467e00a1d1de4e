package io.mcctl.tools.snapshot;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.MessageLite;
import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.SnapshotFile;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Reads the record sections of an opened snapshot through {@link SnapshotFile.Reader#read}, telling each
 * record's byte offset in the file, and checks section checksums on their own.
 */
public final class SnapshotRecords {

    /** Receives records in file order with where each one starts. */
    public interface Visitor {
        default void mapping(MappingRecord record, long offset) throws IOException {
        }

        default void pending(PendingRecord record, long offset) throws IOException {
        }

        default void quarantine(QuarantineRecord record, long offset) throws IOException {
        }
    }

    /** One section of the footer index and whether its bytes match its CRC32C. */
    public record SectionStatus(SnapshotFile.SectionInfo info, int actualCrc32c) {
        public boolean crcOk() {
            return actualCrc32c == info.crc32c();
        }
    }

    private SnapshotRecords() {
    }

    /**
     * Reads every record section, each to its end or its first problem, and returns the problems (one at
     * most per section); records before a problem have been visited.
     */
    public static List<Problem> readAll(SnapshotFile.Reader reader, Visitor visitor) throws IOException {
        List<Problem> problems = new ArrayList<>();
        read(problems, () -> readSection(reader, SnapshotFile.Section.MAPPINGS,
                MappingRecord.parser(), visitor::mapping));
        read(problems, () -> readSection(reader, SnapshotFile.Section.PENDING,
                PendingRecord.parser(), visitor::pending));
        read(problems, () -> readSection(reader, SnapshotFile.Section.QUARANTINE,
                QuarantineRecord.parser(), visitor::quarantine));
        return problems;
    }

    /** Reads every record section and throws at the first problem. */
    public static void readStrict(SnapshotFile.Reader reader, Visitor visitor) throws IOException {
        readSection(reader, SnapshotFile.Section.MAPPINGS, MappingRecord.parser(), visitor::mapping);
        readSection(reader, SnapshotFile.Section.PENDING, PendingRecord.parser(), visitor::pending);
        readSection(reader, SnapshotFile.Section.QUARANTINE, QuarantineRecord.parser(), visitor::quarantine);
    }

    private interface SectionRead {
        void run() throws IOException;
    }

    private static void read(List<Problem> problems, SectionRead read) throws IOException {
        try {
            read.run();
        } catch (CorruptStateException e) {
            problems.add(Problem.of(e));
        }
    }

    private interface OffsetVisitor<T> {
        void visit(T record, long offset) throws IOException;
    }

    private static <T extends MessageLite> void readSection(SnapshotFile.Reader reader, SnapshotFile.Section section,
                                                            com.google.protobuf.Parser<T> parser, OffsetVisitor<T> visitor) throws IOException {
        SnapshotFile.SectionInfo info = reader.info(section);
        long[] at = {info == null ? 0 : info.offset()};
        reader.read(section, parser, record -> {
            // The writer frames each record as a varint length and the record's canonical encoding.
            int size = record.getSerializedSize();
            visitor.visit(record, at[0]);
            at[0] += CodedOutputStream.computeUInt32SizeNoTag(size) + size;
        });
    }

    /** The footer index with each section's checksum computed from its bytes, independently of decoding. */
    public static List<SectionStatus> sectionStatus(SnapshotFile.Reader reader) throws IOException {
        List<SectionStatus> out = new ArrayList<>();
        try (FileChannel channel = FileChannel.open(reader.path(), StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocate(1 << 16);
            for (SnapshotFile.SectionInfo info : reader.sections()) {
                CRC32C crc = new CRC32C();
                long position = info.offset();
                long end = info.offset() + info.length();
                while (position < end) {
                    buffer.clear().limit((int) Math.min(buffer.capacity(), end - position));
                    int n = channel.read(buffer, position);
                    if (n < 0) {
                        throw new CorruptStateException(reader.path(), position, info.section() + " section runs past the end of the file");
                    }
                    buffer.flip();
                    crc.update(buffer);
                    position += n;
                }
                out.add(new SectionStatus(info, (int) crc.getValue()));
            }
        }
        return out;
    }

    /** Throws, naming the section and its offset, when any section's bytes fail their checksum. */
    public static void checkChecksums(SnapshotFile.Reader reader) throws IOException {
        for (SectionStatus status : sectionStatus(reader)) {
            if (!status.crcOk()) {
                throw new CorruptStateException(reader.path(), status.info().offset(), status.info().section() + " section fails its CRC32C");
            }
        }
    }

    /** The layout the snapshot's meta record describes; a meta record that describes none is corruption. */
    public static BucketLayout layout(SnapshotFile.Reader reader) throws CorruptStateException {
        SnapshotMeta meta = reader.meta();
        try {
            return new BucketLayout(Path.of(meta.getRootDir()), meta.getBucketCount(), meta.getPageSize(), meta.getBucketSize());
        } catch (IllegalArgumentException e) {
            SnapshotFile.SectionInfo info = reader.info(SnapshotFile.Section.META);
            throw new CorruptStateException(reader.path(), info == null ? 0 : info.offset(), "meta record has no valid layout: " + e.getMessage());
        }
    }
}
