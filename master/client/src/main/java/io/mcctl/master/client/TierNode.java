package io.mcctl.master.client;

import io.mcctl.master.protocol.Placement;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import com.google.protobuf.ByteString;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.storage.io.BucketFileIo;
import io.mcctl.storage.io.BucketIo;
import io.mcctl.storage.io.BucketIoSelector;
import io.mcctl.storage.io.OpenFiles;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.mcctl.storage.layout.LayoutMismatchException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One node of the tier: a master client plus this node's view of the shared root (its bucket-file IO, POSIX or USRBIO,
 * and the object rules above it), with the root checked against the master's layout so a node that mounted another
 * cluster, or nothing, is stopped before it reads or writes a byte.
 *
 * <p>The IO is chosen once, when the node connects, from the {@code io} setting and the master's root and fs_type
 * ({@link BucketIoSelector}); {@code auto} falls back to POSIX only then, never while the node serves.
 */
public final class TierNode implements AutoCloseable {

    private final MasterClient master;
    /** The master's layout as this node last asked for it; replaced when a descriptor shows the buckets grew. */
    private volatile GetLayoutResponse layout;
    private final BucketIoSelector.Choice ioChoice;
    private final BucketIo bucketIo;
    private volatile BucketFileIo io;
    private final ClientMetrics metrics;

    private TierNode(MasterClient master, GetLayoutResponse layout, BucketIoSelector.Choice ioChoice, BucketIo bucketIo, ClientMetrics metrics) {
        this.master = master;
        this.layout = layout;
        this.ioChoice = ioChoice;
        this.bucketIo = bucketIo;
        this.io = new BucketFileIo(bucketIo, layout.getBucketSize());
        this.metrics = metrics;
        this.dram = new DramReader(java.time.Duration.ofMillis(Math.max(200, master.callTimeout().toMillis() / 10)), metrics);
    }

    /**
     * Asks the master for its layout and checks this node's mount of the root against it; the IO is as this process's
     * environment says ({@code MOONCAKE_DISTRIBUTED_IO}, ...; auto by default).
     *
     * @param writable open bucket files for writing (offload) or only for reading (get)
     */
    public static TierNode connect(MasterClient master, boolean writable, ClientMetrics metrics) throws IOException {
        return connect(master, writable, metrics, BucketIoSelector.Wanted.fromEnvironment());
    }

    /**
     * As {@link #connect(MasterClient, boolean, ClientMetrics)}, with the IO {@code wanted}.
     *
     * @throws io.mcctl.storage.io.usrbio.UsrbioUnavailableException when io is usrbio and USRBIO cannot be used here (one
     *     line naming what is missing)
     */
    public static TierNode connect(MasterClient master, boolean writable, ClientMetrics metrics, BucketIoSelector.Wanted wanted)
            throws IOException {
        GetLayoutResponse layout = master.layout();
        checkMount(layout);
        BucketIoSelector.Choice choice = wanted.choose(layout.getFsType(), Path.of(layout.getRootDir()));
        return new TierNode(master, layout, choice, choice.open(writable), metrics);
    }

    /** The IO in force on this node and why. */
    public BucketIoSelector.Choice ioChoice() {
        return ioChoice;
    }

    /** Throws a one-line explanation when this node's view of the root differs from the master's. */
    static void checkMount(GetLayoutResponse layout) throws IOException {
        Path root = Path.of(layout.getRootDir());
        if (!Files.isDirectory(root)) {
            throw new NoSuchFileException(root.toString(), null, "the master's root " + root
                    + " is not visible on this node: check that the shared filesystem is mounted there (mcctl mount validate)");
        }
        BucketLayout expected = MasterClient.bucketLayout(layout);
        LayoutFile.Record record;
        try {
            record = LayoutFile.read(expected.layoutFile());
        } catch (NoSuchFileException e) {
            throw new LayoutMismatchException("no " + LayoutFile.FILE_NAME + " under " + root
                    + " on this node: the shared filesystem is not mounted there, or another directory is (mcctl mount validate)");
        }
        if (!record.clusterId().equals(layout.getClusterId())) {
            throw new LayoutMismatchException(expected.layoutFile() + " on this node belongs to cluster " + record.clusterId()
                    + " but the master serves cluster " + layout.getClusterId() + ": this node mounted another cluster's root");
        }
        // Buckets grow while serving (mcctl layout grow): between the master's answer and the record's rewrite the two
        // may differ in bucket size only, and the master's answer is the one in force.
        LayoutFile.check(record, new BucketLayout(root, layout.getBucketCount(), layout.getPageSize(), record.bucketSize()),
                expected.layoutFile());
    }

    public MasterClient master() {
        return master;
    }

    public GetLayoutResponse layout() {
        return layout;
    }

    /** Bucket file paths as the master spells them in descriptors (its root and the layout's file names), by index. */
    private volatile ByteString[] bucketPaths;

