package io.mcctl.master.server;

import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GrowLayoutResponse;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.master.service.PageService;
import io.mcctl.master.service.Result;
import io.mcctl.storage.layout.BucketFiles;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.mcctl.storage.layout.SpaceBacking;
import java.io.IOException;
import java.nio.file.Files;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Grows every bucket of a serving master to a larger bucket size, in an order that a kill -9 at any point leaves a
 * state that starts and that fsck finds consistent (docs/durability.md):
 *
 * <ol>
 *   <li>check the size and the filesystem's free space; a refusal changes nothing;</li>
 *   <li>extend every bucket file (ftruncate upwards) and fsync it, and reserve the blocks when asked: the files are at
 *       least as large as any record of the layout will ever say;</li>
 *   <li>log the grow ({@code LayoutGrown}) and apply it, growing the allocators while allocations go on; wait until the
 *       log has it on disk;</li>
 *   <li>rewrite {@code mooncake.layout.json} atomically (temp file, fsync, rename, fsync of the directory).</li>
 * </ol>
 *
 * A start reconciles the record with the log ({@link #reconcile}): the larger bucket size wins, since buckets only
 * grow and no size is recorded before its files have it. One grow at a time (this object's monitor).
 */
public final class LayoutGrowth {

    private static final Logger LOG = LoggerFactory.getLogger(LayoutGrowth.class);

    /**
     * For process tests of a crash in the middle of a grow: {@code POINT:MILLIS} pauses the grow that long after the step
     * named (extending: half of the files extended; extended; logged; recorded), announced first in the master's log.
     * Inert when unset.
     */
    static final String PAUSE_HOOK = "MCCTL_TEST_PAUSE_IN_GROW";

    private final PageService pages;
    private final MasterGrpcService.Durability durability;

    LayoutGrowth(PageService pages, MasterGrpcService.Durability durability) {
        this.pages = pages;
        this.durability = durability;
    }

    synchronized Result<GrowLayoutResponse> grow(long bucketSize, boolean preallocate) throws IOException {
        BucketLayout current = pages.layout();
        String invalid = pages.checkGrow(bucketSize);
        if (invalid != null) {
            return Result.error(ErrorCode.INVALID_PARAMS, invalid);
        }
        BucketLayout grown = new BucketLayout(current.root(), current.bucketCount(), current.pageSize(), bucketSize);
        SpaceBacking space = SpaceBacking.measure(grown);
        long added = SpaceBacking.saturatedProduct(current.bucketCount(), bucketSize - current.bucketSize());
        long needed = preallocate ? space.unbackedBytes() : added;
        if (needed > space.freeBytes()) {
            return Result.error(ErrorCode.NO_AVAILABLE_HANDLE, "bucket size " + bucketSize + " needs " + SpaceBacking.bytes(needed)
                    + (preallocate ? " of real space for the whole layout" : " more for " + current.bucketCount() + " buckets")
                    + " but the filesystem under " + current.root() + " has " + SpaceBacking.bytes(space.freeBytes())
                    + " free; allowed is a size whose growth fits the free space: free space or grow by less");
        }
        int extended = BucketFiles.extend(grown, done -> {
            if (done == current.bucketCount() / 2) {
                pause("extending");
            }
        });
        if (preallocate) {
            SpaceBacking.preallocate(grown);
        }
        pause("extended");
        long previous = orThrow(pages.growLayout(bucketSize));
        awaitDurable();
        pause("logged");
        recordLayout(grown);
        pause("recorded");
        LOG.info("layout grown: {} buckets of {} bytes, were {} ({} files extended{})", grown.bucketCount(), bucketSize, previous, extended,
                preallocate ? ", space reserved" : "");
        return Result.ok(GrowLayoutResponse.newBuilder().setPreviousBucketSize(previous).setBucketSize(bucketSize)
                .setFilesExtended(extended).setPagesTotal(grown.pagesPerBucket() * grown.bucketCount()).build());
    }

    /**
     * Brings the root in line with the layout a start recovered (from the log, or a snapshot, after a crash between
     * logging a grow and rewriting the record): extends any file still short and rewrites the record. A record that
     * already says so is left as it is.
     *
     * @return the record in force
     */
    public static LayoutFile.Record reconcile(BucketLayout recovered, LayoutFile.Record record) throws IOException {
        if (record.bucketSize() >= recovered.bucketSize()) {
            return record;
        }
        BucketFiles.extend(recovered, done -> { });
        LayoutFile.Record grown = LayoutFile.withBucketSize(record, recovered.bucketSize());
        LayoutFile.rewrite(recovered.layoutFile(), grown);
        LOG.info("layout: the log holds a grow to {}-byte buckets that {} did not record yet (a crash during mcctl layout grow): recorded now",
                recovered.bucketSize(), recovered.layoutFile());
        return grown;
    }

    /**
     * The layout a master starts with: the configured one, or, when the root's record has the same bucket count and page
     * size and larger buckets, the record's (the root was grown since the settings were written).
     */
    public static BucketLayout inForce(BucketLayout configured) throws IOException {
        if (!Files.exists(configured.layoutFile())) {
            return configured;
        }
        LayoutFile.Record record = LayoutFile.read(configured.layoutFile());
        if (record.bucketCount() != configured.bucketCount() || record.pageSize() != configured.pageSize()
                || record.bucketSize() <= configured.bucketSize()) {
            return configured; // the same, or a mismatch that laying out the root names
        }
        LOG.info("layout: bucket size {} from {} (grown from the configured {})", record.bucketSize(), configured.layoutFile(),
                configured.bucketSize());
        return new BucketLayout(configured.root(), configured.bucketCount(), configured.pageSize(), record.bucketSize());
    }

    private void recordLayout(BucketLayout grown) throws IOException {
        LayoutFile.Record record = LayoutFile.read(grown.layoutFile());
        if (record.bucketSize() < grown.bucketSize()) {
            LayoutFile.rewrite(grown.layoutFile(), LayoutFile.withBucketSize(record, grown.bucketSize()));
        }
    }

    private void awaitDurable() throws IOException {
        CompletableFuture<Void> durable = durability.whenDurable(io.mcctl.master.service.AnswerBarrier.EVERYTHING);
        try {
            durable.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted while the layout grow was logged");
        } catch (ExecutionException e) {
            throw new IOException("the log did not take the layout grow: " + e.getCause().getMessage(), e.getCause());
        }
    }

    private static <T> T orThrow(Result<T> result) {
        if (!result.isOk()) {
            throw WireErrors.exception(result.error(), result.message());
        }
        return result.value();
    }

    private static void pause(String point) {
        String hook = System.getenv(PAUSE_HOOK);
        if (hook == null || !hook.startsWith(point + ":")) {
            return;
        }
        long millis;
        try {
            millis = Long.parseLong(hook.substring(point.length() + 1).trim());
        } catch (NumberFormatException e) {
            return;
        }
        LOG.warn("layout grow: test hook: paused after {} for {} ms", point.toLowerCase(Locale.ROOT), millis);
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
