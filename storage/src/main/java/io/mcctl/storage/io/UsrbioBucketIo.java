package io.mcctl.storage.io;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import io.mcctl.storage.io.usrbio.Hf3fsLayout;
import io.mcctl.storage.io.usrbio.Hf3fsLibrary;
import io.mcctl.storage.io.usrbio.Libc;
import io.mcctl.storage.io.usrbio.RegisteredFiles;
import io.mcctl.storage.io.usrbio.UsrbioUnavailableException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;

/**
 * Bucket-file IO through 3FS's USRBIO: the bytes go from shared memory (an iov) to the storage service by the FUSE
 * process's native client, without the FUSE request path.
 *
 * <p>How an operation runs: its bytes are copied between the caller's buffers and a bounce region of an iov, split
 * where an iov block ends (no IO may cross a block) and where the iov or a ring is full; every piece of a batch is
 * prepped on the read or the write ring, both rings are submitted together and waited for once, then the next
 * round if the batch did not fit. A piece's negative result is that operation's {@link IOException} with the errno's
 * text; a read piece short of its length is the end of the file, and the operation's later pieces do not count.
 *
 * <p>Rings: a ring has one prepping and one waiting thread, so each {@link RingSet} (one iov, a read ring, a write
 * ring) is used by one thread at a time: borrowed from a pool for the length of a call and given back, at most
 * {@link Options#maxRings} of them, created when first needed and reused. A ring whose wait failed or timed out is
 * destroyed, not reused.
 *
 * <p>Durability: a write is done when its completion reports every byte: 3FS has then committed it on every
 * storage target of its chain. {@link #sync} fsyncs the fd, which settles the file's length in 3FS's metadata;
 * bucket files are extended by ftruncate before use, so a write inside them changes no length.
 *
 * <p>Thread safety: no lock on the IO path. The pool is a semaphore (how many ring sets exist or may be created)
 * and a lock-free queue of idle ones; a ring set passes between threads through that queue. {@link #close} must
 * come after the last operation.
 */
public final class UsrbioBucketIo implements BucketIo {

    /**
     * Sizes of the shared memory and rings.
     *
     * @param iovBytes   shared memory per ring set: the most bytes one round of a batch moves
     * @param blockBytes the iov's block size: no IO crosses a block boundary, so pieces are at most this long
     * @param entries    IOs each ring holds: the most pieces of one kind per round
     * @param maxRings   ring sets at most, so threads beyond it wait for one
     * @param timeout    how long a round may take before the batch fails
     */
    public record Options(int iovBytes, int blockBytes, int entries, int maxRings, Duration timeout) {

        public Options {
            if (iovBytes <= 0 || blockBytes <= 0 || blockBytes > iovBytes || entries <= 0 || maxRings <= 0 || timeout.isNegative()
                    || timeout.isZero()) {
                throw new IllegalArgumentException("USRBIO options: iov " + iovBytes + " bytes, block " + blockBytes + ", entries "
                        + entries + ", rings " + maxRings + ", timeout " + timeout + ": all must be positive and the block at most the iov");
            }
        }

        /** 16 MiB of iov in 1 MiB blocks, 256 IOs per ring, two ring sets per core, 60 s per round. */
        public static Options defaults() {
            return new Options(16 << 20, 1 << 20, 256, Math.max(4, 2 * Runtime.getRuntime().availableProcessors()), Duration.ofSeconds(60));
        }
    }

    private final Hf3fsLibrary library;
    private final String mountPoint;
    private final Options options;
    private final RegisteredFiles files;
    private final Semaphore ringPermits;
    private final ConcurrentLinkedQueue<RingSet> idleRings = new ConcurrentLinkedQueue<>();
    private final Set<RingSet> allRings = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;
    /** Rounds submitted and waited for, for a check that a batch goes as one. */
    private final java.util.concurrent.atomic.LongAdder rounds = new java.util.concurrent.atomic.LongAdder();

