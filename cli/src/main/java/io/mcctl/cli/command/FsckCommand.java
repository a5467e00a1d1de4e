package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.CommandEnvironment;
import io.mcctl.cli.ConnectionOptions;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Progress;
import io.mcctl.cli.util.FsckSummary;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.storage.config.DurationParser;
import io.mcctl.storage.layout.LayoutMismatchException;
import io.mcctl.tools.fsck.Fsck;
import io.mcctl.tools.fsck.FsckProblem;
import io.mcctl.tools.fsck.LiveFsck;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Unmatched;

/**
 * {@code mcctl fsck}: the page state of a live master (with repair), or offline of saved master state, against the bucket
 * files. Exit codes follow fsck(8); anything that stops the check from running at all, bad arguments included, is 8.
 */
@Command(name = "fsck", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Check the page state of a live master, or offline of saved master state, against the bucket files.",
                "Live (--master): the master compares every bucket's bitmap with the pages that mappings, in-flight allocations "
                        + "and quarantined ranges claim, while it goes on serving (it holds one lock at a time; the summary says "
                        + "for how long at most): leaked pages (allocated, claimed by nothing, older than --min-age), false-free "
                        + "pages (claimed but free: the next allocation could overwrite live data), overlaps (claimed twice; both "
                        + "claimants named) and per-bucket counters against popcounts. Unclaimed pages in regions that changed "
                        + "during the check are left for the next one. This node then checks every bucket file: present, "
                        + "readable, writable, at least the bucket size and the furthest claim; and nothing unexpected in the root.",
                "--repair (live only; run without it first): each false-free range is marked allocated as soon as it is "
                        + "confirmed, under its claim's lock; leaked ranges are freed after, each under the bucket lock that "
                        + "confirms nothing changed there. Overlaps are never repaired.",
                "Offline (--state-dir, --snapshot): reads a state directory (recovered read-only, as the master would on "
                        + "restart) or one snapshot file, and checks every mapping, in-flight allocation and quarantined range: "
                        + "page-aligned, non-empty, inside its bucket and its bucket file's real length, no page claimed twice. "
                        + "The root is --root, else the state directory's parent, else the snapshot's recorded root; the layout "
                        + "is the snapshot's, else <root>/mooncake.layout.json.",
                "--deep also reads every object back and checks its CRC32C (live: from a snapshot the master writes for it; a "
                        + "failing key is looked up again and reported only if still mapped there), in batches through the io setting's "
                        + "IO (POSIX, or USRBIO on 3FS)."},
        footer = {"", "Exit codes (after fsck(8)):",
                "  0  no errors (warnings may have been printed)",
                "  1  errors corrected (--repair), none left",
                "  4  errors left uncorrected",
                "  8  operational error: bad arguments; no such state directory, snapshot or",
                "     root; state that does not recover; the master unreachable",
                ""})
public final class FsckCommand implements Callable<Integer>, io.mcctl.cli.SettingsOptions.UsesSettings {

    /** How --deep reads the objects: the io settings, and fs_type for io auto. */
    @Override
    public List<io.mcctl.storage.config.Setting<?>> settings() {
        return List.of(io.mcctl.storage.config.StorageSettings.IO, io.mcctl.storage.config.StorageSettings.USRBIO_LIBRARY,
                io.mcctl.storage.config.StorageSettings.FS_TYPE);
    }

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

    @Option(names = "--master", paramLabel = "HOST:PORT", arity = "0..1", fallbackValue = "", description = "Check a live master "
            + "(default address: $" + ClientOptions.MASTER_ENV + ", else " + MasterClient.DEFAULT_TARGET + ").")
    String master;

    @Option(names = "--repair", description = "With --master: mark false-free pages allocated, then free leaked ranges.")
    boolean repair;

    @Option(names = "--min-age", paramLabel = "DURATION", description = "With --master: unclaimed pages in a region allocated from "
            + "less than this ago are reported as young, not leaked, and never freed (default: the master's allocation deadline).")
    String minAge;

    @Option(names = "--timeout", paramLabel = "DURATION", description = "With --master: deadline of each call (default: 2m).")
    String timeout;

    @Mixin
    ConnectionOptions connection;

    /** Taken here, so that a wrong argument is fsck(8)'s operational error (8), not the usage error of other commands. */
    @Unmatched
    List<String> unmatched;

