package io.mcctl.cli.command;

import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.util.Plurals;
import io.mcctl.cli.util.StatePaths;
import io.mcctl.tools.snapshot.Formats;
import io.mcctl.tools.snapshot.StateListing;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl snapshot list}: the snapshots and log segments of a state directory. */
@Command(name = "list", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"List the snapshots (newest first: file, covered WAL sequence, creation time, size, mappings) and the "
                + "write-ahead log segments (file, first sequence, size, records, last sequence) of a master state directory.",
                "Snapshots are only opened (header, footer, meta record); 'mcctl snapshot verify' reads them in full."})
public final class SnapshotListCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Parameters(index = "0", arity = "0..1", paramLabel = "STATE_DIR", defaultValue = StatePaths.DEFAULT_STATE_DIR,
            description = "The master's state directory, <root>/master unless the master was given another (default: "
                    + "mooncake-data/master in the current directory).")
    Path dir;

    @Override
    public Integer call() throws IOException {
        StatePaths.requireStateDir(dir);
        io.mcctl.cli.LiveState.warnIfLive(spec.commandLine().getErr(), dir);
        StateListing.Listing listing = StateListing.list(dir);
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(listing.json()));
            out.flush();
            return ExitCodes.OK;
        }
        if (listing.snapshots().isEmpty()) {
            out.println("no snapshots in " + dir);
        } else {
            out.println("Snapshots in " + dir + ", newest first:");
            Table table = new Table("FILE", "COVERS", "CREATED", "BYTES", "MAPPINGS");
            for (StateListing.SnapshotEntry s : listing.snapshots()) {
                if (s.meta() == null) {
                    table.row(s.file().getFileName(), s.walSequence(), "-", s.bytes(), "unreadable: " + s.unreadable());
                } else {
                    table.row(s.file().getFileName(), s.walSequence(), Formats.iso(s.meta().getCreatedMs()), s.bytes(), s.meta().getMappings());
                }
            }
            out.print(table.render());
        }
        out.println();
        long records = 0;
        if (listing.segments().isEmpty()) {
            out.println("no write-ahead log segments in " + dir);
        } else {
            out.println("Write-ahead log segments, oldest first:");
            Table table = new Table("FILE", "FIRST", "BYTES", "RECORDS", "LAST", "STATUS");
            for (StateListing.SegmentEntry s : listing.segments()) {
                records += s.records();
                table.row(s.file().getFileName(), s.firstSequence(), s.bytes(), s.status() == StateListing.SegmentStatus.UNREAD ? "-" : s.records(),
                        s.records() == 0 ? "-" : s.lastSequence(), status(s));
            }
            out.print(table.render());
        }
        out.println();
        long unreadable = listing.snapshots().stream().filter(s -> s.meta() == null).count();
        out.println(Plurals.plural(listing.snapshots().size(), "snapshot") + (unreadable > 0 ? " (" + unreadable + " unreadable)" : "") + ", "
                + Plurals.plural(listing.segments().size(), "log segment") + " holding " + Plurals.plural(records, "record"));
        out.flush();
        return ExitCodes.OK;
    }

    private static String status(StateListing.SegmentEntry s) {
        return switch (s.status()) {
            case OK -> "ok";
            case TORN -> "torn tail at byte " + s.problemOffset();
            case CORRUPT -> "corrupt at byte " + s.problemOffset() + ": " + s.problem();
            case UNREAD -> s.problem();
        };
    }
}
