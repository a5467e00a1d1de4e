package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Progress;
import io.mcctl.storage.layout.LayoutMismatchException;
import io.mcctl.tools.fsck.Fsck;
import io.mcctl.tools.fsck.FsckProblem;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Unmatched;

/**
 * {@code mcctl fsck}: the offline, check-only fsck of saved master state against the bucket files. Exit codes follow
 * fsck(8); anything that stops the check from running at all, bad arguments included, is 8.
 */
@Command(name = "fsck", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Check saved master state against the bucket files, offline, without changing anything.",
                "Reads a state directory (recovered read-only, as the master would on restart) or one snapshot file, and checks: "
                        + "every mapping, in-flight allocation and quarantined range is page-aligned, non-empty, inside its bucket "
                        + "and its bucket file's real length, and no page is claimed twice (both claimants named); every bucket file "
                        + "is present, at least the bucket size, readable and writable; nothing else is in the root (a warning). "
                        + "--deep also reads every object back and checks its CRC32C.",
                "The root is --root, else the state directory's parent, else the snapshot's recorded root; the layout is the "
                        + "snapshot's, else <root>/mooncake.layout.json.",
                "Not built in this version: --master (a live check) and --repair."},
        footer = {"", "Exit codes (after fsck(8)):",
                "  0  no errors (warnings may have been printed)",
                "  4  errors left uncorrected: at least one error (this version corrects nothing)",
                "  8  operational error: bad arguments; no such state directory, snapshot or",
                "     root; state that does not recover",
                ""})
public final class FsckCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--state-dir", paramLabel = "DIR", description = "Check the state a master would recover from DIR (default <root>/master).")
    Path stateDir;

    @Option(names = "--snapshot", paramLabel = "FILE", description = "Check the state one snapshot file holds.")
    Path snapshot;

    @Option(names = "--root", paramLabel = "DIR", description = "The root holding the bucket files (default: the state directory's parent, "
            + "or the root the snapshot records).")
    Path root;

    @Option(names = "--deep", description = "Also read every object back and check its CRC32C; corrupt objects are listed by tenant, key, "
            + "file and offset.")
    boolean deep;

    @Option(names = "--rate-limit", paramLabel = "MB/s", description = "With --deep, keep the average read rate under this many MB "
            + "(1 MB = 1,000,000 bytes) a second (default: no limit).")
    String rateLimit;

    @Option(names = "--master", paramLabel = "HOST:PORT", arity = "0..1", fallbackValue = "", description = "Check a live master. "
            + "Not built in this version.")
    String master;

    @Option(names = "--repair", description = "Repair what is safe. Not built in this version.")
    boolean repair;

    /** Taken here, so that a wrong argument is fsck(8)'s operational error (8), not the usage error of other commands. */
    @Unmatched
    List<String> unmatched;

    @Override
    public Integer call() {
        if (master != null) {
            throw operational("--master (a live check) is not built in this version of mcctl fsck; check a state directory "
                    + "with --state-dir", null);
        }
        if (repair) {
            throw operational("--repair is not built in this version of mcctl fsck; it checks only", null);
        }
        if (unmatched != null && !unmatched.isEmpty()) {
            throw operational("unknown argument " + String.join(" ", unmatched) + " (see mcctl fsck --help)", null);
        }
        if ((stateDir == null) == (snapshot == null)) {
            throw operational("give exactly one of --state-dir DIR and --snapshot FILE", null);
        }
        long rateLimitBytes = parseRateLimit();
        Fsck.Report report;
        Progress[] bar = {null};
        try {
            report = Fsck.run(new Fsck.Options(stateDir, snapshot, root, deep, rateLimitBytes), new Fsck.DeepProgress() {
                @Override
                public void begin(long objects) {
                    bar[0] = new Progress("fsck --deep", objects);
                }

                @Override
                public void read(long objects) {
                    bar[0].advance(objects);
                }
            });
        } catch (NoSuchFileException e) {
            throw operational((e.getReason() != null ? e.getReason() : "no such file") + ": " + e.getFile(), e);
        } catch (AccessDeniedException e) {
            throw operational("permission denied: " + e.getFile(), e);
        } catch (IOException | UncheckedIOException | IllegalArgumentException | LayoutMismatchException e) {
            throw operational(e.getMessage(), e);
        } finally {
            if (bar[0] != null) {
                bar[0].close();
            }
        }
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(report.json()));
        } else {
            for (FsckProblem p : report.problems()) {
                out.println(p.text());
            }
            out.println(summary(report, deep));
        }
        out.flush();
        return report.exitCode();
    }

    private long parseRateLimit() {
        if (rateLimit == null) {
            return 0;
        }
        if (!deep) {
            throw operational("--rate-limit limits the reads of --deep; give --deep too", null);
        }
        double mbPerSecond;
        try {
            mbPerSecond = Double.parseDouble(rateLimit.trim());
        } catch (NumberFormatException e) {
            mbPerSecond = Double.NaN;
        }
        if (!(mbPerSecond > 0) || Double.isInfinite(mbPerSecond)) {
            throw operational("--rate-limit takes a positive number of MB a second, not '" + rateLimit + "'", null);
        }
        return Math.max(1, (long) (mbPerSecond * 1_000_000));
    }

    static String summary(Fsck.Report r, boolean deep) {
        int errors = r.errors().size();
        int warnings = r.warnings().size();
        return String.format(Locale.ROOT, "fsck %s: %s, %s; checked %s, %d in flight, %s, %s%s in %s (exit %d)",
                errors == 0 ? "clean" : "found errors", SnapshotListCommand.plural(errors, "error"), SnapshotListCommand.plural(warnings, "warning"),
                SnapshotListCommand.plural(r.mappings(), "mapping"), r.inFlight(), SnapshotListCommand.plural(r.quarantinedRanges(), "quarantined range"),
                SnapshotListCommand.plural(r.bucketFiles(), "bucket file"), deep ? ", " + SnapshotListCommand.plural(r.objectsRead(), "object") + " read" : "",
                r.root(), r.exitCode());
    }

    private static CliException operational(String message, Throwable cause) {
        String line = message == null ? "fsck cannot run" : message.lines().findFirst().orElse(message);
        return new CliException(Fsck.EXIT_OPERATIONAL, line, cause);
    }
}
