package io.mcctl.master.durability;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.SnapshotMeta;
import io.mcctl.storage.io.DurableFiles;
import io.mcctl.storage.io.IoErrors;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import java.util.zip.CheckedInputStream;
import java.util.zip.CheckedOutputStream;

/**
 * A snapshot of master state on disk, {@code snapshot-<wal sequence, 20 digits>.snap}:
 * <pre>
 *   header   "MCCTLSNP" | int32 format version | int32 0
 *   sections each a run of varint-length-delimited protobuf records
 *   footer   per section: int32 type | int64 offset | int64 length | int64 records | int32 CRC32C
 *            int32 section count | int64 footer offset | "MCCTLEND"
 * </pre>
 * Little-endian integers. Sections: mappings, in-flight allocations, quarantine, then the meta record
 * (layout, settings, covered WAL sequence, creation time, counts). Written to a temp file, fsynced,
 * renamed, and the directory fsynced.
 */
public final class SnapshotFile {

    public static final int FORMAT_VERSION = 1;
    static final byte[] HEADER_MAGIC = "MCCTLSNP".getBytes(StandardCharsets.US_ASCII);
    static final byte[] FOOTER_MAGIC = "MCCTLEND".getBytes(StandardCharsets.US_ASCII);
    private static final Pattern NAME = Pattern.compile("snapshot-(\\d{20})\\.snap");
    /** A snapshot being written, or one whose writer was killed before it renamed the file. */
    private static final Pattern UNFINISHED = Pattern.compile("snapshot-\\d{20}\\.snap\\.tmp");
    private static final int TRAILER_BYTES = 4 + 8 + 8;
    private static final int INDEX_ENTRY_BYTES = 4 + 8 + 8 + 8 + 4;

    /** Section types, in file order. */
    public enum Section {
        MAPPINGS(1), PENDING(2), QUARANTINE(3), META(4);

        final int code;

        Section(int code) {
            this.code = code;
        }

        static Section of(int code) {
            for (Section s : values()) {
                if (s.code == code) {
                    return s;
                }
            }
            return null;
        }
    }

    /** One entry of the footer index. */
    public record SectionInfo(Section section, long offset, long length, long records, int crc32c) {
    }

    /** A snapshot file in a state directory. */
    public record Listed(Path path, long walSequence) {
    }

    private SnapshotFile() {
    }

    public static String fileName(long walSequence) {
        return String.format(Locale.ROOT, "snapshot-%020d.snap", walSequence);
    }

    /** The temp file a snapshot is written to before it is renamed to {@link #fileName}. */
    static String unfinishedFileName(long walSequence) {
        return fileName(walSequence) + ".tmp";
    }

