package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.util.FsckSummary;
import io.mcctl.cli.util.StatePaths;
import io.mcctl.master.durability.StateLock;
import io.mcctl.tools.fsck.Fsck;
import io.mcctl.tools.snapshot.StateRepair;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl snapshot recover}: the way out of a state directory a master refuses to start from. */
@Command(name = "recover", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Find what keeps a master from recovering its state directory: corrupt snapshots, a log cut short or damaged, "
                + "log segments that can no longer be replayed; print exactly what would be lost to get past it.",
                "Without --discard-damaged it changes nothing and exits 0 when there is nothing to do, 5 (CORRUPT) when action is needed.",
                "With --discard-damaged it takes the state directory's lock (exit 6, IN_USE, while a master holds it), moves damaged "
                        + "files into damaged-<time>/ in the state directory (never deleting; a segment that is cut is copied there "
                        + "whole first), cuts the log at the first bad record, then runs the offline fsck and exits with its code.",
                "State of another cluster or of a newer mcctl is never discarded: it exits 1 saying so."})
public final class SnapshotRecoverCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--state-dir", paramLabel = "DIR", defaultValue = StatePaths.DEFAULT_STATE_DIR,
            description = "The master's state directory (default: ${DEFAULT-VALUE}).")
    Path stateDir;

    @Option(names = "--discard-damaged", description = "Do it: set the damaged files aside and cut the log (default: only report).")
    boolean discard;

    @Override
    public Integer call() throws IOException {
        StatePaths.requireStateDir(stateDir);
        PrintWriter out = spec.commandLine().getOut();
        if (!discard) {
            io.mcctl.cli.LiveState.warnIfLive(spec.commandLine().getErr(), stateDir);
            StateRepair.Plan plan = StateRepair.plan(stateDir);
            refuseUnreadable(plan);
            if (plan.nothingToDo()) {
                out.println("nothing to recover in " + stateDir + ": every snapshot the master needs is whole and the log reads to its end "
                        + "(record " + plan.keptUpTo() + ")");
                out.flush();
                return ExitCodes.OK;
            }
            for (String loss : plan.losses()) {
                out.println("would lose: " + loss);
            }
            out.println("nothing changed; run again with --discard-damaged to do this (the master must be stopped)");
            out.flush();
            return ExitCodes.CORRUPT;
        }
        try (StateLock lock = StateLock.acquire(stateDir)) {
            StateRepair.Plan plan = StateRepair.plan(stateDir);
            refuseUnreadable(plan);
            Path aside = StateRepair.apply(stateDir, plan, Instant.now());
            if (aside == null) {
                out.println("nothing to recover in " + stateDir);
            } else {
                for (String loss : plan.losses()) {
                    out.println("lost: " + loss);
                }
                out.println("damaged files moved to " + aside + "; the state now recovers up to record " + plan.keptUpTo());
            }
        }
        if (io.mcctl.master.durability.SnapshotFile.list(stateDir).isEmpty()
                && io.mcctl.master.durability.WalSegments.list(stateDir).isEmpty()) {
            out.println("fsck: nothing left to check: a master started on " + stateDir + " starts with no objects");
            out.flush();
            return ExitCodes.OK;
        }
        Fsck.Report report = Fsck.run(new Fsck.Options(stateDir, null, null, false, 0), Fsck.DeepProgress.NONE);
        for (io.mcctl.tools.fsck.FsckProblem problem : report.problems()) {
            out.println(problem.text());
        }
        out.println("fsck: " + FsckSummary.of(report, false));
        out.flush();
        return report.exitCode();
    }

    private static void refuseUnreadable(StateRepair.Plan plan) {
        Optional.ofNullable(plan.refusal()).ifPresent(refusal -> {
            throw new CliException(ExitCodes.FAILED, refusal + "; nothing is discarded for this (use the mcctl or the root it belongs to)");
        });
    }
}
