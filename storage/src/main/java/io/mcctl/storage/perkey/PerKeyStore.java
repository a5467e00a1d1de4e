package io.mcctl.storage.perkey;

import io.mcctl.storage.layout.KeyHasher;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.zip.CRC32C;

/**
 * The per-key file model that page mode replaces (Mooncake's DistributedStorageBackend before the RFC): one file per
 * object in 256 directories {@code 00..ff} under a node's local disk, the directory chosen by XXH64(raw key) % 256, the
 * same hash the bucket files use. Each file starts with a small header naming its tenant, key, size and CRC32C, so a
 * walk of the tree (ScanMeta) can tell what the directory holds without any other record.
 *
 * <p>A write goes to a temporary file in the key's directory, is fsynced and renamed over the key's name, so a reader
 * sees a whole object or none. Thread-safe: no state but the directory; concurrent writes of one key leave the last
 * rename.
 */
public final class PerKeyStore {

    public static final int DIRECTORY_COUNT = 256;
    private static final int MAGIC = 0x4D43504B; // "MCPK"
    private static final int VERSION = 1;
    /** Longest file name built from the key itself; longer keys are named by a SHA-256 of tenant and key. */
    private static final int MAX_READABLE_NAME = 200;
    private static final String TEMP_PREFIX = ".tmp-";

    /** One stored object: where its bytes start in its file, and what its header says. */
    public record Entry(Path file, String tenant, String key, long size, int crc32c, long dataOffset) {
    }

    private final Path root;

    private PerKeyStore(Path root) {
        this.root = root;
    }

    /** Opens (creating when missing) the 256 directories under {@code root}. */
    public static PerKeyStore open(Path root) throws IOException {
        Path absolute = root.toAbsolutePath().normalize();
        if (Files.exists(absolute) && !Files.isDirectory(absolute)) {
            throw new IOException("local disk " + absolute + " is a file, not a directory");
        }
        for (int d = 0; d < DIRECTORY_COUNT; d++) {
            Files.createDirectories(absolute.resolve(directoryName(d)));
        }
        return new PerKeyStore(absolute);
    }

    public Path root() {
        return root;
    }

    static String directoryName(int d) {
        return String.format(Locale.ROOT, "%02x", d);
    }

    /** The file that holds (tenant, key). */
    public Path fileOf(String tenant, String key) {
        int d = (int) Long.remainderUnsigned(KeyHasher.xxh64(KeyHasher.keyBytes(key)), DIRECTORY_COUNT);
        return root.resolve(directoryName(d)).resolve(fileName(tenant, key));
    }

