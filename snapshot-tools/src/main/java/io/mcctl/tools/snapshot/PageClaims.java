package io.mcctl.tools.snapshot;

import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.master.proto.v1.QuarantineRecord;
import io.mcctl.master.service.ClaimedPages;
import io.mcctl.storage.alloc.BitmapPageAllocator;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Checks the pages that mappings, in-flight allocations and quarantined ranges claim, the way the master
 * checks them on restore: every range inside its bucket and on page boundaries, and no page claimed twice,
 * through the master's own {@link ClaimedPages}. A claim that finds a page taken is kept; a second pass over
 * the claims then names every claim it overlaps, so each overlap is reported with both sides and the files
 * and offsets of their records.
 */
public final class PageClaims {

    /** At most this many overlapping claims are named; the rest are counted. */
    static final int MAX_NAMED = 1000;

    /** What holds the pages. */
    public enum Kind {
        MAPPING("mapping"), IN_FLIGHT("in-flight allocation"), QUARANTINE("quarantined range");

        private final String label;

        Kind(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    /**
     * One claim on a run of pages.
     *
     * @param offset     byte offset in the bucket (for a quarantined range, its first page's)
     * @param size       bytes (for a quarantined range, its pages' bytes)
     * @param file       the file its record is in, or null for recovered state
     * @param fileOffset where its record starts in {@code file}, or -1
     */
    public record Claim(Kind kind, String tenant, String key, int bucket, long offset, long size, long firstPage, long pages,
                        Path file, long fileOffset) {

        /** Who claims: {@code mapping of key 'k' of tenant 't'}, or {@code quarantined range}. */
        public String who() {
            return kind == Kind.QUARANTINE ? kind.label() : kind.label() + " of key " + name(key) + " of tenant " + name(tenant);
        }

        /** Who and which pages. */
        public String describe() {
            return who() + " (bucket " + bucket + ", " + Formats.pages(firstPage, pages) + ")";
        }
    }

    /** Emits the claims to check, in the same order every time it is asked. */
    @FunctionalInterface
    public interface Source {
        void emit(Consumer<Claim> sink) throws IOException;
    }

    /** What a check found. */
    public record Result(List<Problem> problems, long claims, long invalid, long overlapping, long[] pagesPerBucket) {
        public boolean ok() {
            return problems.stream().noneMatch(Problem::isError);
        }
    }

    private PageClaims() {
    }

    public static Claim placement(Kind kind, String tenant, String key, PlacementRecord p, long pageSize, Path file, long fileOffset) {
        return new Claim(kind, tenant, key, p.getBucket(), p.getOffset(), p.getSize(), Math.floorDiv(p.getOffset(), pageSize),
                p.getSize() <= 0 ? 0 : (p.getSize() - 1) / pageSize + 1, file, fileOffset);
    }

    public static Claim quarantine(QuarantineRecord q, long pageSize, Path file, long fileOffset) {
        long offset;
        long size;
        try {
            offset = Math.multiplyExact(q.getFirstPage(), pageSize);
            size = Math.multiplyExact(q.getPages(), pageSize);
        } catch (ArithmeticException e) {
            offset = -1;
            size = -1;
        }
        return new Claim(Kind.QUARANTINE, null, null, q.getBucket(), offset, size, q.getFirstPage(), q.getPages(), file, fileOffset);
    }

    /** Why {@code c} does not fit {@code layout}, or null when it does. */
    public static String invalid(Claim c, BucketLayout layout) {
        if (c.bucket() < 0 || c.bucket() >= layout.bucketCount()) {
            return "names bucket " + c.bucket() + "; the layout has buckets 0.." + (layout.bucketCount() - 1);
        }
        if (c.kind() == Kind.QUARANTINE) {
            if (c.firstPage() < 0) {
                return "starts at page " + c.firstPage();
            }
            if (c.pages() < 1) {
                return "has " + c.pages() + " pages; a range holds at least 1";
            }
            if (c.firstPage() > layout.pagesPerBucket() - c.pages()) {
                return "ends at page " + (c.firstPage() + c.pages()) + ", past the end of bucket " + c.bucket() + " ("
                        + layout.pagesPerBucket() + " pages)";
            }
            return null;
        }
        if (c.offset() < 0) {
            return "starts at byte " + c.offset();
        }
        if (c.offset() % layout.pageSize() != 0) {
            return "starts at byte " + c.offset() + ", not on a page boundary (pages of " + layout.pageSize() + " bytes)";
        }
        if (c.size() <= 0) {
            return "has size " + c.size() + "; a placement holds at least 1 byte";
        }
        if (c.size() > layout.bucketSize() - c.offset()) {
            return "ends at byte " + (c.offset() + c.size()) + ", past the end of bucket " + c.bucket() + " (" + layout.bucketSize() + " bytes)";
        }
        return null;
    }

    private record Conflict(long ordinal, Claim claim) {
    }

    private record Pair(long first, long second) {
    }

    /**
     * Checks every claim {@code source} emits against {@code layout}.
     *
     * @param context leads each problem's message, e.g. "after recovery: ", or ""
     */
    public static Result check(BucketLayout layout, Source source, String context) throws IOException {
        List<Problem> problems = new ArrayList<>();
        long[] pagesPerBucket = new long[layout.bucketCount()];
        boolean bitmaps = layout.pagesPerBucket() <= BitmapPageAllocator.MAX_PAGES;
        if (!bitmaps) {
            problems.add(Problem.warning(null, -1, context + "overlap not checked: buckets of " + layout.pagesPerBucket()
                    + " pages are more than a bitmap holds (" + BitmapPageAllocator.MAX_PAGES + ")"));
        }
        ClaimedPages marked = bitmaps ? new ClaimedPages(layout.bucketCount(), layout.pagesPerBucket()) : null;
        List<Conflict> conflicts = new ArrayList<>();
        long[] counts = new long[3]; // claims, invalid, overlapping
        source.emit(claim -> {
            long ordinal = counts[0]++;
            String invalid = invalid(claim, layout);
            if (invalid != null) {
                counts[1]++;
                problems.add(Problem.error(claim.file(), claim.fileOffset(), context + claim.who() + " at "
                        + (claim.kind() == Kind.QUARANTINE ? "page " + claim.firstPage() + " of bucket " + claim.bucket() + " (" + claim.pages() + " pages)"
                        : Formats.place(claim.bucket(), claim.offset(), claim.size())) + " " + invalid));
                return;
            }
            pagesPerBucket[claim.bucket()] += claim.pages();
            if (!bitmaps) {
                return;
            }
            if (marked.add(claim.bucket(), claim.firstPage(), claim.pages())) {
                counts[2]++;
                if (conflicts.size() < MAX_NAMED) {
                    conflicts.add(new Conflict(ordinal, claim));
                }
            }
        });
        if (!conflicts.isEmpty()) {
            boolean allNamed = nameOverlaps(layout, source, conflicts, problems, context) && counts[2] == conflicts.size();
            if (!allNamed) {
                problems.add(Problem.error(null, -1, context + counts[2] + " claims overlap others in all; only the first "
                        + MAX_NAMED + " overlaps are named"));
            }
        }
        return new Result(problems, counts[0], counts[1], counts[2], pagesPerBucket);
    }

    /**
     * Second pass: every valid claim against the conflicting ones of its bucket; each overlapping pair once,
     * up to {@link #MAX_NAMED} pairs.
     *
     * @return false when there were more pairs than were named
     */
    private static boolean nameOverlaps(BucketLayout layout, Source source, List<Conflict> conflicts, List<Problem> problems, String context)
            throws IOException {
        List<List<Conflict>> byBucket = new ArrayList<>(layout.bucketCount());
        for (int b = 0; b < layout.bucketCount(); b++) {
            byBucket.add(null);
        }
        for (Conflict c : conflicts) {
            if (byBucket.get(c.claim().bucket()) == null) {
                byBucket.set(c.claim().bucket(), new ArrayList<>());
            }
            byBucket.get(c.claim().bucket()).add(c);
        }
        Set<Pair> reported = new HashSet<>();
        long[] ordinal = {0};
        boolean[] more = {false};
        source.emit(claim -> {
            long self = ordinal[0]++;
            if (invalid(claim, layout) != null || byBucket.get(claim.bucket()) == null) {
                return;
            }
            for (Conflict other : byBucket.get(claim.bucket())) {
                if (other.ordinal() == self) {
                    continue;
                }
                long from = Math.max(claim.firstPage(), other.claim().firstPage());
                long to = Math.min(claim.firstPage() + claim.pages(), other.claim().firstPage() + other.claim().pages());
                if (from >= to || reported.contains(new Pair(Math.min(self, other.ordinal()), Math.max(self, other.ordinal())))) {
                    continue;
                }
                if (reported.size() == MAX_NAMED) {
                    more[0] = true;
                    return;
                }
                reported.add(new Pair(Math.min(self, other.ordinal()), Math.max(self, other.ordinal())));
                Claim first = self < other.ordinal() ? claim : other.claim();
                Claim second = self < other.ordinal() ? other.claim() : claim;
                problems.add(Problem.error(second.file(), second.fileOffset(), context + second.describe() + " overlaps "
                        + first.describe() + " on " + Formats.pages(from, to - from)));
            }
        });
        return !more[0];
    }

    static String name(String text) {
        String quoted = Formats.quote(text == null ? "" : text);
        return quoted.startsWith("\"") ? quoted : "'" + quoted + "'";
    }
}
