package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.MasterOptions;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Progress;
import io.mcctl.cli.Table;
import io.mcctl.cli.util.Plurals;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.GetBucketBitmapResponse;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.tools.bitmap.BitmapReport;
import io.mcctl.tools.bitmap.BucketBitmap;
import io.mcctl.tools.bitmap.ClusterSummary;
import io.mcctl.tools.bitmap.SavedBitmaps;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl bitmap inspect}: one bucket's page bitmap in detail, or a summary across buckets; live or from saved state. */
@Command(name = "inspect", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Per-bucket page usage, free-run histogram, fragmentation, region map.",
                "Reads a live master's bitmaps (--master), or rebuilds them from saved state as the master does on restart: "
                        + "--state-dir recovers a state directory read-only (a torn log tail is reported, not cut), "
                        + "--snapshot reads one snapshot file.",
                "With --bucket N: capacity, used and free pages, whether the allocated count matches the bits set (live: the "
                        + "allocator's counter; saved state: the pages claimed), the allocator's hint (live only), the largest free run, "
                        + "free runs by length (1, 2-3, 4-7, ... pages), the fragmentation score (0 one run, towards 1 single pages) "
                        + "and a region map (# full, + partial, . free). Without --bucket: totals across buckets, the fullest and the "
                        + "most fragmented buckets and the largest free run anywhere."})