    /** The temp files of snapshots in {@code dir} that are not finished: being written, or left by a killed writer. */
    public static List<Path> listUnfinished(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(file -> UNFINISHED.matcher(file.getFileName().toString()).matches()).sorted().toList();
        } catch (IOException e) {
            throw IoErrors.named("list state directory", dir, e);
        }
    }

    /** Snapshot files in {@code dir}, newest (highest covered sequence) first. */
    public static List<Listed> list(Path dir) throws IOException {
        List<Listed> found = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return found;
        }
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : files.toList()) {
                Matcher m = NAME.matcher(file.getFileName().toString());
                if (m.matches()) {
                    found.add(new Listed(file, Long.parseLong(m.group(1))));
                }
            }
        } catch (IOException e) {
            throw IoErrors.named("list state directory", dir, e);
        }
        found.sort((a, b) -> Long.compare(b.walSequence(), a.walSequence()));
        return found;
    }

    // ---- writing ----

    /** Streams sections into a snapshot file. Use once: sections in {@link Section} order, then {@link #finish}. */
    public static final class Writer implements AutoCloseable {
        private final Path target;
        private final Path temp;
        private final FileChannel channel;
        private final List<SectionInfo> index = new ArrayList<>();
        private long position;
        private Section open;
        private long openOffset;
        private long openRecords;
        private CRC32C openCrc;
        private CodedOutputStream coded;
        private CountingStream counting;
        private boolean finished;

        public Writer(Path dir, long walSequence) throws IOException {
            try {
                Files.createDirectories(dir);
            } catch (IOException e) {
                throw IoErrors.named("create state directory", dir, e);
            }
            this.target = dir.resolve(fileName(walSequence));
            this.temp = dir.resolve(unfinishedFileName(walSequence));
            try {
                this.channel = FileChannel.open(temp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
            } catch (IOException e) {
                throw IoErrors.named("create snapshot file", temp, e);
            }
            ByteBuffer header = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
            header.put(HEADER_MAGIC).putInt(FORMAT_VERSION).putInt(0).flip();
            try {
                writeAll(header);
            } catch (IOException | RuntimeException e) {
                close(); // no caller gets this writer to close: the temp file goes here (a full disk fails this early)
                throw e;
            }
        }

        public void beginSection(Section section) throws IOException {
            endSection();
            open = section;
            openOffset = position;
            openRecords = 0;
            openCrc = new CRC32C();
            counting = new CountingStream(new CheckedOutputStream(new BufferedOutputStream(Channels.newOutputStream(channel), 1 << 16), openCrc), temp);
            coded = CodedOutputStream.newInstance(counting, 1 << 16);
        }

        public void add(MessageLite record) throws IOException {
            coded.writeUInt32NoTag(record.getSerializedSize());
            record.writeTo(coded);
            openRecords++;
        }

        /**
         * Adds a {@code MappingRecord} from its fields, encoded as protobuf would encode the message (default values
         * left out), without building it: a snapshot writes a million of these.
         *
         * @param scopedKey tenant, NUL, key
         */
        public void addMapping(String scopedKey, int bucket, long offset, long size, int crc32c) throws IOException {
            addMapping(scopedKey, bucket, offset, size, crc32c, false);
        }

        /** {@link #addMapping(String, int, long, long, int)} with the soft pin (field 4, written only when set). */
        public void addMapping(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pinned) throws IOException {
            addMapping(scopedKey, bucket, offset, size, crc32c, pinned, null);
        }

        /** {@link #addMapping(String, int, long, long, int, boolean)} with the engine block hashes (field 5, packed; null: none). */
        public void addMapping(String scopedKey, int bucket, long offset, long size, int crc32c, boolean pinned, long[] blockHashes)
                throws IOException {
            byte[] utf8 = scopedKey.getBytes(StandardCharsets.UTF_8);
            int split = 0;
            while (split < utf8.length && utf8[split] != 0) {
                split++;
            }
            int tenantLength = split;
            int keyLength = Math.max(0, utf8.length - split - 1);
            int placementSize = (bucket != 0 ? CodedOutputStream.computeInt32Size(1, bucket) : 0)
                    + (offset != 0 ? CodedOutputStream.computeInt64Size(2, offset) : 0)
                    + (size != 0 ? CodedOutputStream.computeInt64Size(3, size) : 0)
                    + (crc32c != 0 ? CodedOutputStream.computeFixed32Size(4, crc32c) : 0);
            int recordSize = (tenantLength > 0 ? CodedOutputStream.computeTagSize(1) + CodedOutputStream.computeUInt32SizeNoTag(tenantLength) + tenantLength : 0)
                    + (keyLength > 0 ? CodedOutputStream.computeTagSize(2) + CodedOutputStream.computeUInt32SizeNoTag(keyLength) + keyLength : 0)
                    + CodedOutputStream.computeTagSize(3) + CodedOutputStream.computeUInt32SizeNoTag(placementSize) + placementSize
                    + (pinned ? CodedOutputStream.computeBoolSize(4, true) : 0);
            int hashBytes = blockHashes == null ? 0 : 8 * blockHashes.length;
            if (hashBytes > 0) {
                recordSize += CodedOutputStream.computeTagSize(5) + CodedOutputStream.computeUInt32SizeNoTag(hashBytes) + hashBytes;
            }
            coded.writeUInt32NoTag(recordSize);
            if (tenantLength > 0) {
                coded.writeByteArray(1, utf8, 0, tenantLength);
            }
            if (keyLength > 0) {
                coded.writeByteArray(2, utf8, split + 1, keyLength);
            }
            coded.writeTag(3, com.google.protobuf.WireFormat.WIRETYPE_LENGTH_DELIMITED);
            coded.writeUInt32NoTag(placementSize);
            if (bucket != 0) {
                coded.writeInt32(1, bucket);
            }
            if (offset != 0) {
                coded.writeInt64(2, offset);
            }
            if (size != 0) {
                coded.writeInt64(3, size);
            }
            if (crc32c != 0) {
                coded.writeFixed32(4, crc32c);
            }
            if (pinned) {
                coded.writeBool(4, true);
            }
            if (hashBytes > 0) {
                coded.writeTag(5, com.google.protobuf.WireFormat.WIRETYPE_LENGTH_DELIMITED);
                coded.writeUInt32NoTag(hashBytes);
                for (long h : blockHashes) {
                    coded.writeFixed64NoTag(h);
                }
            }
            openRecords++;
        }

        private void endSection() throws IOException {
            if (open == null) {
                return;
            }
            coded.flush();
            counting.flush();
            long length = counting.count;
            position += length;
            index.add(new SectionInfo(open, openOffset, length, openRecords, (int) openCrc.getValue()));
            open = null;
        }

        /** Writes the footer, fsyncs, renames into place and fsyncs the directory. */
        public Path finish() throws IOException {
            endSection();
            ByteBuffer footer = ByteBuffer.allocate(index.size() * INDEX_ENTRY_BYTES + TRAILER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
            long footerOffset = position;
            for (SectionInfo info : index) {
                footer.putInt(info.section().code).putLong(info.offset()).putLong(info.length()).putLong(info.records()).putInt(info.crc32c());
            }
            footer.putInt(index.size()).putLong(footerOffset).put(FOOTER_MAGIC).flip();
            writeAll(footer);
            try {
                channel.force(true);
                channel.close();
            } catch (IOException e) {
                throw IoErrors.named("fsync snapshot file", temp, e);
            }
            try {
                Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (IOException e) {
                throw IoErrors.named("rename to " + target.getFileName() + " of snapshot file", temp, e);
            }
            try {
                DurableFiles.fsyncDirectory(target.getParent());
            } catch (IOException e) {
                throw IoErrors.named("fsync directory", target.getParent(), e);
            }
            finished = true;
            return target;
        }

        private void writeAll(ByteBuffer buffer) throws IOException {
            try {
                while (buffer.hasRemaining()) {
                    position += channel.write(buffer);
                }
            } catch (IOException e) {
                throw IoErrors.named("write snapshot file", temp, e);
            }
        }

        @Override
        public void close() throws IOException {
            if (!finished) {
                channel.close();
                Files.deleteIfExists(temp);
            }
        }
    }

    /**
     * Counts bytes; writes go straight through (positions are tracked by the writer, the channel appends). A failed
     * write names the file and the system's reason: the records' encoder above passes it on as it is.
     */
    private static final class CountingStream extends OutputStream {
        private final OutputStream out;
        private final Path file;
        long count;

        CountingStream(OutputStream out, Path file) {
            this.out = out;
            this.file = file;
        }

        @Override
        public void write(int b) throws IOException {
            try {
                out.write(b);
            } catch (IOException e) {
                throw IoErrors.named("write snapshot file", file, e);
            }
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            try {
                out.write(b, off, len);
            } catch (IOException e) {
                throw IoErrors.named("write snapshot file", file, e);
            }
            count += len;
        }

        @Override
        public void flush() throws IOException {
            try {
                out.flush();
            } catch (IOException e) {
                throw IoErrors.named("write snapshot file", file, e);
            }
        }
    }

    // ---- reading ----

    /** Receives the records of one section. */
    @FunctionalInterface
    public interface RecordVisitor<T> {
        void visit(T record) throws IOException;
    }

    /** Sections up to this size are mapped and decoded from memory; larger ones are streamed. */
    static final long MAX_MAPPED_SECTION = 1L << 30;
    /** A parallel read gives each thread at least this many records. */
    static final long PARALLEL_MIN_RECORDS = 50_000;

    /** Takes the bytes of one record of a section, undecoded: {@code length} bytes of {@code bytes} from {@code offset}. */
    public interface RawRecordVisitor {
        void record(ByteBuffer bytes, int offset, int length) throws com.google.protobuf.InvalidProtocolBufferException;
    }

    /** An opened snapshot: its index and meta record, checked; sections are read on demand. */
    public static final class Reader {
        private final Path path;
        private final int formatVersion;
        private final List<SectionInfo> index;
        private final SnapshotMeta meta;
        private final long maxMapped;

        private Reader(Path path, int formatVersion, List<SectionInfo> index, SnapshotMeta meta, long maxMapped) {
            this.path = path;
            this.formatVersion = formatVersion;
            this.index = index;
            this.meta = meta;
            this.maxMapped = maxMapped;
        }

        /** This reader, streaming every section larger than {@code bytes} instead of mapping it (tests reach that path so). */
        Reader mappingAtMost(long bytes) {
            return new Reader(path, formatVersion, index, meta, bytes);
        }

        public Path path() { return path; }

        public int formatVersion() { return formatVersion; }

        public List<SectionInfo> sections() { return index; }

        public SnapshotMeta meta() { return meta; }

        public SectionInfo info(Section section) {
            return index.stream().filter(i -> i.section() == section).findFirst().orElse(null);
        }

        /** Reads one section's records in order, then checks its checksum and record count. */
        public <T extends MessageLite> void read(Section section, Parser<T> parser, RecordVisitor<T> visitor) throws IOException {
            SectionInfo info = require(section);
            if (info.length() > maxMapped) {
                try {
                    readStreaming(info, (bytes, offset, length) -> {
                        T record = parser.parseFrom(bytes.array(), offset, length);
                        try {
                            visitor.visit(record);
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e); // through the raw visitor, which may only fail to decode
                        }
                    });
                } catch (java.io.UncheckedIOException e) {
                    throw e.getCause();
                }
                return;
            }
            try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
                ByteBuffer bytes = channel.map(FileChannel.MapMode.READ_ONLY, info.offset(), info.length());
                long records = decode(info, CodedInputStream.newInstance(bytes), parser, visitor);
                checkSection(info, bytes, records);
            }
        }

        /**
         * Reads one section on up to {@code threads} threads, each walking a contiguous share of its records and handing
         * each record's bytes, undecoded, to its own visitor from {@code newVisitor} (given the share's number); returns
         * the visitors in file order. Then checks the section's checksum and record count, as {@link #read} does; of
         * several records that do not decode, the first in the file is reported.
         */
        public <V extends RawRecordVisitor> List<V> readShares(Section section, int threads, java.util.function.IntFunction<V> newVisitor)
                throws IOException {
            SectionInfo info = require(section);
            if (info.length() > maxMapped) {
                V visitor = newVisitor.apply(0); // too large to map in one piece: streamed, on this thread
                readStreaming(info, visitor);
                return List.of(visitor);
            }
            try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
                ByteBuffer bytes = channel.map(FileChannel.MapMode.READ_ONLY, info.offset(), info.length());
                int shares = (int) Math.max(1, Math.min(threads, info.records() / PARALLEL_MIN_RECORDS));
                int[] starts = shareStarts(info, bytes, shares);
                List<V> visitors = new ArrayList<>();
                for (int i = 0; i < shares; i++) {
                    visitors.add(newVisitor.apply(i));
                }
                IOException[] failures = new IOException[shares];
                RuntimeException[] crashes = new RuntimeException[shares];
                long[] counts = new long[shares];
                Thread[] workers = new Thread[shares];
                for (int i = shares - 1; i >= 0; i--) {
                    int share = i;
                    Runnable work = () -> {
                        int end = share + 1 < shares ? starts[share + 1] : bytes.limit();
                        try {
                            counts[share] = walk(info, bytes.duplicate(), starts[share], end, share == 0 ? 0 : -1, visitors.get(share));
                        } catch (IOException e) {
                            failures[share] = e;
                        } catch (RuntimeException e) {
                            crashes[share] = e;
                        }
                    };
                    if (share == 0) {
                        work.run(); // on this thread, while the others run
                    } else {
                        workers[share] = new Thread(work, "mcctl-snapshot-read-" + share);
                        workers[share].start();
                    }
                }
                for (int i = 1; i < shares; i++) {
                    try {
                        workers[i].join();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new java.io.InterruptedIOException("interrupted reading " + path);
                    }
                }
                for (int i = 0; i < shares; i++) {
                    if (failures[i] != null) {
                        throw failures[i];
                    }
                    if (crashes[i] != null) {
                        throw crashes[i];
                    }
                }
                checkSection(info, bytes, java.util.Arrays.stream(counts).sum());
                return visitors;
            }
        }

        /**
         * Steps through the length-prefixed records of bytes [from, to) of a mapped section.
         *
         * @param firstRecord the index of the first record, for messages, or -1 when not known (a later share)
         * @return how many records there were
         */
        private long walk(SectionInfo info, ByteBuffer bytes, int from, int to, long firstRecord, RawRecordVisitor visitor) throws IOException {
            long records = 0;
            int at = from;
            while (at < to) {
                int recordStart = at;
                long prefix = lengthPrefix(bytes, at, to);
                if (prefix < 0) {
                    throw undecodable(info, recordStart, firstRecord, records, "malformed length");
                }
                long length = prefix >>> 3;
                at += (int) (prefix & 7);
                if (length > to - at) {
                    throw undecodable(info, recordStart, firstRecord, records, "record of " + length + " bytes runs past the end of the section");
                }
                try {
                    visitor.record(bytes, at, (int) length);
                } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                    throw undecodable(info, recordStart, firstRecord, records, e.getMessage());
                }
                at += (int) length;
                records++;
            }
            return records;
        }

        /** Length prefixes are at most five bytes, lengths at most 2^35: both fit one long, as {@code length << 3 | prefix bytes}. */
        private static long lengthPrefix(ByteBuffer bytes, int at, int to) {
            long length = 0;
            for (int i = 0; i < 5 && at + i < to; i++) {
                byte b = bytes.get(at + i);
                length |= (long) (b & 0x7f) << (7 * i);
                if (b >= 0) {
                    return length << 3 | (i + 1);
                }
            }
            return -1;
        }

        private CorruptStateException undecodable(SectionInfo info, long at, long firstRecord, long records, String why) {
            return new CorruptStateException(path, info.offset() + at, info.section() + " record "
                    + (firstRecord >= 0 ? String.valueOf(firstRecord + records) : "at section byte " + at) + " does not decode: " + why);
        }

        private SectionInfo require(Section section) throws CorruptStateException {
            SectionInfo info = info(section);
            if (info == null) {
                throw new CorruptStateException(path, 0, "no " + section + " section");
            }
            return info;
        }

        /**
         * Where each of {@code shares} runs of about equal record counts starts, found by stepping over the length
         * prefixes (no record is decoded).
         */
        private int[] shareStarts(SectionInfo info, ByteBuffer bytes, int shares) throws CorruptStateException {
            int[] starts = new int[shares];
            long perShare = info.records() / shares;
            int at = 0;
            long record = 0;
            for (int share = 1; share < shares; share++) {
                while (record < perShare * share) {
                    if (at >= bytes.limit()) {
                        throw new CorruptStateException(path, info.offset() + at, info.section() + " section ends after " + record
                                + " records, index says " + info.records());
                    }
                    long prefix = lengthPrefix(bytes, at, bytes.limit());
                    if (prefix < 0) {
                        throw new CorruptStateException(path, info.offset() + at, info.section() + " record " + record + " has a malformed length");
                    }
                    at += (int) Math.min((prefix & 7) + (prefix >>> 3), bytes.limit() + 1L - at);
                    record++;
                }
                starts[share] = Math.min(at, bytes.limit());
            }
            return starts;
        }

        /** Decodes every record of a section from {@code coded}; returns how many there were. */
        private <T extends MessageLite> long decode(SectionInfo info, CodedInputStream coded, Parser<T> parser, RecordVisitor<T> visitor)
                throws IOException {
            coded.setSizeLimit(Integer.MAX_VALUE);
            long records = 0;
            long retired = 0; // bytes read before the last resetSizeCounter, which restarts getTotalBytesRead at 0
            while (!coded.isAtEnd()) {
                long at = info.offset() + retired + coded.getTotalBytesRead();
                T record;
                try {
                    int length = coded.readRawVarint32();
                    int limit = coded.pushLimit(length);
                    record = parser.parseFrom(coded);
                    coded.popLimit(limit);
                } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                    throw new CorruptStateException(path, at, info.section() + " record " + records + " does not decode: " + e.getMessage());
                }
                records++;
                visitor.visit(record);
                if (records % 65536 == 0) {
                    retired += coded.getTotalBytesRead();
                    coded.resetSizeCounter();
                }
            }
            return records;
        }

        private void checkSection(SectionInfo info, ByteBuffer bytes, long records) throws CorruptStateException {
            CRC32C crc = new CRC32C();
            crc.update(bytes.duplicate().clear());
            if ((int) crc.getValue() != info.crc32c()) {
                throw new CorruptStateException(path, info.offset(), info.section() + " section fails its CRC32C");
            }
            if (records != info.records()) {
                throw new CorruptStateException(path, info.offset(), info.section() + " section has " + records + " records, index says " + info.records());
            }
        }

        /** The records of a section too large to map in one piece, streamed to {@code visitor}, then checked as mapped ones are. */
        private void readStreaming(SectionInfo info, RawRecordVisitor visitor) throws IOException {
            CRC32C crc = new CRC32C();
            try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
                channel.position(info.offset());
                InputStream limited = new BoundedStream(new BufferedInputStream(Channels.newInputStream(channel), 1 << 16), info.length());
                CodedInputStream coded = CodedInputStream.newInstance(new CheckedInputStream(limited, crc), 1 << 16);
                coded.setSizeLimit(Integer.MAX_VALUE);
                long records = 0;
                long retired = 0; // bytes read before the last resetSizeCounter, which restarts getTotalBytesRead at 0
                while (!coded.isAtEnd()) {
                    long at = retired + coded.getTotalBytesRead();
                    try {
                        byte[] record = coded.readRawBytes(coded.readRawVarint32());
                        visitor.record(ByteBuffer.wrap(record), 0, record.length);
                    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                        throw undecodable(info, at, 0, records, e.getMessage());
                    }
                    records++;
                    if (records % 65536 == 0) {
                        retired += coded.getTotalBytesRead();
                        coded.resetSizeCounter();
                    }
                }
                if ((int) crc.getValue() != info.crc32c()) {
                    throw new CorruptStateException(path, info.offset(), info.section() + " section fails its CRC32C");
                }
                if (records != info.records()) {
                    throw new CorruptStateException(path, info.offset(), info.section() + " section has " + records + " records, index says " + info.records());
                }
            }
        }

        /** Reads every section, checking every checksum and that every record decodes. */
        public void verify() throws IOException {
            read(Section.MAPPINGS, MappingRecord.parser(), r -> { });
            read(Section.PENDING, PendingRecord.parser(), r -> { });
            read(Section.QUARANTINE, QuarantineRecord.parser(), r -> { });
        }
    }

    /** Opens a snapshot: checks magic, format version, footer and the meta section. */
    public static Reader open(Path path) throws IOException {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = channel.size();
            if (size < 16 + TRAILER_BYTES) {
                throw new CorruptStateException(path, 0, "file of " + size + " bytes is too short to be a snapshot");
            }
            ByteBuffer header = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
            readFully(channel, header, 0);
            header.flip();
            byte[] magic = new byte[8];
            header.get(magic);
            if (!java.util.Arrays.equals(magic, HEADER_MAGIC)) {
                throw new CorruptStateException(path, 0, "not an mcctl snapshot (bad magic)");
            }
            int version = header.getInt();
            if (version != FORMAT_VERSION) {
                throw new CorruptStateException(path, 8, "snapshot format version " + version + "; this mcctl reads version "
                        + FORMAT_VERSION + " (use an mcctl that reads version " + version + ")");
            }
            ByteBuffer trailer = ByteBuffer.allocate(TRAILER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
            readFully(channel, trailer, size - TRAILER_BYTES);
            trailer.flip();
            int count = trailer.getInt();
            long footerOffset = trailer.getLong();
            trailer.get(magic);
            if (!java.util.Arrays.equals(magic, FOOTER_MAGIC)) {
                throw new CorruptStateException(path, size - 8, "footer magic missing (file cut short?)");
            }
            if (count < 1 || count > 64 || footerOffset < 16 || footerOffset + (long) count * INDEX_ENTRY_BYTES + TRAILER_BYTES != size) {
                throw new CorruptStateException(path, size - TRAILER_BYTES, "footer index is inconsistent with the file size");
            }
            ByteBuffer footer = ByteBuffer.allocate(count * INDEX_ENTRY_BYTES).order(ByteOrder.LITTLE_ENDIAN);
            readFully(channel, footer, footerOffset);
            footer.flip();
            List<SectionInfo> index = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                int code = footer.getInt();
                Section section = Section.of(code);
                long offset = footer.getLong();
                long length = footer.getLong();
                long records = footer.getLong();
                int crc = footer.getInt();
                if (section == null || offset < 16 || length < 0 || offset + length > footerOffset) {
                    throw new CorruptStateException(path, footerOffset + (long) i * INDEX_ENTRY_BYTES, "footer entry " + i + " is invalid");
                }
                index.add(new SectionInfo(section, offset, length, records, crc));
            }
            Reader partial = new Reader(path, version, index, null, MAX_MAPPED_SECTION);
            SnapshotMeta[] meta = new SnapshotMeta[1];
            partial.read(Section.META, SnapshotMeta.parser(), m -> meta[0] = m);
            if (meta[0] == null) {
                throw new CorruptStateException(path, 0, "META section is empty");
            }
            return new Reader(path, version, index, meta[0], MAX_MAPPED_SECTION);
        }
    }

    private static void readFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.read(buffer, position + buffer.position()) < 0) {
                throw new java.io.EOFException();
            }
        }
    }

    /** At most {@code limit} bytes of a stream. */
    private static final class BoundedStream extends InputStream {
        private final InputStream in;
        private long left;

        BoundedStream(InputStream in, long limit) {
            this.in = in;
            this.left = limit;
        }

        @Override
        public int read() throws IOException {
            if (left <= 0) {
                return -1;
            }
            int b = in.read();
            if (b >= 0) {
                left--;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (left <= 0) {
                return -1;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n > 0) {
                left -= n;
            }
            return n;
        }
    }
}
