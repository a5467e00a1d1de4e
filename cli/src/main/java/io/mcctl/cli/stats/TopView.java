package io.mcctl.cli.stats;

import io.mcctl.master.proto.v1.BucketStats;
import io.mcctl.master.proto.v1.GetStatsResponse;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The frames of {@code mcctl top}: each one the tier's state from a GetStats answer, with rates from the change of the
 * totals since the frame before. Not thread-safe: one view per loop.
 */
public final class TopView {

    /** Cell glyphs from empty to full, on a terminal that shows Unicode. */
    static final String BLOCKS = " \u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588";
    /** The same ramp in ASCII, for plain output and terminals without Unicode. */
    static final String ASCII = " .:-=+*#%@";
    /** Most rows of bucket cells: past that, neighbouring buckets share a cell. */
    static final int MAX_BUCKET_ROWS = 8;
    static final int MAX_CELLS_PER_ROW = 64;

    private final String target;
    private final String every;
    private final boolean unicode;
    private TierStatsReport previous;
    private long previousNanos;

    public TopView(String target, String every, boolean unicode) {
        this.target = target;
        this.every = every;
        this.unicode = unicode;
    }

    /** One frame of at most {@code width} columns, with at most {@code tenantRows} tenants; remembers it for the next rates. */
    public List<String> frame(TierStatsReport now, long nanos, LocalTime clock, int width, int tenantRows, String hint) {
        List<String> lines = new ArrayList<>();
        GetStatsResponse s = now.stats();
        lines.add("mcctl top  " + target + "  every " + every + "  " + clock.format(DateTimeFormatter.ofPattern("HH:mm:ss")) + hint);
        if (!s.getChangesRefused().isEmpty()) {
            lines.add("CHANGES REFUSED: " + s.getChangesRefused());
        }
        lines.add(String.format(Locale.ROOT, "pages      %s used (%d/%d), %d in flight, %d quarantined; %d mappings in %d tenants",
                TierStatsReport.percent(now.usedShare()), s.getPagesAllocated(), s.getPagesTotal(), s.getInFlightAllocations(),
                s.getQuarantinedPages(), s.getMappings(), s.getTenants()));
        lines.add(String.format(Locale.ROOT, "eviction   %s; %d objects evicted in %d runs; oldest use %s", s.getEviction()
                        ? "on " + TierStatsReport.percent(s.getEvictionHighWatermark()) + " -> " + TierStatsReport.percent(s.getEvictionLowWatermark())
                        : "off", s.getEvictedKeys(), s.getEvictionRuns(),
                s.getMappings() == 0 ? "-" : TierStatsReport.age(s.getOldestUseAgeMs()) + " ago"));
        Rates rates = previous == null ? null : rates(previous, now, (nanos - previousNanos) / 1e9);
        lines.add("hit ratio  " + TierStatsReport.percent(TierStatsReport.hitRatio(now.hits(), now.misses())) + " since start, "
                + (rates == null ? "-" : TierStatsReport.percent(rates.hitRatio())) + " this interval");
        lines.add(rates == null ? "per second -" : String.format(Locale.ROOT, "per second %s page allocations, %s evictions, %s lookups",
                rate(rates.allocations()), rate(rates.evictions()), rate(rates.lookups())));
        lines.add("");
        lines.addAll(bucketLines(s.getBucketsList(), width));
        if (s.getTenantStatsCount() > 0 && tenantRows > 0) {
            lines.add("");
            lines.addAll(List.of(now.tenantTable(tenantRows).split(System.lineSeparator())));
        }
        previous = now;
        previousNanos = nanos;
        List<String> fitted = new ArrayList<>(lines.size());
        for (String line : lines) {
            fitted.add(line.length() > width ? line.substring(0, width) : line);
        }
        return fitted;
    }

    /** Changes of the totals per second, and the hit ratio of the lookups between two answers; null rates where a total fell (a restart). */
    record Rates(Double allocations, Double evictions, Double lookups, Double hitRatio) {
    }

