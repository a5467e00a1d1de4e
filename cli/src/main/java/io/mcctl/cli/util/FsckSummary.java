package io.mcctl.cli.util;

import io.mcctl.tools.fsck.Fsck;
import java.util.Locale;

/** The one-line verdict of an fsck run, as {@code mcctl fsck} and {@code mcctl snapshot recover} print it. */
public final class FsckSummary {

    private FsckSummary() {
    }

    public static String of(Fsck.Report r, boolean deep) {
        int errors = r.errors().size();
        int corrected = r.corrected().size();
        int warnings = r.warnings().size();
        String verdict = errors > 0 ? "found errors" : corrected > 0 ? "corrected errors" : "clean";
        String live = "";
        if (r.live() != null) {
            live = String.format(Locale.ROOT, "; master %s held no lock longer than %.1f ms", r.live().master(), r.live().longestHoldMicros() / 1000.0);
        }
        return String.format(Locale.ROOT, "fsck %s: %s, %s%s; checked %s, %d in flight, %s, %s%s in %s%s (exit %d)",
                verdict, Plurals.plural(errors, "error"), corrected > 0 ? Plurals.plural(corrected, "correction") + ", " : "",
                Plurals.plural(warnings, "warning"),
                Plurals.plural(r.mappings(), "mapping"), r.inFlight(), Plurals.plural(r.quarantinedRanges(), "quarantined range"),
                Plurals.plural(r.bucketFiles(), "bucket file"), deep ? ", " + Plurals.plural(r.objectsRead(), "object") + " read" : "",
                r.root(), live, r.exitCode());
    }
}
