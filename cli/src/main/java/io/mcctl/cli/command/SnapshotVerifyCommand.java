package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.util.Plurals;
import io.mcctl.tools.snapshot.Problem;
import io.mcctl.tools.snapshot.SnapshotVerifier;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl snapshot verify}: every checksum and invariant of a snapshot or a whole state directory. */
@Command(name = "verify", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Verify a snapshot, or a master state directory, without changing it.",
                "A snapshot: every checksum; every record decodes; its meta counts match; every range is inside its bucket and "
                        + "page-aligned; no page is held by two of its mappings, in-flight allocations and quarantined ranges (both are named).",
                "A state directory: every snapshot in it; the write-ahead log (a torn tail is a warning, any other damage an error) "
                        + "and that it starts where the newest usable snapshot ends; then the master's own recovery, run read-only, "
                        + "must rebuild a state in which no page is claimed twice.",
                "Prints a line per problem and a summary line. Exit 0 when there is no error (warnings allowed), 1 otherwise."})
public final class SnapshotVerifyCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Parameters(index = "0", paramLabel = "SNAPSHOT|STATE_DIR", description = "A snapshot file (snapshot-<sequence>.snap) or the master's "
            + "state directory (<root>/master).")
    Path target;

    @Override
    public Integer call() throws IOException {
        if (!Files.exists(target)) {
            throw new CliException(ExitCodes.NOT_FOUND, "no such snapshot file or state directory: " + target);
        }
        io.mcctl.cli.LiveState.warnIfLive(spec.commandLine().getErr(), target);
        SnapshotVerifier.Report report = SnapshotVerifier.verify(target);
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(report.json()));
        } else {
            printText(out, report);
        }
        out.flush();
        return report.passed() ? ExitCodes.OK : ExitCodes.FAILED;
    }

    private static void printText(PrintWriter out, SnapshotVerifier.Report r) {
        for (SnapshotVerifier.SnapshotResult s : r.snapshots()) {
            out.println((r.stateDir() ? s.file().getFileName() : s.file()) + ": " + (s.ok()
                    ? "ok, " + Plurals.plural(s.mappings(), "mapping") + ", " + s.inFlight() + " in flight, "
                    + Plurals.plural(s.quarantinedRanges(), "quarantined range") + " ("
                    + Plurals.plural(s.quarantinedPages(), "page") + ")"
                    : "FAILED"));
        }
        SnapshotVerifier.WalResult wal = r.wal();
        if (wal != null) {
            out.println("write-ahead log: " + Plurals.plural(wal.segments(), "segment") + ", "
                    + (wal.records() == 0 ? "no records" : "records " + wal.firstSequence() + " to " + wal.lastSequence()) + ": "
                    + (!wal.ok() ? "FAILED" : wal.tornFile() != null ? "ok up to a torn tail" : "ok"));
        } else if (r.stateDir()) {
            out.println("write-ahead log: none (snapshot durability, or no master has run here)");
        }
        SnapshotVerifier.RecoveryResult rec = r.recovery();
        if (rec != null) {
            if (rec.skipped() != null) {
                out.println("recovery: not checked (" + rec.skipped() + ")");
            } else if (rec.ok()) {
                out.println("recovery: " + (rec.snapshot() == null ? "no snapshot" : rec.snapshot().getFileName().toString()) + " and "
                        + Plurals.plural(rec.replayed(), "log record") + " rebuild " + Plurals.plural(rec.mappings(), "mapping")
                        + ", " + rec.inFlight() + " in flight, " + Plurals.plural(rec.quarantinedRanges(), "quarantined range")
                        + " up to record " + rec.lastSequence() + ": ok, no page claimed twice");
            } else {
                out.println("recovery: FAILED");
            }
        }
        for (Problem p : r.problems()) {
            out.println(p.text());
        }
        String checked = r.stateDir()
                ? Plurals.plural(r.snapshots().size(), "snapshot") + ", " + (r.wal() == null ? "no log" : Plurals.plural(
                r.wal().segments(), "log segment")) + (r.recovery() != null && r.recovery().skipped() == null ? ", recovery" : "")
                : "1 snapshot";
        out.println((r.passed() ? "verify passed: " : "verify FAILED: ") + Plurals.plural(r.errors(), "error") + ", "
                + Plurals.plural(r.warnings(), "warning") + " (checked " + checked + " in " + r.target() + ")");
    }
}
