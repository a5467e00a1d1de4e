package io.mcctl.cli;

import io.mcctl.master.client.MasterException;
import io.mcctl.master.durability.StateInUseException;
import io.mcctl.storage.config.ConfigException;
import io.mcctl.storage.io.BucketFileMissingException;
import io.mcctl.storage.io.ChecksumMismatchException;
import io.mcctl.storage.layout.LayoutMismatchException;
import java.io.IOException;
import java.nio.file.NoSuchFileException;

/**
 * The exit codes of mcctl, listed in {@code mcctl --help}. fsck has its own, after fsck(8).
 */
public final class ExitCodes {

    public static final int OK = 0;
    /** The operation ran and failed (an IO error, a refused request). */
    public static final int FAILED = 1;
    /** Bad input: an unknown option, an invalid value or setting. Nothing was changed. */
    public static final int USAGE = 2;
    /** A key, object or file that was asked for does not exist. */
    public static final int NOT_FOUND = 3;
    /** The master or the shared mount cannot be reached. */
    public static final int UNAVAILABLE = 4;
    /** Stored bytes failed their checksum, or state on disk is damaged. */
    public static final int CORRUPT = 5;
    /** The state directory is held by a running master (its in_use.lock). Nothing was changed. */
    public static final int IN_USE = 6;
    /** A bug in mcctl: run again with -x and report the stack trace. */
    public static final int INTERNAL = 70;

    /** The table {@code mcctl --help} ends with (picocli footer lines; %n is a line break). */
    public static final String HELP_TABLE = "Exit codes:%n"
            + "  0   OK%n"
            + "  1   FAILED       the operation ran and failed%n"
            + "  2   USAGE        bad input or an invalid setting; nothing was changed%n"
            + "  3   NOT_FOUND    the key, object or file asked for does not exist%n"
            + "  4   UNAVAILABLE  the master or the shared mount cannot be reached%n"
            + "  5   CORRUPT      stored bytes failed their checksum, or state on disk is damaged%n"
            + "  6   IN_USE       the state directory is held by a running master; nothing was changed%n"
            + "  70  INTERNAL     a bug in mcctl (run again with -x and report it)%n"
            + "  fsck uses fsck(8) codes: 0 clean, 1 corrected, 4 left uncorrected, 8 operational error";

    /** The exit code of one key's failure answered with {@code error}: not found, bad input, or failed. */
    public static int ofKeyError(io.mcctl.master.proto.v1.ErrorCode error) {
        return switch (error) {
            case OK -> OK;
            case OBJECT_NOT_FOUND -> NOT_FOUND;
            case INVALID_PARAMS -> USAGE;
            default -> FAILED;
        };
    }

    /** Checks every key before anything is sent: one bad key refuses the whole command, which then changes nothing. */
    public static void checkKeys(java.util.List<String> keys) {
        for (String key : keys) {
            String problem = io.mcctl.master.protocol.KeyRules.checkKey(key);
            if (problem != null) {
                throw new CliException(USAGE, "invalid key: " + problem);
            }
        }
    }

    private ExitCodes() {
    }

    /** The exit code for a failure that stopped a command (public: a command that reports first still exits by it). */
    public static int of(Throwable ex) {
        if (ex instanceof CliException cli) {
            return cli.exitCode();
        }
        if (ex instanceof MasterException master) {
            if (master.unreachable()) {
                return ExitCodes.UNAVAILABLE;
            }
            return switch (master.code()) {
                case OBJECT_NOT_FOUND -> ExitCodes.NOT_FOUND;
                case INVALID_PARAMS -> ExitCodes.USAGE;
                default -> ExitCodes.FAILED;
            };
        }
        if (ex instanceof StateInUseException) {
            return ExitCodes.IN_USE;
        }
        if (ex instanceof ConfigException || ex instanceof LayoutMismatchException || ex instanceof IllegalArgumentException
                || ex instanceof io.mcctl.storage.io.usrbio.UsrbioUnavailableException) {
            return ExitCodes.USAGE;
        }
        if (ex instanceof BucketFileMissingException) {
            return ExitCodes.UNAVAILABLE;
        }
        if (ex instanceof ChecksumMismatchException) {
            return ExitCodes.CORRUPT;
        }
        if (ex instanceof NoSuchFileException) {
            return ExitCodes.NOT_FOUND;
        }
        if (ex instanceof IOException) {
            return ExitCodes.FAILED;
        }
        return ExitCodes.INTERNAL;
    }
}