    /**
     * The path of bucket file {@code bucket} as a descriptor from the master names it, for answers that name buckets by
     * index alone (packed lookups).
     *
     * @throws IllegalArgumentException when the layout has no such bucket
     */
    public ByteString bucketPath(int bucket) {
        ByteString[] paths = bucketPaths;
        if (paths == null) {
            BucketLayout known = MasterClient.bucketLayout(layout);
            paths = new ByteString[known.bucketCount()];
            for (int b = 0; b < paths.length; b++) {
                paths[b] = ByteString.copyFromUtf8(known.bucketPath(b).toString());
            }
            bucketPaths = paths; // a racing thread builds the same array: bucket counts never change
        }
        if (bucket < 0 || bucket >= paths.length) {
            throw new IllegalArgumentException("bucket " + bucket + " is outside the layout's 0.." + (paths.length - 1));
        }
        return paths[bucket];
    }

    /**
     * The descriptor of a placement a packed answer gave, its path as the master spells it.
     *
     * @throws IllegalArgumentException when the layout has no such bucket
     */
    public DistributedDiskDescriptor descriptorOf(Placement place) {
        return DistributedDiskDescriptor.newBuilder().setFilePathBytes(bucketPath(place.bucket())).setBucket(place.bucket())
                .setOffset(place.offset()).setObjectSize(place.size()).setCrc32C(place.crc32c()).build();
    }

    public BucketFileIo io() {
        return io;
    }

    /**
     * The IO for an object at {@code offset} of {@code size} bytes. When it lies past the bucket size this node knows, the
     * buckets have grown since it asked (mcctl layout grow): it asks the master again, so a descriptor of the grown
     * layout is read and written like any other. One that lies past the master's size too is refused by the IO.
     */
    public BucketFileIo ioFor(long offset, long size) {
        GetLayoutResponse known = layout;
        if (offset >= 0 && size >= 0 && offset + size > known.getBucketSize()) {
            refreshLayout(known);
        }
        return io;
    }

    private synchronized void refreshLayout(GetLayoutResponse known) {
        if (layout != known) {
            return; // another thread asked already
        }
        GetLayoutResponse fresh = master.layout();
        if (fresh.getBucketSize() > known.getBucketSize() && fresh.getBucketCount() == known.getBucketCount()
                && fresh.getPageSize() == known.getPageSize()) {
            io = new BucketFileIo(bucketIo, fresh.getBucketSize());
            layout = fresh;
        }
    }

    /**
     * Reads of MEMORY replicas from the nodes that hold them (no channel is opened before the first). Its deadline is a
     * tenth of the master's call timeout (at least 200 ms): the pread is always there to fall back on.
     */
    private final DramReader dram;

    /** The reader of MEMORY replicas, or null when this node reads only the shared files (see {@link #readOnlySharedFiles}). */
    public DramReader dram() {
        return sharedFilesOnly ? null : dram;
    }

    private volatile boolean sharedFilesOnly;

    /** Reads only the bucket files, never a node's DRAM (for a benchmark of the pread, or a node that cannot reach the others). */
    public TierNode readOnlySharedFiles() {
        this.sharedFilesOnly = true;
        return this;
    }

    public ClientMetrics metrics() {
        return metrics;
    }

    public long pagesFor(long size) {
        return (size + layout.getPageSize() - 1) / layout.getPageSize();
    }

    public int openFiles() {
        return bucketIo.openFileCount();
    }

    /** The open file writes to {@code file} go through now: a writer remembers it before its first write there, for {@link #syncAll}. */
    OpenFiles.OpenFile<?> openForWrite(Path file) throws IOException {
        return bucketIo.open(file);
    }

    /**
     * What became of one file a batch wrote: flushed, and {@code current} is the open file it was written through (the
     * bytes are in the bucket file at the path, for every node to read); or {@code current} is another open file, the
     * file now at the path, through which the batch's objects there must be written again; or it {@code failed} (the
     * flush failed, or the file is gone from its path).
     */
    record Flushed(OpenFiles.OpenFile<?> current, IOException failed) {
    }

    /**
     * Most of this node's IO threads, for {@link #syncAll} and for reads of a batch ({@link TierReader}): a batch's keys
     * land in many bucket files (each key's home bucket), and each flush or read waits on the device (on a shared
     * filesystem, on its storage service), so the waits overlap instead of adding up.
     */
    static final int IO_THREADS = 16;

    /** Threads for {@link #shareOut}, made on first use; idle ones end after a while. Guarded by {@code this}. */
    private ThreadPoolExecutor ioThreads;

