package io.mcctl.master.durability;

import io.mcctl.storage.io.DurableFiles;
import io.mcctl.storage.io.IoErrors;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The one owner of a state directory: an exclusive lock on {@code <state dir>/in_use.lock}, held for the life of
 * the master, as Apache Ratis holds its storage directory's {@code in_use.lock}. The file names the holder (pid,
 * host, start time, gRPC address once bound) so that a refused start can say who holds it.
 *
 * <p>The lock is the kernel's (fcntl), so a master killed with -9 leaves it free: the file that stays behind is
 * only a note and never blocks a start. fcntl locks belong to the process, and closing any descriptor of the file
 * drops them all; so within one JVM the directories locked here are kept in {@link #HELD} and a second acquire or
 * a probe of one of them never opens the file.
 *
 * <p>Thread-safety: {@link #HELD} is guarded by {@link #REGISTRY}; a lock's fields by its own monitor, taken inside
 * {@link #REGISTRY} when both are held.
 */
public final class StateLock implements AutoCloseable {

    public static final String FILE_NAME = "in_use.lock";

    /** Locked by this JVM, by real path of the state directory. Guarded by {@link #REGISTRY}. */
    private static final Map<Path, StateLock> HELD = new HashMap<>();
    /**
     * Serialises acquire, probe and close within this JVM (cold paths only): a probe or a refused acquire closes its
     * descriptor of the file, which must never happen while this JVM's own lock on it is being taken.
     */
    private static final Object REGISTRY = new Object();

    /** Who holds a state directory, as its lock file says; fields are null where the file does not say. */
    public record Holder(Path stateDir, String pid, String host, String since, String address) {
        /** One line: "state /x/master is held by pid 1234 on host h since 2026-12-01T12:00:00Z, serving 127.0.0.1:50051". */
        public String describe() {
            return "state " + stateDir + " is held by pid " + orUnknown(pid) + " on host " + orUnknown(host) + " since " + orUnknown(since)
                    + ", " + (address == null ? "not serving yet" : "serving " + address);
        }

        private static String orUnknown(String value) {
            return value == null ? "(unknown)" : value;
        }
    }

    /**
     * Shared holds of this JVM by real path (high availability: every master of a cluster holds the lock shared, which
     * keeps a master without --ha and the offline repair tools out, while the etcd epoch decides who writes). Guarded
     * by {@link #REGISTRY}; a count of holders per directory, one descriptor and one kernel lock each.
     */
    private static final Map<Path, StateLock> SHARED = new HashMap<>();

    private final Path stateDir;
    private final Path realDir;
    /** Holders of a shared lock in this JVM (1 for an exclusive one). Guarded by {@link #REGISTRY}. */
    private int holds = 1;
    private final boolean shared;
    private final FileChannel channel;
    private final FileLock lock;
    private final Map<String, String> fields = new LinkedHashMap<>();

    private StateLock(Path stateDir, Path realDir, FileChannel channel, FileLock lock) {
        this(stateDir, realDir, channel, lock, false);
    }

    private StateLock(Path stateDir, Path realDir, FileChannel channel, FileLock lock, boolean shared) {
        this.shared = shared;
        this.stateDir = stateDir;
        this.realDir = realDir;
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Creates {@code stateDir} if needed and locks it. Nothing else in the directory is read or written, and a
     * refused acquire changes nothing (the lock file is opened without truncating, and written only once locked).
     *
     * @throws StateInUseException when another process (or this one) holds it, naming the holder
     */
    public static StateLock acquire(Path stateDir) throws IOException {
        synchronized (REGISTRY) {
            return acquireLocked(stateDir);
        }
    }

    private static StateLock acquireLocked(Path stateDir) throws IOException {
        Path realDir = createAndResolve(stateDir);
        StateLock mine = HELD.get(realDir);
        if (mine != null) {
            throw new StateInUseException(mine.holder());
        }
        FileChannel channel = openLockFile(realDir);
        FileLock lock = lockOrRefuse(realDir, channel, false);
        StateLock taken = new StateLock(stateDir, realDir, channel, lock);
        HELD.put(realDir, taken);
        try {
            taken.fields.put("pid", String.valueOf(ProcessHandle.current().pid()));
            taken.fields.put("host", hostName());
            taken.fields.put("since", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
            taken.write();
            DurableFiles.fsyncDirectory(realDir);
        } catch (IOException | RuntimeException e) {
            taken.close();
            throw e;
        }
        return taken;
    }

    /** Creates the state directory when it is missing; its real path. */
    private static Path createAndResolve(Path stateDir) throws IOException {
        try {
            Files.createDirectories(stateDir);
            return stateDir.toRealPath();
        } catch (IOException e) {
            throw IoErrors.named("create state directory", stateDir, e);
        }
    }

    private static FileChannel openLockFile(Path realDir) throws IOException {
        Path file = realDir.resolve(FILE_NAME);
        try {
            return FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw IoErrors.named("open lock file", file, e);
        }
    }

    /** The kernel lock on the open lock file, exclusive or {@code shared}; when another process holds it, the channel is
     *  closed and the refusal names that holder. */
    private static FileLock lockOrRefuse(Path realDir, FileChannel channel, boolean shared) throws IOException {
        FileLock lock;
        try {
            lock = channel.tryLock(0, Long.MAX_VALUE, shared);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
        if (lock == null) {
            Holder holder;
            try {
                holder = readHolder(realDir, channel);
            } finally {
                channel.close();
            }
            throw new StateInUseException(holder);
        }
        return lock;
    }

    /**
     * Locks {@code stateDir} shared, as every master of a high-availability cluster does for its whole life: masters
     * that hold it shared live side by side (the leader's etcd epoch fences the log), while a master without
     * {@code --ha}, or a tool that needs the directory to itself, is refused; and this is refused while such a one
     * holds it. Nothing is written into the lock file here (the leader names itself with {@link #serving} on taking over).
     *
     * @throws StateInUseException when a process holds it exclusively, naming the holder
     */
    public static StateLock acquireShared(Path stateDir) throws IOException {
        synchronized (REGISTRY) {
            Path realDir = createAndResolve(stateDir);
            StateLock mine = HELD.get(realDir);
            if (mine != null) {
                throw new StateInUseException(mine.holder());
            }
            StateLock held = SHARED.get(realDir);
            if (held != null) {
                held.holds++;
                return held;
            }
            FileChannel channel = openLockFile(realDir);
            FileLock lock = lockOrRefuse(realDir, channel, true);
            StateLock taken = new StateLock(stateDir, realDir, channel, lock, true);
            SHARED.put(realDir, taken);
            return taken;
        }
    }

    /**
     * Who holds {@code stateDir} now, if anyone, exclusively or shared (high-availability masters): tries the lock
     * exclusively without keeping it and without creating or changing any file, so an offline reader can say the
     * state is live.
     */
    public static Optional<Holder> probe(Path stateDir) throws IOException {
        synchronized (REGISTRY) {
            return probeLocked(stateDir);
        }
    }

    private static Optional<Holder> probeLocked(Path stateDir) throws IOException {
        Path realDir;
        try {
            realDir = stateDir.toRealPath();
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
        StateLock mine = HELD.get(realDir);
        if (mine == null) {
            mine = SHARED.get(realDir);
        }
        if (mine != null) {
            return Optional.of(mine.holder());
        }
        Path file = realDir.resolve(FILE_NAME);
        if (!Files.isRegularFile(file)) {
            return Optional.empty();
        }
        // An exclusive try sees every holder, the shared ones of high-availability masters too; it needs a descriptor
        // open for writing (which changes nothing in the file). Without write permission, a shared try still sees a
        // master without --ha and the tools that hold the directory exclusively.
        boolean writable = Files.isWritable(file);
        try (FileChannel channel = writable ? FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)
                : FileChannel.open(file, StandardOpenOption.READ)) {
            FileLock lock;
            try {
                lock = channel.tryLock(0, Long.MAX_VALUE, !writable);
            } catch (OverlappingFileLockException e) {
                lock = null;
            }
            if (lock != null) {
                lock.release();
                return Optional.empty();
            }
            return Optional.of(readHolder(realDir, channel));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
    }

    /** Records the address the master serves on, once its port is bound. */
    public synchronized void serving(String address) throws IOException {
        fields.put("address", address);
        write();
    }

    /**
     * Names this process in the lock file as the leader of {@code epoch} serving on {@code address} (high availability:
     * written when it takes over, so that a master refused the directory can say who leads it).
     */
    public synchronized void leading(String address, long epoch) throws IOException {
        fields.put("pid", String.valueOf(ProcessHandle.current().pid()));
        fields.put("host", hostName());
        fields.put("since", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
        fields.put("address", address);
        fields.put("leader_epoch", String.valueOf(epoch));
        write();
    }

    public synchronized Holder holder() {
        return new Holder(realDir, fields.get("pid"), fields.get("host"), fields.get("since"), fields.get("address"));
    }

    public Path stateDir() {
        return stateDir;
    }

    private void write() throws IOException {
        StringBuilder text = new StringBuilder();
        fields.forEach((name, value) -> text.append(name).append('=').append(value).append('\n'));
        byte[] bytes = text.toString().getBytes(StandardCharsets.UTF_8);
        try {
            channel.truncate(0);
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            for (long at = 0; buffer.hasRemaining(); ) {
                at += channel.write(buffer, at);
            }
            channel.force(true);
        } catch (IOException e) {
            throw IoErrors.named("write lock file", realDir.resolve(FILE_NAME), e);
        }
    }

    private static Holder readHolder(Path realDir, FileChannel channel) throws IOException {
        long size = Math.min(channel.size(), 4096);
        ByteBuffer buffer = ByteBuffer.allocate((int) size);
        while (buffer.hasRemaining() && channel.read(buffer, buffer.position()) > 0) {
            // read on
        }
        Map<String, String> read = new LinkedHashMap<>();
        for (String line : new String(buffer.array(), 0, buffer.position(), StandardCharsets.UTF_8).split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                read.put(line.substring(0, eq).trim(), line.substring(eq + 1).trim());
            }
        }
        return new Holder(realDir, read.get("pid"), read.get("host"), read.get("since"), read.get("address"));
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            String env = System.getenv("HOSTNAME");
            return env != null ? env : "unknown";
        }
    }

    /** Releases the lock; the file stays, as a note of the last holder that never blocks the next. */
    @Override
    public void close() throws IOException {
        synchronized (REGISTRY) {
            synchronized (this) {
                if (!channel.isOpen()) {
                    return;
                }
                if (shared && --holds > 0) {
                    return;
                }
                try {
                    lock.release();
                } finally {
                    channel.close();
                    HELD.remove(realDir, this);
                    SHARED.remove(realDir, this);
                }
            }
        }
    }
}
