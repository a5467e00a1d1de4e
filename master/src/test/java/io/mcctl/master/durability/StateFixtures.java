package io.mcctl.master.durability;

import io.mcctl.master.service.StateVisitor;
import io.mcctl.master.service.Restorer;
import io.mcctl.master.service.QuarantinedRange;
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
        pages.visit(new StateVisitor() {
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
            public void quarantined(QuarantinedRange q) {
                lines.add("quarantine bucket " + q.bucket() + " pages " + q.firstPage() + "+" + q.pages() + " until " + q.releaseMs());
            }

            @Override
            public void held(QuarantinedRange q) {
                lines.add(holdLine(q.bucket(), q.firstPage(), q.pages(), q.releaseMs()));
            }
        });
        pages.quotas().forEach((tenant, bytes) -> lines.add("quota " + tenant + " " + bytes));
        // Who holds a task is not logged (a restart queues every task again): only what is.
        pages.promotions().export().forEach(t -> lines.add("promotion " + t.tenant() + "/" + t.key() + " " + text(ChangeCodec.record(t.placement()))
                + " queued " + t.queuedMs()));
        lines.add("layout: buckets of " + pages.layout().bucketSize() + " bytes, " + pages.allocator(0).pageCount() + " pages");
        for (int b = 0; b < pages.layout().bucketCount(); b++) {
            lines.add(bucketLine(b, pages.allocator(b).bitmapWords(), pages.allocator(b).pageCount()));
        }
        lines.add("counts: mappings " + pages.mappingCount() + ", in flight " + pages.inFlightCount() + ", quarantined pages "
                + pages.quarantinedPageCount());
        return new ArrayList<>(mergeQuarantine(lines));
    }

    private static String holdLine(int bucket, long firstPage, long pages, long releaseMs) {
        return "hold bucket " + bucket + " pages " + firstPage + "+" + pages + " until " + releaseMs;
    }

    private static final java.util.regex.Pattern HOLD = java.util.regex.Pattern.compile("hold bucket (\\d+) pages (\\d+)\\+(\\d+) until (-?\\d+)");

    private static final java.util.regex.Pattern QUARANTINE = java.util.regex.Pattern.compile("quarantine bucket (\\d+) pages (\\d+)\\+(\\d+) until (-?\\d+)");

    /**
     * The quarantine lines with neighbouring ranges of one bucket and one release time as one: the same pages held as
     * long, whether a hold was split where a page was claimed when it was made (live) or made whole later (recovered).
     */
    static TreeSet<String> mergeQuarantine(TreeSet<String> lines) {
        TreeSet<String> out = new TreeSet<>();
        List<long[]> ranges = new ArrayList<>();
        for (String line : lines) {
            java.util.regex.Matcher m = QUARANTINE.matcher(line);
            if (m.matches()) {
                ranges.add(new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3)), Long.parseLong(m.group(4))});
            } else {
                out.add(line);
            }
        }
        ranges.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
        long[] run = null;
        for (long[] r : ranges) {
            if (run != null && run[0] == r[0] && run[1] + run[2] == r[1] && run[3] == r[3]) {
                run[2] += r[2];
                continue;
            }
            if (run != null) {
                out.add("quarantine bucket " + run[0] + " pages " + run[1] + "+" + run[2] + " until " + run[3]);
            }
            run = r.clone();
        }
        if (run != null) {
            out.add("quarantine bucket " + run[0] + " pages " + run[1] + "+" + run[2] + " until " + run[3]);
        }
        return out;
    }

    /**
     * A live service's state as a crash leaves it for recovery: what {@link #dump} shows, plus its reservations not
     * closed and its bitmaps, from which {@link #afterCrash} derives what recovery must rebuild.
     */
    record Captured(List<String> lines, List<Change.Reserved> reservations, long[][] bitmaps, long quarantinedPages) {

        /**
         * The dump a recovery at {@code recovered}'s clock must give: this state without the holds an earlier recovery
         * made (each recovery derives them afresh), and every reservation not closed whose hold is still ahead holding
         * its pages that nothing claims until its hold (the longest hold first, as {@link Restorer#finish}
         * does).
         */
        List<String> afterCrash(PageService recovered) {
            long nowMs = recovered.nowWallMillis();
            TreeSet<String> out = new TreeSet<>();
            long[][] words = new long[bitmaps.length][];
            for (int b = 0; b < bitmaps.length; b++) {
                words[b] = bitmaps[b].clone();
            }
            long quarantinedPages = this.quarantinedPages;
            for (String line : lines) {
                java.util.regex.Matcher held = HOLD.matcher(line);
                if (held.matches()) {
                    int bucket = Integer.parseInt(held.group(1));
                    long first = Long.parseLong(held.group(2));
                    long count = Long.parseLong(held.group(3));
                    for (long p = first; p < first + count; p++) {
                        words[bucket][(int) (p >>> 6)] &= ~(1L << p);
                    }
                    quarantinedPages -= count;
                } else if (!line.startsWith("bucket ") && !line.startsWith("counts: ")) {
                    out.add(line);
                }
            }
            long pageCount = Long.parseLong(lines.stream().filter(l -> l.startsWith("layout: ")).findFirst().orElseThrow()
                    .replaceAll(".* (\\d+) pages$", "$1"));
            List<Change.Reserved> byHold = new ArrayList<>(reservations);
            byHold.sort((a, b) -> Long.compare(b.holdUntilMs(), a.holdUntilMs()));
            long held = 0;
            for (Change.Reserved r : byHold) {
                if (r.holdUntilMs() <= nowMs) {
                    continue;
                }
                long end = Math.min(r.firstPage() + r.pages(), pageCount);
                long runStart = -1;
                for (long page = r.firstPage(); page <= end; page++) {
                    boolean free = page < end && (words[r.bucket()][(int) (page >>> 6)] & (1L << page)) == 0;
                    if (free && runStart < 0) {
                        runStart = page;
                    } else if (!free && runStart >= 0) {
                        out.add(holdLine(r.bucket(), runStart, page - runStart, r.holdUntilMs()));
                        for (long p = runStart; p < page; p++) {
                            words[r.bucket()][(int) (p >>> 6)] |= 1L << p;
                        }
                        held += page - runStart;
                        runStart = -1;
                    }
                }
            }
            for (int b = 0; b < words.length; b++) {
                out.add(bucketLine(b, words[b], pageCount));
            }
            String counts = lines.stream().filter(l -> l.startsWith("counts: ")).findFirst().orElseThrow();
            out.add(counts.replaceAll("quarantined pages \\d+$", "quarantined pages " + (quarantinedPages + held)));
            return new ArrayList<>(mergeQuarantine(out));
        }
    }

    /** A live service's state, with what a crash would make recovery hold: compare {@link Captured#afterCrash} with the recovered dump. */
    static Captured capture(PageService pages) throws IOException {
        List<Change.Reserved> reservations = pages.reservations();
        long[][] bitmaps = new long[pages.layout().bucketCount()][];
        for (int b = 0; b < bitmaps.length; b++) {
            bitmaps[b] = pages.allocator(b).bitmapWords();
        }
        return new Captured(dump(pages), reservations, bitmaps, pages.quarantinedPageCount());
    }

    private static String bucketLine(int bucket, long[] words, long pageCount) {
        long allocated = 0;
        for (long page = 0; page < pageCount; page++) {
            if ((words[(int) (page >>> 6)] & (1L << page)) != 0) {
                allocated++;
            }
        }
        return "bucket " + bucket + " allocated " + allocated + " bitmap " + Arrays.hashCode(words);
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
                () -> PageService.builder(layout).allocationDeadline(Duration.ofSeconds(60)).readLease(Duration.ofSeconds(5)).nanoClock(nanoClock).build());
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