    /**
     * Creates the first ring set at once, so that a mount or a library that cannot give one fails here.
     *
     * @param mountPoint the 3FS mount the bucket files are on ({@link Hf3fsLibrary#mountPointOf})
     * @param writable   open files for reading and writing (writers) or for reading only (readers)
     * @throws UsrbioUnavailableException RING, naming the mount and the library's errno
     */
    public UsrbioBucketIo(Hf3fsLibrary library, Path mountPoint, boolean writable, Options options) throws UsrbioUnavailableException {
        this.library = library;
        this.mountPoint = mountPoint.toString();
        this.options = options;
        this.files = new RegisteredFiles(library, writable);
        this.ringPermits = new Semaphore(options.maxRings());
        RingSet first = new RingSet(library, this.mountPoint, options);
        allRings.add(first);
        idleRings.add(first);
    }

    @Override
    public String name() {
        return IoMode.USRBIO.text();
    }

    @Override
    public void write(Path file, long offset, ByteBuffer... srcs) throws IOException {
        runOne(false, file, offset, srcs);
    }

    @Override
    public long read(Path file, long offset, ByteBuffer... dsts) throws IOException {
        return runOne(true, file, offset, dsts);
    }

    /** One operation as a batch of one, in the ring set's own reusable batch. */
    private long runOne(boolean read, Path file, long offset, ByteBuffer[] buffers) throws IOException {
        RingSet rings = borrow();
        boolean healthy = false;
        IoBatch single = rings.single;
        try {
            single.clear();
            if (read) {
                single.read(file, offset, buffers);
            } else {
                single.write(file, offset, buffers);
            }
            run(rings, single);
            healthy = true;
            return single.bytesDone(0);
        } finally {
            single.clear();
            giveBack(rings, healthy);
        }
    }

    @Override
    public void execute(IoBatch batch) throws IOException {
        RingSet rings = borrow();
        boolean healthy = false;
        try {
            run(rings, batch);
            healthy = true;
        } finally {
            giveBack(rings, healthy);
        }
    }

    @Override
    public void sync(Path file) throws IOException {
        int fd = files.fd(file);
        try {
            Libc.fsync(fd);
        } catch (LastErrorException e) {
            throw new IOException("fsync of " + file + ": " + Libc.describe(e.getErrorCode()));
        }
    }

    /** Rounds submitted so far: each submits both rings and waits once. */
    public long rounds() {
        return rounds.sum();
    }

    /** Ring sets created so far (at most {@link Options#maxRings}). */
    public int ringCount() {
        return allRings.size();
    }

    @Override
    public OpenFiles<?> files() {
        return files;
    }

    @Override
    public void close() throws IOException {
        closed = true;
        for (RingSet rings : allRings) {
            rings.destroy();
        }
        allRings.clear();
        idleRings.clear();
        files.close();
    }

    private RingSet borrow() throws IOException {
        if (closed) {
            throw new java.nio.channels.ClosedChannelException();
        }
        try {
            ringPermits.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for a USRBIO ring");
        }
        RingSet rings = idleRings.poll();
        if (rings != null) {
            return rings;
        }
        try {
            rings = new RingSet(library, mountPoint, options);
        } catch (UsrbioUnavailableException e) {
            ringPermits.release();
            throw e;
        }
        allRings.add(rings);
        return rings;
    }

    /** A ring set whose round failed may still have IOs in flight: it is destroyed, and a new one made when needed. */
    private void giveBack(RingSet rings, boolean healthy) {
        if (healthy && !closed) {
            idleRings.add(rings);
        } else {
            allRings.remove(rings);
            rings.destroy();
        }
        ringPermits.release();
    }

    // ---- one batch on one ring set ----

    private static final byte RUNNING = 0;
    private static final byte AT_END = 1;
    private static final byte FAILED = 2;

