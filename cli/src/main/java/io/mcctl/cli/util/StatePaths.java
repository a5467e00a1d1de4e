package io.mcctl.cli.util;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import java.nio.file.Files;
import java.nio.file.Path;

/** The master's state directory and snapshot files as arguments: the default, and the checks before one is read. */
public final class StatePaths {

    /** Where the master keeps its state when started from the working directory with the default root. */
    public static final String DEFAULT_STATE_DIR = "./mooncake-data/master";

    private StatePaths() {
    }

    /** A state directory that exists, or a one-line error saying what was expected. */
    public static void requireStateDir(Path dir) {
        if (!Files.exists(dir)) {
            throw new CliException(ExitCodes.NOT_FOUND, "no such state directory: " + dir + " (the master keeps its state in <root>/master;"
                    + " pass that directory)");
        }
        if (!Files.isDirectory(dir)) {
            throw new CliException(ExitCodes.USAGE, dir + " is a file, not a state directory; pass the directory that holds the master's "
                    + "snapshot-<sequence>.snap and wal-<sequence>.log files");
        }
    }

    /** A snapshot file that exists, or a one-line error saying what was expected. */
    public static void requireSnapshotFile(Path file, String command) {
        if (!Files.exists(file)) {
            throw new CliException(ExitCodes.NOT_FOUND, "no such snapshot file: " + file);
        }
        if (Files.isDirectory(file)) {
            throw new CliException(ExitCodes.USAGE, file + " is a directory; '" + command + "' takes a snapshot file "
                    + "(snapshot-<sequence>.snap): 'mcctl snapshot list " + file + "' lists them");
        }
    }
}
