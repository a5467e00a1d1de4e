package io.mcctl.storage.io;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;

/**
 * IO errors as people read them: "{@code <operation> <path>: <reason>}". Java's file exceptions carry the file and the
 * system's reason apart, and for the commonest errors (permission denied, no such file) the JDK leaves the reason out,
 * so that {@code getMessage()} is the bare path: a message built from it names a file and never says what went wrong.
 */
public final class IoErrors {

    private IoErrors() {
    }

    /**
     * "{@code <operation> <path>: <reason>}", e.g. "create /state/wal-…07.log: Permission denied". When the system named
     * another file than {@code path} (a parent that is not a directory, the target of a rename), it follows in brackets.
     */
    public static String describe(String operation, Path path, IOException e) {
        StringBuilder text = new StringBuilder(operation).append(' ').append(path).append(": ").append(reason(e));
        if (e instanceof FileSystemException fs && fs.getFile() != null && (path == null || !fs.getFile().equals(path.toString()))) {
            text.append(" (").append(fs.getFile());
            if (fs.getOtherFile() != null) {
                text.append(" -> ").append(fs.getOtherFile());
            }
            text.append(')');
        }
        return text.toString();
    }

    /** {@link #describe} as an exception to throw on, with {@code e} as its cause. */
    public static IOException named(String operation, Path path, IOException e) {
        return new IOException(describe(operation, path, e), e);
    }

    /**
     * The system's reason alone: a file exception's own reason, the words the system uses for the errors the JDK gives
     * none for, the message of any other IO exception, or its class's name when it has no message.
     */
    public static String reason(IOException e) {
        if (e instanceof FileSystemException fs) {
            if (fs.getReason() != null) {
                return fs.getReason();
            }
            // The JDK gives these without a reason: their strerror(3) words, as every other file error carries.
            if (e instanceof AccessDeniedException) {
                return "Permission denied";
            }
            if (e instanceof NoSuchFileException) {
                return "No such file or directory";
            }
            if (e instanceof FileAlreadyExistsException) {
                return "File exists";
            }
            if (e instanceof DirectoryNotEmptyException) {
                return "Directory not empty";
            }
            if (e instanceof NotDirectoryException) {
                return "Not a directory";
            }
            return e.getClass().getSimpleName();
        }
        return e.getMessage() == null || e.getMessage().isEmpty() ? e.getClass().getSimpleName() : e.getMessage();
    }
}
