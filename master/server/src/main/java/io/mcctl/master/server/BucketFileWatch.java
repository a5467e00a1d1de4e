package io.mcctl.master.server;

import io.mcctl.master.proto.v1.BucketFileState;
import io.mcctl.master.service.BucketHealth;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The master's watch over its bucket files: a stat of each path, against the file (device and inode) the master laid
 * out at its start, sets each bucket's {@link BucketHealth} in the page service, which allocation reads. A deleted file
 * makes its bucket MISSING; another file at the path makes it REPLACED, until that file has stayed the same and at least
 * the bucket size long over two checks in a row, when the master adopts it (a copy restored by an operator, or a file
 * created again); a bucket is HEALTHY again from then on. Each change of a bucket's health is one log line.
 *
 * <p>Every bucket is checked every {@code bucket_check_interval} ({@link #checkAllSoon}), and a bucket whose writer gave
 * up an allocation at the reaper's next tick ({@link #suspect}, from any thread, never blocking; {@link
 * #checkSuspectedSoon}). The housekeeping thread only hands the checks to a thread of this watch's own: a stat on a
 * shared filesystem that hangs must not hold up the reaper. While a check runs, another asked for is dropped (the next
 * interval or tick asks again), so a hung stat holds one thread and nothing queues behind it.
 *
 * <p>Thread safety: the checks themselves run one at a time under this object's monitor, which guards
 * {@link #laidOut} and {@link #candidates}; it nests inside no other lock and takes none but the logger's.
 */
public final class BucketFileWatch {

    private static final Logger LOG = LoggerFactory.getLogger(BucketFileWatch.class);

    /** What a stat of a bucket's path found: its file key (null on a filesystem that names none) and size; null: nothing there. */
    private record Found(Object fileKey, long size, boolean regular) {
    }

    private final PageService pages;
    /** Per bucket, the file the master laid out or adopted (its file key). Guarded by this. */
    private final Object[] laidOut;
    /** Per bucket, the other file found at the path at the last check, while REPLACED; null otherwise. Guarded by this. */
    private final Found[] candidates;
    /** Per bucket, 1 while a check asked for by {@link #suspect} waits for the reaper's tick. */
    private final AtomicIntegerArray suspected;
    /** Set by {@link #suspect} after it marks a bucket, so that a tick with nothing to check reads one field. */
    private volatile boolean anySuspected;

    /**
     * Takes the file now at each bucket's path as the one laid out: call it right after the root was laid out (the
     * files are there then, each created or extended if it had to be).
     */
    public BucketFileWatch(PageService pages) {
        this.pages = pages;
        int buckets = pages.layout().bucketCount();
        this.laidOut = new Object[buckets];
        this.candidates = new Found[buckets];
        this.suspected = new AtomicIntegerArray(buckets);
        synchronized (this) {
            for (int b = 0; b < buckets; b++) {
                Found found = stat(path(b));
                laidOut[b] = found == null ? null : found.fileKey();
                if (found == null) {
                    transition(b, BucketHealth.MISSING, null);
                }
            }
        }
    }

    private Path path(int bucket) {
        return pages.layout().bucketPath(bucket);
    }

    /** Runs the checks asked for: one thread at most, made when needed and ended when idle; a check asked for while one runs is dropped. */
    private final ThreadPoolExecutor checker = new ThreadPoolExecutor(0, 1, 1, TimeUnit.SECONDS, new SynchronousQueue<>(), task -> {
        Thread thread = new Thread(task, "mcctl-bucket-file-check");
        thread.setDaemon(true);
        return thread;
    }, new ThreadPoolExecutor.DiscardPolicy());

    /** Checks every bucket's file on this watch's thread, unless a check runs there now. */
    public void checkAllSoon() {
        checker.execute(() -> {
            try {
                checkAll();
            } catch (RuntimeException e) {
                LOG.error("bucket file check failed; will retry at the next interval", e);
            }
        });
    }

    /** Checks the buckets {@link #suspect} asked for on this watch's thread, unless a check runs there now (the next tick asks again). */
    public void checkSuspectedSoon() {
        if (anySuspected) {
            checker.execute(this::checkSuspected);
        }
    }

    /** Checks every bucket's file. */
    public synchronized void checkAll() {
        for (int b = 0; b < laidOut.length; b++) {
            check(b);
        }
    }

    /**
     * Asks for a check of {@code bucket}'s file at the reaper's next tick ({@link #checkSuspectedSoon}): a writer gave up an
     * allocation there, perhaps because the file is gone. Any thread; never blocks.
     */
    public void suspect(int bucket) {
        if (bucket >= 0 && bucket < laidOut.length) {
            suspected.set(bucket, 1);
            anySuspected = true;
        }
    }

    /** Checks the buckets {@link #suspect} asked for since the last call. */
    void checkSuspected() {
        if (!anySuspected) {
            return;
        }
        anySuspected = false;
        for (int b = 0; b < laidOut.length; b++) {
            if (suspected.getAndSet(b, 0) == 1) {
                synchronized (this) {
                    check(b);
                }
            }
        }
    }

    /** Checks one bucket's file and records its health. Caller holds this monitor. */
    private void check(int bucket) {
        Found found = stat(path(bucket));
        if (found == null) {
            candidates[bucket] = null;
            transition(bucket, BucketHealth.MISSING, null);
            return;
        }
        if (Objects.equals(found.fileKey(), laidOut[bucket])) {
            candidates[bucket] = null;
            transition(bucket, BucketHealth.HEALTHY, null);
            return;
        }
        Found before = candidates[bucket];
        long bucketSize = pages.layout().bucketSize();
        if (before != null && before.equals(found) && found.regular() && found.size() >= bucketSize) {
            Object replaced = laidOut[bucket];
            laidOut[bucket] = found.fileKey();
            candidates[bucket] = null;
            transition(bucket, BucketHealth.HEALTHY, "adopted the file now at the path (" + found.fileKey() + ", was " + replaced + ")");
            return;
        }
        candidates[bucket] = found;
        transition(bucket, BucketHealth.REPLACED, found.regular() ? found.size() + " bytes, " + found.fileKey() + ", laid out as "
                + laidOut[bucket] : "not a regular file");
    }

    /** Records {@code now}; a change is logged in one line. Caller holds this monitor. */
    private void transition(int bucket, BucketHealth now, String detail) {
        BucketHealth before = pages.setBucketHealth(bucket, now);
        if (before == now) {
            return;
        }
        Path path = path(bucket);
        long pagesThere = pages.allocator(bucket).allocatedCount();
        switch (now) {
            case MISSING -> LOG.warn("bucket file {} ({}) is missing: allocations skip bucket {} until it is back; its {} allocated pages "
                    + "cannot be read (misses); restore the file, or restart the master to create it empty", bucket, path, bucket, pagesThere);
            case REPLACED -> LOG.warn("bucket file {} ({}) is not the file the master laid out ({}): allocations skip bucket {} until it "
                    + "stays the same file, at least the bucket size long, for a check; its {} allocated pages are readable only if it is "
                    + "a copy of the old file", bucket, path, detail, bucket, pagesThere);
            case HEALTHY -> LOG.info("bucket file {} ({}) is back{}: allocations into bucket {} resume", bucket, path,
                    detail == null ? "" : ", " + detail, bucket);
            default -> throw new IllegalStateException("unknown bucket health " + now);
        }
    }

    /** What is at {@code path}, or null when nothing is (any other failure to stat counts as nothing there, and is logged at the change). */
    private static Found stat(Path path) {
        try {
            BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class);
            return new Found(attributes.fileKey(), attributes.size(), attributes.isRegularFile());
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            return new Found(e.getClass().getSimpleName() + ": " + e.getMessage(), -1, false); // never a laid-out file key: REPLACED
        }
    }

    /** The buckets that take no allocations, one "bucket N: state (path)" each, for /health. */
    public static List<String> describeUnusable(PageService pages) {
        List<String> lines = new ArrayList<>();
        for (int b = 0; b < pages.layout().bucketCount(); b++) {
            BucketHealth health = pages.bucketHealth(b);
            if (health != BucketHealth.HEALTHY) {
                lines.add("bucket " + b + ": file " + health.name().toLowerCase(java.util.Locale.ROOT) + " (" + pages.layout().bucketPath(b) + ")");
            }
        }
        return lines;
    }

    /** A bucket's health as GetStats sends it. */
    public static BucketFileState wireState(BucketHealth health) {
        return switch (health) {
            case HEALTHY -> BucketFileState.BUCKET_FILE_HEALTHY;
            case MISSING -> BucketFileState.BUCKET_FILE_MISSING;
            case REPLACED -> BucketFileState.BUCKET_FILE_REPLACED;
        };
    }
}