    /**
     * Makes the writes through each open file of {@code written} durable and checks that it is still the bucket file at
     * its path (one stat of the path each; {@link OpenFiles#verify}), the files at once. The flush is the IO's one
     * fdatasync-equivalent before notify (an fsync of the registered fd for USRBIO).
     */
    Map<Path, Flushed> syncAll(Map<Path, OpenFiles.OpenFile<?>> written) {
        Map<Path, Flushed> flushed = new ConcurrentHashMap<>();
        List<Map.Entry<Path, OpenFiles.OpenFile<?>>> list = new ArrayList<>(written.entrySet());
        shareOut(0, list.size(), IO_THREADS - 1, () -> true, i -> {
            Path file = list.get(i).getKey();
            OpenFiles.OpenFile<?> through = list.get(i).getValue();
            try {
                try {
                    bucketIo.sync(file);
                } catch (java.nio.channels.ClosedChannelException interrupted) {
                    // Closed under this writer by an interrupt: the check below finds the file open again, or not, and
                    // what was written through a file no longer the one at the path is written again.
                }
                flushed.put(file, new Flushed(bucketIo.verify(file, through), null));
            } catch (IOException e) {
                flushed.put(file, new Flushed(null, e));
            }
        });
        return flushed;
    }

    /**
     * Hands the indexes {@code from..to-1} out in order, each once, to the calling thread and up to {@code helpers} of
     * this node's IO threads, which run {@code work} on each index they take for as long as {@code goOn} holds when
     * they come to take the next; returns, once every thread has stopped, the first index not taken ({@code to} when
     * all were). Since the indexes go out in order, what is not taken is always the tail. The calling thread takes its
     * first index without asking {@code goOn}, so that every call makes progress. A helper that has not started by the
     * time the calling thread runs out of work is called off, so a busy pool costs the caller no wait. {@code work}'s
     * writes are visible to the caller on return; a RuntimeException it threw is thrown here, after every thread has
     * stopped.
     */
    int shareOut(int from, int to, int helpers, java.util.function.BooleanSupplier goOn, java.util.function.IntConsumer work) {
        AtomicInteger next = new AtomicInteger(from);
        int wanted = Math.max(0, Math.min(helpers, to - from - 1));
        AtomicInteger notStarted = new AtomicInteger(wanted);
        java.util.concurrent.Semaphore finished = new java.util.concurrent.Semaphore(0);
        java.util.concurrent.atomic.AtomicReference<RuntimeException> failure = new java.util.concurrent.atomic.AtomicReference<>();
        if (wanted > 0) {
            ExecutorService threads = ioThreads();
            for (int h = 0; h < wanted; h++) {
                threads.execute(() -> {
                    if (!claim(notStarted)) {
                        return; // called off: the caller has stopped waiting for it
                    }
                    try {
                        take(next, to, goOn, work, true);
                    } catch (RuntimeException e) {
                        failure.compareAndSet(null, e);
                    } finally {
                        finished.release();
                    }
                });
            }
        }
        try {
            take(next, to, goOn, work, false);
        } catch (RuntimeException e) {
            failure.compareAndSet(null, e);
        }
        int started = wanted - notStarted.getAndSet(0);
        finished.acquireUninterruptibly(started); // every started helper is waited for: the caller acts on what each did
        if (failure.get() != null) {
            throw failure.get();
        }
        return Math.min(next.get(), to);
    }

    /** Takes one of {@code notStarted}'s helpers' places; false when none is left (the caller called them off). */
    private static boolean claim(AtomicInteger notStarted) {
        for (int left = notStarted.get(); left > 0; left = notStarted.get()) {
            if (notStarted.compareAndSet(left, left - 1)) {
                return true;
            }
        }
        return false;
    }

    private static void take(AtomicInteger next, int to, java.util.function.BooleanSupplier goOn, java.util.function.IntConsumer work, boolean askFirst) {
        for (boolean ask = askFirst; ; ask = true) {
            if (ask && !goOn.getAsBoolean()) {
                return;
            }
            int i = next.getAndIncrement();
            if (i >= to) {
                return;
            }
            work.accept(i);
        }
    }

    /** The most IO threads this node has had at once (0: none was ever needed). */
    synchronized int ioThreadsStarted() {
        return ioThreads == null ? 0 : ioThreads.getLargestPoolSize();
    }

    private synchronized ExecutorService ioThreads() {
        if (ioThreads == null) {
            AtomicInteger made = new AtomicInteger();
            ioThreads = new ThreadPoolExecutor(IO_THREADS, IO_THREADS, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), task -> {
                Thread thread = new Thread(task, "mcctl-io-" + made.incrementAndGet());
                thread.setDaemon(true);
                return thread;
            });
            ioThreads.allowCoreThreadTimeOut(true);
        }
        return ioThreads;
    }

    @Override
    public void close() throws IOException {
        synchronized (this) {
            if (ioThreads != null) {
                ioThreads.shutdown();
            }
        }
        dram.close();
        bucketIo.close();
    }
}