    @Override
    public Integer call() {
        if (unmatched != null && !unmatched.isEmpty()) {
            throw operational("unknown argument " + String.join(" ", unmatched) + " (see mcctl fsck --help)", null);
        }
        boolean live = master != null;
        if (live && (stateDir != null || snapshot != null)) {
            throw operational("give one of --master, --state-dir DIR and --snapshot FILE, not several", null);
        }
        if (!live) {
            if (repair) {
                throw operational("--repair needs --master: saved state has no bitmaps to repair (a master rebuilds them from the "
                        + "mappings when it starts)", null);
            }
            for (String[] liveOnly : new String[][] {{"--min-age", minAge}, {"--timeout", timeout}}) {
                if (liveOnly[1] != null) {
                    throw operational(liveOnly[0] + " applies to a live check: give --master too", null);
                }
            }
            if ((stateDir == null) == (snapshot == null)) {
                throw operational("give exactly one of --master, --state-dir DIR and --snapshot FILE", null);
            }
        } else if (root != null) {
            throw operational("--root applies offline: a live check uses the master's root", null);
        }
        long rateLimitBytes = parseRateLimit();
        io.mcctl.storage.config.EffectiveConfig config;
        try {
            config = io.mcctl.cli.SettingsOptions.resolve(spec, settings());
        } catch (io.mcctl.storage.config.ConfigException e) {
            throw operational(e.getMessage(), e);
        }
        io.mcctl.storage.io.BucketIoSelector.Wanted deepIo = io.mcctl.storage.io.BucketIoSelector.Wanted.of(config);
        Fsck.Report report;
        Progress[] bar = {null};
        Fsck.DeepProgress progress = new Fsck.DeepProgress() {
            @Override
            public void begin(long objects) {
                bar[0] = new Progress("fsck --deep", objects);
            }

            @Override
            public void read(long objects) {
                bar[0].advance(objects);
            }
        };
        try {
            if (live) {
                long minAgeMs = minAge == null ? -1 : parseDuration("--min-age", minAge, true).toMillis();
                Duration deadline = timeout == null ? Duration.ofMinutes(2) : parseDuration("--timeout", timeout, false);
                String target = masterTarget();
                io.mcctl.master.client.ClientSecurity security;
                try {
                    security = connection.security(spec);
                } catch (CliException e) {
                    throw operational(e.getMessage(), e);
                }
                try (MasterClient client = newClient(target, deadline, security)) {
                    report = LiveFsck.run(client, new LiveFsck.Options(repair, minAgeMs, deep, rateLimitBytes, deepIo), progress);
                } catch (MasterException e) {
                    throw operational("master " + target + ": " + e.getMessage(), e);
                }
            } else {
                io.mcctl.cli.LiveState.warnIfLive(spec.commandLine().getErr(), stateDir, snapshot);
                report = Fsck.run(new Fsck.Options(stateDir, snapshot, root, deep, rateLimitBytes, deepIo,
                        config.get(io.mcctl.storage.config.StorageSettings.FS_TYPE)), progress);
            }
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
            out.println(FsckSummary.of(report, deep));
        }
        out.flush();
        return report.exitCode();
    }

    private static MasterClient newClient(String target, Duration deadline, io.mcctl.master.client.ClientSecurity security) {
        try {
            return new MasterClient(target, deadline, security);
        } catch (IllegalArgumentException e) {
            throw operational(e.getMessage(), e);
        }
    }

    private String masterTarget() {
        String target = !master.isEmpty() ? master
                : CommandEnvironment.of(spec).getOrDefault(ClientOptions.MASTER_ENV, MasterClient.DEFAULT_TARGET);
        try {
            return MasterClient.checkTarget(target);
        } catch (IllegalArgumentException e) {
            throw operational("invalid --master: " + e.getMessage(), e);
        }
    }

    private static Duration parseDuration(String option, String value, boolean zeroAllowed) {
        Duration parsed;
        try {
            parsed = DurationParser.parse(value);
        } catch (IllegalArgumentException e) {
            throw operational("invalid " + option + " '" + value + "': allowed is " + DurationParser.ALLOWED, null);
        }
        if (!zeroAllowed && parsed.isZero()) {
            throw operational("invalid " + option + " '" + value + "': allowed is more than zero", null);
        }
        return parsed;
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

    private static CliException operational(String message, Throwable cause) {
        String line = message == null ? "fsck cannot run" : message.lines().findFirst().orElse(message);
        return new CliException(Fsck.EXIT_OPERATIONAL, line, cause);
    }
}
