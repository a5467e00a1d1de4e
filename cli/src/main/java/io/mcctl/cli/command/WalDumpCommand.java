package io.mcctl.cli.command;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.util.Plurals;
import io.mcctl.cli.util.StatePaths;
import io.mcctl.tools.snapshot.WalDump;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl snapshot wal dump}: the write-ahead log, decoded. */
@Command(name = "dump", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Print the decoded records of a state directory's write-ahead log in order: sequence, time (ISO-8601, UTC), "
                + "change (allocated, committed, pending_dropped, removed, released, reserved, reservation_closed, ...) and its fields; places read bucket@offset+size.",
                "First one line per segment with its header: format version, minimum reader version, cluster id, first record "
                        + "and leader epoch (format 1: a segment written before segments had a header).",
                "Text: one line per record, then a summary line. JSON (-o json): JSON Lines, one \"type\":\"segment\" object per "
                        + "segment (segment, bytes, format_version, legacy, min_reader_version, cluster_id, first_sequence, leader_epoch, "
                        + "error), one object per record with \"type\":\"record\", then one \"type\":\"end\" object (records, "
                        + "last_sequence, torn, torn_file, torn_offset, error).",
                "A torn tail (a write cut short by a crash) is reported at the end and exits 0; a corrupt record stops the dump "
                        + "with the file and byte offset and exits 1. Nothing is changed."})
public final class WalDumpCommand implements Callable<Integer> {

    /** Compact, one object per line (OutputMixin's JSON is indented for whole reports). */
    private static final ObjectMapper JSON_LINES = new ObjectMapper();

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Parameters(index = "0", paramLabel = "DIR", description = "The master's state directory (<root>/master), which holds wal-<sequence>.log.")
    Path dir;

    @Option(names = "--from", paramLabel = "SEQUENCE", defaultValue = "1",
            description = "Start at this record sequence (default: the oldest record the log still holds).")
    long from;

    @Override
    public Integer call() throws IOException {
        if (from < 1) {
            throw new CliException(ExitCodes.USAGE, "invalid --from " + from + ": allowed is a record sequence of 1 or more");
        }
        StatePaths.requireStateDir(dir);
        io.mcctl.cli.LiveState.warnIfLive(spec.commandLine().getErr(), dir);
        PrintWriter out = spec.commandLine().getOut();
        boolean json = output.json();
        for (java.util.Map<String, Object> segment : WalDump.segments(dir)) {
            out.println(json ? jsonLine(segment) : WalDump.segmentText(segment));
        }
        WalDump.Result result = WalDump.dump(dir, from, (record, file, offset) -> {
            out.println(json ? jsonLine(WalDump.json(record, file, offset)) : WalDump.text(record));
        });
        if (json) {
            out.println(jsonLine(result.json()));
        } else {
            if (result.segments() == 0) {
                out.println("no write-ahead log segments in " + dir);
            } else if (from < result.oldestAvailable() && from > 1) {
                out.println("records before " + result.oldestAvailable() + " are no longer in the log (a snapshot covers them)");
            }
            if (result.torn()) {
                out.println("torn tail: " + result.tornFile() + " at byte " + result.tornOffset()
                        + ": the last record was cut short by a crash; the master cuts it off when it next starts");
            }
            if (result.segments() > 0) {
                out.println(Plurals.plural(result.records(), "record") + (result.records() == 0 ? ""
                        : ", sequences " + (result.lastSequence() - result.records() + 1) + " to " + result.lastSequence())
                        + " in " + Plurals.plural(result.segments(), "segment") + (result.corruption() != null ? (result.corruption() instanceof io.mcctl.master.durability.CorruptStateException
                        ? "; stopped at a corrupt record" : "; stopped at a record this mcctl cannot read")
                        : result.torn() ? "; ends in a torn tail" : ""));
            }
        }
        out.flush();
        if (result.corruption() != null) {
            throw result.corruption();
        }
        return ExitCodes.OK;
    }

    private static String jsonLine(Object value) {
        try {
            return JSON_LINES.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot render JSON: " + e.getMessage(), e);
        }
    }
}
