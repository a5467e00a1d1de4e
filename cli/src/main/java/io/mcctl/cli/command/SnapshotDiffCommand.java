package io.mcctl.cli.command;

import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.util.Plurals;
import io.mcctl.cli.util.StatePaths;
import io.mcctl.master.proto.v1.PlacementRecord;
import io.mcctl.tools.snapshot.Formats;
import io.mcctl.tools.snapshot.SnapshotDiff;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl snapshot diff}: what changed between two snapshots. */
@Command(name = "diff", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Compare two snapshots: keys added, removed, moved (same tenant and key, another bucket, offset or size) and "
                + "rewritten in place (same place, another CRC32C), with counts, and pages used per bucket before and after "
                + "(the text shows only buckets that changed; JSON has both full arrays).",
                "Places read bucket@offset+size."})
public final class SnapshotDiffCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Parameters(index = "0", paramLabel = "A", description = "The snapshot to compare from (before).")
    Path a;

    @Parameters(index = "1", paramLabel = "B", description = "The snapshot to compare to (after).")
    Path b;

    @Override
    public Integer call() throws IOException {
        StatePaths.requireSnapshotFile(a, "mcctl snapshot diff");
        StatePaths.requireSnapshotFile(b, "mcctl snapshot diff");
        io.mcctl.cli.LiveState.warnIfLive(spec.commandLine().getErr(), a, b);
        SnapshotDiff.Report diff = SnapshotDiff.diff(a, b);
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(diff.json()));
            out.flush();
            return ExitCodes.OK;
        }
        out.println("A  " + side(diff.a()));
        out.println("B  " + side(diff.b()));
        out.println();
        if (diff.added().isEmpty() && diff.removed().isEmpty() && diff.moved().isEmpty() && diff.rewritten().isEmpty()) {
            out.println("no key changed");
        } else {
            Table table = new Table("CHANGE", "TENANT", "KEY", "BEFORE", "AFTER");
            rows(table, "added", diff.added());
            rows(table, "removed", diff.removed());
            rows(table, "moved", diff.moved());
            rows(table, "rewritten", diff.rewritten());
            out.print(table.render());
        }
        out.println();
        List<SnapshotDiff.BucketChange> buckets = diff.changedBuckets();
        if (buckets.isEmpty()) {
            out.println("no bucket's pages in use changed");
        } else {
            Table table = new Table("BUCKET", "PAGES_BEFORE", "PAGES_AFTER", "CHANGE");
            for (SnapshotDiff.BucketChange c : buckets) {
                long delta = c.after() - c.before();
                table.row(c.bucket(), c.before(), c.after(), (delta > 0 ? "+" : "") + delta);
            }
            out.print(table.render());
        }
        out.println();
        out.println(diff.added().size() + " added, " + diff.removed().size() + " removed, " + diff.moved().size() + " moved, "
                + diff.rewritten().size() + " rewritten, " + diff.unchanged() + " unchanged");
        out.flush();
        return ExitCodes.OK;
    }

    private static String side(SnapshotDiff.Side s) {
        return s.path() + " (covers WAL records up to " + s.meta().getWalSequence() + ", created " + Formats.iso(s.meta().getCreatedMs()) + "; "
                + Plurals.plural(s.mappings(), "mapping") + ", " + s.inFlight() + " in flight, "
                + Plurals.plural(s.quarantinedRanges(), "quarantined range") + ")";
    }

    private static void rows(Table table, String change, List<SnapshotDiff.Change> changes) {
        for (SnapshotDiff.Change c : changes) {
            table.row(change, Formats.quote(c.tenant()), Formats.quote(c.key()), place(c.before()), place(c.after()));
        }
    }

    private static String place(PlacementRecord p) {
        return p == null ? "-" : Formats.place(p.getBucket(), p.getOffset(), p.getSize()) + " crc32c=" + Formats.hex(p.getCrc32C());
    }
}