    private void run(RingSet rings, IoBatch batch) throws IOException {
        int count = batch.size();
        rings.ensureOps(count);
        for (int op = 0; op < count; op++) {
            rings.opDone[op] = 0;
            rings.opState[op] = RUNNING;
            rings.opFailure[op] = null;
            try {
                rings.opFd[op] = files.fd(batch.file(op));
            } catch (java.nio.channels.ClosedChannelException e) {
                throw e;
            } catch (IOException e) {
                rings.opState[op] = FAILED;
                rings.opFailure[op] = e;
            }
        }
        rings.startRound();
        for (int op = 0; op < count; op++) {
            boolean read = batch.isRead(op);
            long length = batch.length(op);
            long position = 0;
            while (position < length && rings.opState[op] == RUNNING) {
                if (rings.iovUsed == rings.iovSize || (read ? rings.readPieces : rings.writePieces) == options.entries()) {
                    finishRound(rings, batch);
                    if (rings.opState[op] != RUNNING) {
                        break;
                    }
                }
                int piece = (int) Math.min(length - position,
                        Math.min(rings.iovSize - rings.iovUsed, rings.blockSize - rings.iovUsed % rings.blockSize));
                if (!read) {
                    gather(batch.buffers(op), position, rings.iovView, rings.iovUsed, piece);
                }
                int prepped = library.prepIo(read ? rings.readIor : rings.writeIor, rings.iov, read, rings.iovBase + rings.iovUsed,
                        rings.opFd[op], batch.offset(op) + position, piece, rings.pieces);
                if (prepped < 0) {
                    rings.opState[op] = FAILED;
                    rings.opFailure[op] = new IOException(describe(batch, op) + ": USRBIO refused the IO: " + Libc.describe(-prepped));
                    break;
                }
                rings.addPiece(op, position, piece, read);
                position += piece;
            }
        }
        finishRound(rings, batch);
        for (int op = 0; op < count; op++) {
            if (rings.opState[op] == FAILED) {
                batch.fail(op, rings.opFailure[op]);
            } else {
                batch.succeed(op, rings.opDone[op]);
            }
        }
    }

    /** Submits both rings, waits for every piece, and settles each piece in prep order. */
    private void finishRound(RingSet rings, IoBatch batch) throws IOException {
        if (rings.pieces == 0) {
            return;
        }
        rounds.increment();
        if (rings.readPieces > 0) {
            submit(rings.readIor);
        }
        if (rings.writePieces > 0) {
            submit(rings.writeIor);
        }
        long deadline = System.currentTimeMillis() + options.timeout().toMillis();
        rings.timespec.setLong(0, deadline / 1000);
        rings.timespec.setLong(8, (deadline % 1000) * 1_000_000L);
        collect(rings, rings.readIor, rings.readPieces, deadline);
        collect(rings, rings.writeIor, rings.writePieces, deadline);
        for (int p = 0; p < rings.pieces; p++) {
            int op = rings.pieceOp[p];
            if (rings.opState[op] != RUNNING) {
                continue;
            }
            long result = rings.pieceResult[p];
            int length = rings.pieceLength[p];
            if (result < 0) {
                rings.opState[op] = FAILED;
                rings.opFailure[op] = new IOException(describe(batch, op) + ": " + Libc.describe((int) -result));
            } else if (batch.isRead(op)) {
                if (result > 0) {
                    scatter(rings.iovView, rings.pieceIovPosition[p], batch.buffers(op), rings.pieceOpPosition[p], (int) result);
                }
                rings.opDone[op] += result;
                if (result < length) {
                    rings.opState[op] = AT_END;
                }
            } else if (result != length) {
                rings.opState[op] = FAILED;
                rings.opFailure[op] = new IOException(describe(batch, op) + ": USRBIO wrote " + result + " of " + length + " bytes at "
                        + (batch.offset(op) + rings.pieceOpPosition[p]));
            } else {
                rings.opDone[op] += result;
            }
        }
        rings.startRound();
    }