    static Rates rates(TierStatsReport before, TierStatsReport after, double seconds) {
        GetStatsResponse a = before.stats();
        GetStatsResponse b = after.stats();
        long hits = after.hits() - before.hits();
        long misses = after.misses() - before.misses();
        return new Rates(perSecond(b.getPageAllocationsTotal() - a.getPageAllocationsTotal(), seconds),
                perSecond(b.getEvictedKeys() - a.getEvictedKeys(), seconds), perSecond(b.getLookupsTotal() - a.getLookupsTotal(), seconds),
                hits < 0 || misses < 0 ? null : TierStatsReport.hitRatio(hits, misses));
    }

    private static Double perSecond(long delta, double seconds) {
        return delta < 0 || seconds <= 0 ? null : delta / seconds;
    }

    private static String rate(Double perSecond) {
        return perSecond == null ? "-" : String.format(Locale.ROOT, perSecond >= 100 ? "%.0f" : "%.1f", perSecond);
    }

    /**
     * The buckets as rows of one-character cells whose glyph says the share used, each row labelled with its first
     * bucket; then how many buckets fall in each tenth of use. 256 buckets fold into 4 rows of 64 on an 80-column screen.
     */
    List<String> bucketLines(List<BucketStats> buckets, int width) {
        List<String> lines = new ArrayList<>();
        int count = buckets.size();
        if (count == 0) {
            return lines;
        }
        String ramp = unicode ? BLOCKS : ASCII;
        int perRow = Math.max(8, Math.min(MAX_CELLS_PER_ROW, (width - 7) / 8 * 8));
        int rowsNeeded = (count + perRow - 1) / perRow;
        int group = (rowsNeeded + MAX_BUCKET_ROWS - 1) / MAX_BUCKET_ROWS;
        int cells = (count + group - 1) / group;
        lines.add("buckets    " + count + (group == 1 ? ", one cell each" : ", " + group + " to a cell (the fullest shown)")
                + ": '" + ramp.charAt(0) + "' empty ... '" + ramp.charAt(ramp.length() - 1) + "' full");
        for (int row = 0; row * perRow < cells; row++) {
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%5d |", row * perRow * group));
            for (int cell = row * perRow; cell < Math.min(cells, (row + 1) * perRow); cell++) {
                double fullest = 0;
                for (int b = cell * group; b < Math.min(count, (cell + 1) * group); b++) {
                    fullest = Math.max(fullest, TierStatsReport.usedShare(buckets.get(b)));
                }
                line.append(glyph(ramp, fullest));
            }
            lines.add(line.append('|').toString());
        }
        lines.add("by use     " + histogram(buckets));
        return lines;
    }

    /** Empty is the first glyph; any use at all shows at least the second; full is the last. */
    static char glyph(String ramp, double share) {
        if (share <= 0) {
            return ramp.charAt(0);
        }
        int steps = ramp.length() - 2;
        return ramp.charAt(1 + Math.min(steps, (int) (share * steps)));
    }

    /** Buckets per tenth of use, the empty ones apart: "empty 3, <10% 200, 90-100% 2" (tenths with none left out). */
    static String histogram(List<BucketStats> buckets) {
        int empty = 0;
        int[] tenths = new int[10];
        for (BucketStats b : buckets) {
            double share = TierStatsReport.usedShare(b);
            if (b.getPagesAllocated() == 0) {
                empty++;
            } else {
                tenths[Math.min(9, (int) (share * 10))]++;
            }
        }
        List<String> parts = new ArrayList<>();
        if (empty > 0) {
            parts.add("empty " + empty);
        }
        for (int t = 0; t < 10; t++) {
            if (tenths[t] > 0) {
                parts.add((t == 0 ? "<10%" : (t * 10) + "-" + (t * 10 + 10) + "%") + " " + tenths[t]);
            }
        }
        return String.join(", ", parts);
    }
}