public final class BitmapInspectCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    MasterOptions client;

    @Mixin
    OutputMixin output;

    @Option(names = "--state-dir", paramLabel = "DIR", description = "Inspect the state a master would recover from DIR (default <root>/master).")
    Path stateDir;

    @Option(names = "--snapshot", paramLabel = "FILE", description = "Inspect the state a snapshot file holds.")
    Path snapshot;

    @Option(names = "--bucket", paramLabel = "N", description = "Show bucket N in detail: a decimal number, hex with 0x, or its file's "
            + "name (61, 0x3d and bucket_3d.data are one bucket) (default: a summary across buckets).")
    String bucketText;

    /** {@code --bucket}, parsed by {@link #checkInput()}. */
    private Integer bucket;

    @Option(names = "--regions", paramLabel = "N", defaultValue = "64",
            description = "Regions in a bucket's region map, each of ceil(pages / N) pages, so the map may have fewer (default: ${DEFAULT-VALUE}).")
    int regions;

    @Option(names = "--can-alloc", paramLabel = "N", description = "Would a run of N pages fit, and at which page does the first fit start.")
    Long canAlloc;

    @Option(names = "--extents", description = "List the bucket's free extents as FIRST_PAGE~PAGES (needs --bucket).")
    boolean extents;

    @Option(names = "--limit", paramLabel = "N", defaultValue = "1000",
            description = "At most N extents with --extents; the rest are counted (default: ${DEFAULT-VALUE}; 0: all).")
    long limit;

    /** Where the bitmaps came from and the source-specific figures for the report. */
    private record Source(String kind, String target, Map<String, Object> extra) {
    }

    @Override
    public Integer call() throws IOException {
        BitmapReport.Request request = checkInput();
        boolean live = stateDir == null && snapshot == null;
        List<BitmapReport> reports = new ArrayList<>();
        Source source;
        if (live) {
            source = readLive(request, reports);
        } else {
            source = readSaved(request, reports);
            io.mcctl.cli.LiveState.warnIfLive(spec.commandLine().getErr(), stateDir, snapshot); // after the input is found good
        }
        PrintWriter out = spec.commandLine().getOut();
        if (bucket != null) {
            BitmapReport report = reports.get(0);
            if (output.json()) {
                Map<String, Object> json = sourceJson(source);
                json.putAll(report.json());
                out.println(OutputMixin.toJson(json));
            } else {
                printBucket(out, source, report, live);
            }
        } else {
            ClusterSummary summary = ClusterSummary.of(reports, request.canAllocPages());
            if (output.json()) {
                Map<String, Object> json = sourceJson(source);
                json.putAll(summary.json());
                out.println(OutputMixin.toJson(json));
            } else {
                printSummary(out, source, summary, reports.isEmpty() ? 0 : reports.get(0).pageCount(), reports.isEmpty() ? 0 : reports.get(0).pageSize());
            }
        }
        out.flush();
        return ExitCodes.OK;
    }

    private BitmapReport.Request checkInput() {
        int sources = (spec.commandLine().getParseResult().hasMatchedOption("--master") ? 1 : 0) + (stateDir != null ? 1 : 0)
                + (snapshot != null ? 1 : 0);
        if (sources > 1) {
            throw new CliException(ExitCodes.USAGE, "--master, --state-dir and --snapshot exclude each other: give one of them");
        }
        if (bucketText != null) {
            try {
                bucket = BucketLayout.parseBucketNumber(bucketText);
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCodes.USAGE, "invalid --bucket " + e.getMessage());
            }
        }
        if (regions < 1) {
            throw new CliException(ExitCodes.USAGE, "invalid --regions " + regions + ": allowed is 1 or more");
        }
        if (canAlloc != null && canAlloc < 1) {
            throw new CliException(ExitCodes.USAGE, "invalid --can-alloc " + canAlloc + ": allowed is 1 or more pages");
        }
        if (limit < 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --limit " + limit + ": allowed is 0 (all) or more");
        }
        if (extents && bucket == null) {
            throw new CliException(ExitCodes.USAGE, "--extents lists one bucket's free extents: give --bucket N");
        }
        return new BitmapReport.Request(regions, canAlloc == null ? 0 : canAlloc, extents, limit);
    }

    private void checkBucket(int bucketCount) {
        if (bucket != null && bucket >= bucketCount) {
            throw new CliException(ExitCodes.USAGE, "invalid --bucket " + bucket + ": the layout has buckets 0.." + (bucketCount - 1));
        }
    }

    private Source readLive(BitmapReport.Request request, List<BitmapReport> reports) {
        try (MasterClient master = client.connect(spec)) {
            GetLayoutResponse layout = master.layout();
            checkBucket(layout.getBucketCount());
            int from = bucket == null ? 0 : bucket;
            int to = bucket == null ? layout.getBucketCount() : bucket + 1;
            try (Progress progress = new Progress("bitmap", to - from)) {
                for (int b = from; b < to; b++) {
                    GetBucketBitmapResponse bitmap = master.bucketBitmap(b);
                    long[] words = new long[bitmap.getWordsCount()];
                    for (int i = 0; i < words.length; i++) {
                        words[i] = bitmap.getWords(i);
                    }
                    reports.add(BitmapReport.of(b, new BucketBitmap(bitmap.getPageCount(), words), layout.getPageSize(), bitmap.getAllocated(),
                            bitmap.getHint(), request));
                    progress.advance(1);
                }
            }
            return new Source("master", master.target(), new LinkedHashMap<>());
        }
    }

    private Source readSaved(BitmapReport.Request request, List<BitmapReport> reports) throws IOException {
        SavedBitmaps saved = stateDir != null ? SavedBitmaps.fromStateDir(stateDir) : SavedBitmaps.fromSnapshot(snapshot);
        checkBucket(saved.layout().bucketCount());
        int from = bucket == null ? 0 : bucket;
        int to = bucket == null ? saved.layout().bucketCount() : bucket + 1;
        for (int b = from; b < to; b++) {
            reports.add(BitmapReport.of(b, saved.bitmap(b), saved.layout().pageSize(), saved.claimedPages(b), -1, request));
        }
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("claims", saved.claims());
        extra.put("invalid_claims", saved.invalidClaims());
        extra.put("overlapping_claims", saved.overlappingClaims());
        return new Source(saved.stateDir() ? "state_dir" : "snapshot", saved.source().toString(), extra);
    }

    private static Map<String, Object> sourceJson(Source source) {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("source", source.kind());
        json.put("target", source.target());
        json.putAll(source.extra());
        return json;
    }

    private static String sourceText(Source source) {
        return switch (source.kind()) {
            case "master" -> "master " + source.target();
            case "state_dir" -> "state directory " + source.target() + " (as recovered)";
            default -> "snapshot " + source.target();
        };
    }

    private static String percent(long part, long whole) {
        return whole == 0 ? "0%" : String.format(Locale.ROOT, "%.1f%%", 100.0 * part / whole);
    }

    private static String score(double score) {
        return String.format(Locale.ROOT, "%.3f", score);
    }

    private static void printSavedNotes(PrintWriter out, Source source) {
        Object invalid = source.extra().get("invalid_claims");
        Object overlapping = source.extra().get("overlapping_claims");
        if (invalid instanceof Long n && n > 0) {
            out.println("note: " + n + " claims lie outside their bucket and are not marked; 'mcctl snapshot verify' names them");
        }
        if (overlapping instanceof Long n && n > 0) {
            out.println("note: " + n + " claims overlap others; 'mcctl snapshot verify' names them");
        }
    }

    private void printBucket(PrintWriter out, Source source, BitmapReport r, boolean live) {
        Table head = new Table("source", sourceText(source));
        head.row("bucket", BucketLayout.describeBucket(r.bucket()));
        head.row("capacity", r.pageCount() + " pages of " + r.pageSize() + " bytes");
        head.row("used", r.usedPages() + " pages (" + percent(r.usedPages(), r.pageCount()) + ")");
        head.row("free", r.freePages() + " pages in " + Plurals.plural(r.space().freeRunCount(), "run"));
        head.row("counter", (live ? "allocator counts " + r.counter() : "state claims " + r.counter()) + ", " + r.allocatedBits() + " bits set: "
                + (r.counterMatches() ? "match" : "MISMATCH by " + (r.counter() - r.allocatedBits())));
        if (live) {
            head.row("hint", "page " + r.hint());
        }
        head.row("largest free run", r.space().largestFreeRun() + " pages");
        head.row("fragmentation", score(r.space().fragmentationScore()));
        if (r.canAllocPages() > 0) {
            head.row("can alloc " + r.canAllocPages(), r.canAllocFirst() >= 0 ? "yes, first fit at page " + r.canAllocFirst()
                    : "no: the largest free run is " + r.space().largestFreeRun() + " pages");
        }
        out.print(head.render());
        out.println();
        Table histogram = new Table("RUN_PAGES", "RUNS");
        long[] classes = r.space().runLengthHistogram();
        for (int c = 0; c < classes.length; c++) {
            histogram.row(BitmapReport.classLabel(c), classes[c]);
        }
        if (classes.length == 0) {
            out.println("no free runs");
        } else {
            out.print(histogram.render());
        }
        out.println();
        out.println("region map: " + r.space().regions().size() + " regions of " + r.space().regionPages() + " pages ("
                + BitmapReport.FULL + " full, " + BitmapReport.PARTIAL + " partial, " + BitmapReport.FREE + " free)");
        for (String line : r.regionMapLines()) {
            out.println("  " + line);
        }
        if (r.extents() != null) {
            out.println();
            out.println("free extents (FIRST_PAGE~PAGES):");
            StringBuilder line = new StringBuilder();
            int onLine = 0;
            for (BitmapReport.Extent e : r.extents()) {
                line.append(onLine == 0 ? "  " : " ").append(e);
                if (++onLine == 8) {
                    out.println(line);
                    line.setLength(0);
                    onLine = 0;
                }
            }
            if (onLine > 0) {
                out.println(line);
            }
            long rest = r.extentCount() - r.extents().size();
            out.println(Plurals.plural(r.extents().size(), "extent") + (rest > 0 ? ", " + rest + " more not listed (--limit)" : ""));
        }
        printSavedNotes(out, source);
    }

    private void printSummary(PrintWriter out, Source source, ClusterSummary s, long pagesPerBucket, long pageSize) {
        Table head = new Table("source", sourceText(source));
        head.row("buckets", s.buckets() + " of " + pagesPerBucket + " pages of " + pageSize + " bytes");
        head.row("total", s.totalPages() + " pages");
        head.row("used", s.usedPages() + " pages (" + percent(s.usedPages(), s.totalPages()) + ")");
        head.row("free", s.freePages() + " pages");
        head.row("largest free run", s.largestFreeRun() + " pages" + (s.largestBucket() >= 0 ? " (bucket " + s.largestBucket() + ")" : ""));
        head.row("counters", s.counterMismatches() == 0 ? "all match the bits set"
                : s.counterMismatches() + " buckets do not match their bits set (see --bucket N)");
        if (s.canAllocPages() > 0) {
            head.row("can alloc " + s.canAllocPages(), s.canAllocBucket() >= 0
                    ? "yes, in " + s.canAllocBuckets() + " buckets; first fit at page " + s.canAllocFirst() + " of bucket " + s.canAllocBucket()
                    : "no bucket has a free run that long");
        }
        out.print(head.render());
        out.println();
        out.println("fullest buckets:");
        out.print(topTable(s.fullest()).render());
        out.println();
        out.println("most fragmented buckets:");
        if (s.mostFragmented().isEmpty()) {
            out.println("  none has free pages");
        } else {
            out.print(topTable(s.mostFragmented()).render());
        }
        printSavedNotes(out, source);
    }

    private static Table topTable(List<BitmapReport> reports) {
        Table table = new Table("BUCKET", "USED", "CAPACITY", "USED%", "FREE_RUNS", "LARGEST_FREE_RUN", "FRAGMENTATION");
        for (BitmapReport r : reports) {
            table.row(r.bucket(), r.usedPages(), r.pageCount(), percent(r.usedPages(), r.pageCount()), r.space().freeRunCount(),
                    r.space().largestFreeRun(), score(r.space().fragmentationScore()));
        }
        return table;
    }
}