    private void submit(long ior) throws IOException {
        int submitted = library.submitIos(ior);
        if (submitted < 0) {
            throw new IOException("USRBIO submit on " + mountPoint + ": " + Libc.describe(-submitted));
        }
    }

    private void collect(RingSet rings, long ior, int expected, long deadline) throws IOException {
        int got = 0;
        while (got < expected) {
            int reaped = library.waitForIos(ior, rings.cqesAddress, options.entries(), expected - got, rings.timespecAddress);
            if (reaped < 0) {
                throw new IOException("USRBIO wait on " + mountPoint + ": " + Libc.describe(-reaped));
            }
            for (int i = 0; i < reaped; i++) {
                long base = (long) i * Hf3fsLayout.CQE_SIZE;
                int piece = (int) rings.cqes.getLong(base + Hf3fsLayout.CQE_USERDATA);
                rings.pieceResult[piece] = rings.cqes.getLong(base + Hf3fsLayout.CQE_RESULT);
            }
            got += reaped;
            if (got < expected && System.currentTimeMillis() >= deadline) {
                throw new IOException("USRBIO on " + mountPoint + ": " + (expected - got) + " of " + expected + " IOs did not complete within "
                        + options.timeout().toSeconds() + " s");
            }
        }
    }

    private static String describe(IoBatch batch, int op) {
        return (batch.isRead(op) ? "read of " : "write of ") + batch.length(op) + " bytes at offset " + batch.offset(op) + " of "
                + batch.file(op);
    }

    /** Copies {@code length} bytes starting {@code from} bytes into the remaining bytes of {@code srcs} to {@code iov}. */
    static void gather(ByteBuffer[] srcs, long from, ByteBuffer iov, int iovPosition, int length) {
        for (ByteBuffer src : srcs) {
            int remaining = src.remaining();
            if (from >= remaining) {
                from -= remaining;
                continue;
            }
            int step = (int) Math.min(remaining - from, length);
            iov.put(iovPosition, src, src.position() + (int) from, step);
            iovPosition += step;
            length -= step;
            from = 0;
            if (length == 0) {
                return;
            }
        }
    }

    /** Copies {@code length} bytes of {@code iov} to the remaining space of {@code dsts}, starting {@code from} bytes into it. */
    static void scatter(ByteBuffer iov, int iovPosition, ByteBuffer[] dsts, long from, int length) {
        for (ByteBuffer dst : dsts) {
            int remaining = dst.remaining();
            if (from >= remaining) {
                from -= remaining;
                continue;
            }
            int step = (int) Math.min(remaining - from, length);
            dst.put(dst.position() + (int) from, iov, iovPosition, step);
            iovPosition += step;
            length -= step;
            from = 0;
            if (length == 0) {
                return;
            }
        }
    }

    /**
     * One iov and a read ring and a write ring on it, with the bookkeeping of a round. Used by one thread at a time
     * (see the pool above); not thread-safe.
     */
    private static final class RingSet {

        final Hf3fsLibrary library;
        final Memory iovStruct = new Memory(Hf3fsLayout.IOV_SIZE);
        final Memory readIorStruct = new Memory(Hf3fsLayout.IOR_SIZE);
        final Memory writeIorStruct = new Memory(Hf3fsLayout.IOR_SIZE);
        final Memory cqes;
        final Memory timespec = new Memory(Hf3fsLayout.TIMESPEC_SIZE);
        final long iov = Pointer.nativeValue(iovStruct);
        final long readIor = Pointer.nativeValue(readIorStruct);
        final long writeIor = Pointer.nativeValue(writeIorStruct);
        final long cqesAddress;
        final long timespecAddress = Pointer.nativeValue(timespec);
        final long iovBase;
        final int iovSize;
        final int blockSize;
        final ByteBuffer iovView;
        final IoBatch single = new IoBatch();
        private boolean destroyed; // guarded by this

