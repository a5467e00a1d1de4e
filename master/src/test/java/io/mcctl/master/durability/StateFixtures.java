package io.mcctl.master.durability;

import static org.junit.jupiter.api.Assertions.fail;

import io.mcctl.master.proto.v1.Allocated;
import io.mcctl.master.proto.v1.MappingRecord;
import io.mcctl.master.proto.v1.PendingRecord;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.proto.v1.WalRecord;
import io.mcctl.master.service.Change;
import io.mcctl.master.service.PageService;
import io.mcctl.master.service.Placement;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;

/** Helpers shared by the durability tests: records, state dumps of a page service, recovery into a fresh one. */
final class StateFixtures {

    static final long PAGE = 4096;

    private StateFixtures() {
    }

    /** 8 buckets of 1 MiB in 4 KiB pages; the page service never touches the files. */
    static BucketLayout layout(Path root) {
        return new BucketLayout(root, 8, PAGE, 1 << 20);
    }

    static LayoutFile.Record layoutRecord(BucketLayout layout) {
        return new LayoutFile.Record("test-cluster", LayoutFile.FORMAT_VERSION, layout.bucketCount(), layout.pageSize(), layout.bucketSize());
    }

    /** An Allocated record for {@code key}; sequence and time are set by the log. */
    static WalRecord.Builder allocated(String key) {
        return WalRecord.newBuilder().setAllocated(Allocated.newBuilder().setTenantId("t").setKey(key)
                .setPlacement(PlacementRecord.newBuilder().setBucket(1).setOffset(4096).setSize(100)));
    }

    /**
     * Everything a page service holds, one sorted line per fact: every committed mapping, every in-flight
     * allocation (placement, deadline, overwrite), every quarantined range, each bucket's allocated count and
     * bitmap, and the counters. Two services with equal dumps answer every lookup alike.
     */
    static List<String> dump(PageService pages) throws IOException {
        TreeSet<String> lines = new TreeSet<>();
        pages.visit(new PageService.StateVisitor() {
            @Override
            public void mapping(String tenant, String key, Placement p, boolean pinned) {
                lines.add("mapping " + tenant + "/" + key + " " + text(ChangeCodec.record(p)) + (pinned ? " pinned" : ""));
            }

            @Override
            public void inFlight(Change.Allocated a) {
                lines.add("in-flight " + a.tenant() + "/" + a.key() + " " + text(ChangeCodec.record(a.placement())) + " deadline " + a.deadlineMs()
                        + " overwrite " + a.overwrite());
            }

            @Override
            public void quarantined(PageService.QuarantinedRange q) {
                lines.add("quarantine bucket " + q.bucket() + " pages " + q.firstPage() + "+" + q.pages() + " until " + q.releaseMs());
            }
        });
        pages.quotas().forEach((tenant, bytes) -> lines.add("quota " + tenant + " " + bytes));
        // Who holds a task is not logged (a restart queues every task again): only what is.
        pages.promotions().export().forEach(t -> lines.add("promotion " + t.tenant() + "/" + t.key() + " " + text(ChangeCodec.record(t.placement()))
                + " queued " + t.queuedMs()));
        lines.add("layout: buckets of " + pages.layout().bucketSize() + " bytes, " + pages.allocator(0).pageCount() + " pages");
        for (int b = 0; b < pages.layout().bucketCount(); b++) {
            lines.add("bucket " + b + " allocated " + pages.allocator(b).allocatedCount() + " bitmap "
                    + Arrays.hashCode(pages.allocator(b).bitmapWords()));
        }
        lines.add("counts: mappings " + pages.mappingCount() + ", in flight " + pages.inFlightCount() + ", quarantined pages "
                + pages.quarantinedPageCount());
        return new ArrayList<>(lines);
    }

    static String text(PlacementRecord p) {
        return "bucket " + p.getBucket() + " @" + p.getOffset() + "+" + p.getSize() + " crc " + Integer.toHexString(p.getCrc32C());
    }

    /** Fails naming the first differences when the two dumps differ. */
    static void assertSameState(List<String> expected, List<String> actual, String what) {
        if (expected.equals(actual)) {
            return;
        }
        TreeSet<String> missing = new TreeSet<>(expected);
        missing.removeAll(actual);
        TreeSet<String> extra = new TreeSet<>(actual);
        extra.removeAll(expected);
        fail(what + ": the recovered state differs from the live one\n  only live:      " + first(missing) + "\n  only recovered: " + first(extra));
    }

    private static String first(TreeSet<String> lines) {
        List<String> some = new ArrayList<>();
        for (String line : lines) {
            if (some.size() == 12) {
                some.add("... " + (lines.size() - 12) + " more");
                break;
            }
            some.add(line);
        }
        return lines.size() + " " + some;
    }

    /** What {@link io.mcctl.master.server.MasterServer#start} does before serving: recover straight into a new service. */
    record Restored(StateRecovery.Recovered recovered, PageService pages) {
    }

    static Restored recover(Path stateDir, BucketLayout layout, boolean wal) throws IOException {
        return recover(stateDir, layout, wal, System::nanoTime);
    }

    static Restored recover(Path stateDir, BucketLayout layout, boolean wal, java.util.function.LongSupplier nanoClock) throws IOException {
        StateRecovery.Recovered recovered = StateRecovery.recover(stateDir, layout, wal,
                () -> new PageService(layout, Duration.ofSeconds(60), Duration.ofSeconds(5), nanoClock));
        return new Restored(recovered, recovered.pages);
    }

    /** Inverts every bit of the byte at {@code offset}. */
    static void flipByte(Path file, long offset) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(offset);
            int b = raf.read();
            raf.seek(offset);
            raf.write(b ^ 0xFF);
        }
    }
}