    static String fileName(String tenant, String key) {
        String readable = encode(tenant) + "~" + encode(key);
        if (readable.length() <= MAX_READABLE_NAME) {
            return readable;
        }
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(tenant.getBytes(StandardCharsets.UTF_8));
            sha.update((byte) 0);
            sha.update(key.getBytes(StandardCharsets.UTF_8));
            return "~" + HexFormat.of().formatHex(sha.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Letters, digits, '.', '_' and '-' as they are; every other byte of the UTF-8 form as %XX (so '/' never nests). */
    private static String encode(String text) {
        StringBuilder out = new StringBuilder(text.length());
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xff);
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'
                    || (c == '.' && out.length() > 0)) {
                out.append(c);
            } else {
                out.append('%').append(Character.toUpperCase(Character.forDigit((b >> 4) & 0xf, 16)))
                        .append(Character.toUpperCase(Character.forDigit(b & 0xf, 16)));
            }
        }
        return out.toString();
    }

    private static ByteBuffer header(String tenant, String key, long size, int crc) {
        byte[] t = tenant.getBytes(StandardCharsets.UTF_8);
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        ByteBuffer header = ByteBuffer.allocate(4 + 4 + 4 + t.length + 4 + k.length + 8 + 4).order(ByteOrder.LITTLE_ENDIAN);
        header.putInt(MAGIC).putInt(VERSION).putInt(t.length).put(t).putInt(k.length).put(k).putLong(size).putInt(crc);
        return header.flip();
    }

    /** Writes {@code parts} as (tenant, key)'s object, fsynced, and returns its CRC32C; the old object, if any, is replaced whole. */
    public int write(String tenant, String key, List<ByteBuffer> parts) throws IOException {
        return write(tenant, key, parts, true);
    }

    /** {@link #write(String, String, List)}, with {@code durable} false leaving the file to the page cache (no fsync). */
    public int write(String tenant, String key, List<ByteBuffer> parts, boolean durable) throws IOException {
        long size = 0;
        CRC32C crc = new CRC32C();
        for (ByteBuffer part : parts) {
            size += part.remaining();
            crc.update(part.duplicate());
        }
        int crc32c = (int) crc.getValue();
        Path target = fileOf(tenant, key);
        Path temp = target.resolveSibling(TEMP_PREFIX + UUID.randomUUID());
        try (FileChannel out = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer header = header(tenant, key, size, crc32c);
            while (header.hasRemaining()) {
                out.write(header);
            }
            for (ByteBuffer part : parts) {
                ByteBuffer view = part.duplicate();
                while (view.hasRemaining()) {
                    out.write(view);
                }
            }
            if (durable) {
                out.force(true);
            }
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(temp);
            throw e;
        }
        try {
            Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            Files.deleteIfExists(temp);
            throw e;
        }
        return crc32c;
    }

    /** (tenant, key)'s object, or null when this store holds none. A file of another key under the same name is none. */
    public Entry find(String tenant, String key) throws IOException {
        Path file = fileOf(tenant, key);
        Entry entry;
        try (FileChannel in = FileChannel.open(file, StandardOpenOption.READ)) {
            entry = readHeader(file, in);
        } catch (NoSuchFileException e) {
            return null;
        }
        return entry != null && entry.tenant().equals(tenant) && entry.key().equals(key) ? entry : null;
    }

    /** Removes (tenant, key)'s file; false when there was none. */
    public boolean delete(String tenant, String key) throws IOException {
        return Files.deleteIfExists(fileOf(tenant, key));
    }

    private static Entry readHeader(Path file, FileChannel in) throws IOException {
        ByteBuffer fixed = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
        if (readFully(in, fixed, 0) < 12 || fixed.getInt(0) != MAGIC || fixed.getInt(4) != VERSION) {
            return null;
        }
        int tenantLength = fixed.getInt(8);
        if (tenantLength < 0 || tenantLength > 1024) {
            return null;
        }
        ByteBuffer tenantAndKeyLength = ByteBuffer.allocate(tenantLength + 4).order(ByteOrder.LITTLE_ENDIAN);
        if (readFully(in, tenantAndKeyLength, 12) < tenantAndKeyLength.capacity()) {
            return null;
        }
        int keyLength = tenantAndKeyLength.getInt(tenantLength);
        if (keyLength < 0 || keyLength > 1 << 20) {
            return null;
        }
        long keyAt = 12L + tenantLength + 4;
        ByteBuffer rest = ByteBuffer.allocate(keyLength + 12).order(ByteOrder.LITTLE_ENDIAN);
        if (readFully(in, rest, keyAt) < rest.capacity()) {
            return null;
        }
        String tenant = new String(tenantAndKeyLength.array(), 0, tenantLength, StandardCharsets.UTF_8);
        String key = new String(rest.array(), 0, keyLength, StandardCharsets.UTF_8);
        long size = rest.getLong(keyLength);
        int crc = rest.getInt(keyLength + 8);
        long dataOffset = keyAt + keyLength + 12;
        if (in.size() != dataOffset + size) {
            return null; // cut short or grown: not an object this store wrote whole
        }
        return new Entry(file, tenant, key, size, crc, dataOffset);
    }

    private static int readFully(FileChannel in, ByteBuffer into, long position) throws IOException {
        int total = 0;
        while (into.hasRemaining()) {
            int n = in.read(into, position + total);
            if (n < 0) {
                break;
            }
            total += n;
        }
        return total;
    }

    /**
     * ScanMeta: walks the 256 directories and hands every whole object to {@code sink}; temporary files of writes that
     * never finished and files that are not objects are skipped. Returns the number of files looked at.
     */
    public long scan(Consumer<Entry> sink) throws IOException {
        long files = 0;
        for (int d = 0; d < DIRECTORY_COUNT; d++) {
            try (DirectoryStream<Path> dir = Files.newDirectoryStream(root.resolve(directoryName(d)))) {
                for (Path file : dir) {
                    files++;
                    if (file.getFileName().toString().startsWith(TEMP_PREFIX)) {
                        continue;
                    }
                    try (FileChannel in = FileChannel.open(file, StandardOpenOption.READ)) {
                        Entry entry = readHeader(file, in);
                        if (entry != null) {
                            sink.accept(entry);
                        }
                    } catch (NoSuchFileException e) {
                        // removed while the walk ran
                    }
                }
            }
        }
        return files;
    }

    /** Every whole object, as {@link #scan} finds them. */
    public List<Entry> list() throws IOException {
        List<Entry> entries = new ArrayList<>();
        scan(entries::add);
        return entries;
    }

    /** Reads the object's bytes from {@code from} until {@code into} is full or the file ends; returns how many. */
    public static int readChunk(FileChannel in, Entry entry, long from, ByteBuffer into) throws IOException {
        return readFully(in, into, entry.dataOffset() + from);
    }
}