        // the pieces of the current round, in prep order; a piece's index is its userdata
        int pieces;
        int readPieces;
        int writePieces;
        int iovUsed;
        final int[] pieceOp;
        final long[] pieceOpPosition;
        final int[] pieceLength;
        final int[] pieceIovPosition;
        final long[] pieceResult;

        // the operations of the current batch
        int[] opFd = new int[16];
        long[] opDone = new long[16];
        byte[] opState = new byte[16];
        IOException[] opFailure = new IOException[16];

        RingSet(Hf3fsLibrary library, String mountPoint, Options options) throws UsrbioUnavailableException {
            this.library = library;
            iovStruct.clear();
            readIorStruct.clear();
            writeIorStruct.clear();
            int created = library.iovCreate(iov, mountPoint, options.iovBytes(), options.blockBytes(), -1);
            if (created < 0) {
                throw new UsrbioUnavailableException(UsrbioUnavailableException.Missing.RING, "USRBIO cannot create " + options.iovBytes()
                        + " bytes of shared memory (iov) on 3FS mount " + mountPoint + ": " + Libc.describe(-created));
            }
            created = library.iorCreate(readIor, mountPoint, options.entries(), true, 0, 0, -1, 0);
            if (created < 0) {
                library.iovDestroy(iov);
                throw ringFailure(mountPoint, "read", options, created);
            }
            created = library.iorCreate(writeIor, mountPoint, options.entries(), false, 0, 0, -1, 0);
            if (created < 0) {
                library.iorDestroy(readIor);
                library.iovDestroy(iov);
                throw ringFailure(mountPoint, "write", options, created);
            }
            cqes = new Memory((long) options.entries() * Hf3fsLayout.CQE_SIZE);
            cqesAddress = Pointer.nativeValue(cqes);
            iovBase = iovStruct.getLong(Hf3fsLayout.IOV_BASE);
            iovSize = options.iovBytes();
            blockSize = options.blockBytes();
            iovView = new Pointer(iovBase).getByteBuffer(0, iovSize);
            int capacity = 2 * options.entries();
            pieceOp = new int[capacity];
            pieceOpPosition = new long[capacity];
            pieceLength = new int[capacity];
            pieceIovPosition = new int[capacity];
            pieceResult = new long[capacity];
        }

        private static UsrbioUnavailableException ringFailure(String mountPoint, String kind, Options options, int errno) {
            return new UsrbioUnavailableException(UsrbioUnavailableException.Missing.RING, "USRBIO cannot create a " + kind + " ring of "
                    + options.entries() + " entries on 3FS mount " + mountPoint + ": " + Libc.describe(-errno));
        }

        void ensureOps(int count) {
            if (opFd.length < count) {
                int capacity = Math.max(count, opFd.length * 2);
                opFd = Arrays.copyOf(opFd, capacity);
                opDone = Arrays.copyOf(opDone, capacity);
                opState = Arrays.copyOf(opState, capacity);
                opFailure = Arrays.copyOf(opFailure, capacity);
            }
        }

        void startRound() {
            pieces = 0;
            readPieces = 0;
            writePieces = 0;
            iovUsed = 0;
        }

        void addPiece(int op, long opPosition, int length, boolean read) {
            pieceOp[pieces] = op;
            pieceOpPosition[pieces] = opPosition;
            pieceLength[pieces] = length;
            pieceIovPosition[pieces] = iovUsed;
            pieceResult[pieces] = 0;
            pieces++;
            if (read) {
                readPieces++;
            } else {
                writePieces++;
            }
            iovUsed += length;
        }

        /** Synchronized on the ring set, which guards {@code destroyed}: a failed round and {@link #close} may both destroy it. */
        synchronized void destroy() {
            if (destroyed) {
                return;
            }
            destroyed = true;
            library.iorDestroy(readIor);
            library.iorDestroy(writeIor);
            library.iovDestroy(iov);
        }
    }
}
