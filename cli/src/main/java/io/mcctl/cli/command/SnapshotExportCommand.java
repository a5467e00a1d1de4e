package io.mcctl.cli.command;

import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.util.StatePaths;
import io.mcctl.tools.snapshot.StateExport;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl snapshot export}: a snapshot's whole state as JSON Lines. */
@Command(name = "export", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Export a snapshot's whole state to stdout as JSON Lines: one object per line, each with a \"type\": first "
                + "\"meta\" (layout, covered WAL sequence, creation time, counts, settings), then one \"mapping\" (tenant, key, bucket, "
                + "offset, size, pages, crc32c), \"in_flight\" (the same, with deadline and overwrite) or \"quarantine\" (bucket, "
                + "first_page, pages, offset, size, release) per record, in file order.",
                "The output is JSON Lines whatever -o says. Every checksum is checked first, so a corrupt snapshot prints nothing."})
public final class SnapshotExportCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    /** Accepted so that {@code -o json} reads naturally; the export has one format. */
    @Mixin
    OutputMixin output;

    @Parameters(index = "0", paramLabel = "SNAPSHOT", description = "A snapshot file, snapshot-<sequence>.snap.")
    Path file;

    @Override
    public Integer call() throws IOException {
        StatePaths.requireSnapshotFile(file, "mcctl snapshot export");
        io.mcctl.cli.LiveState.warnIfLive(spec.commandLine().getErr(), file);
        PrintWriter out = spec.commandLine().getOut();
        StateExport.export(file, out);
        out.flush();
        return ExitCodes.OK;
    }
}
