package io.mcctl.tools.snapshot;

import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.StateFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One thing a check found wrong: an error (the state cannot be trusted) or a warning (it can, but look).
 *
 * @param file   the file it is in, or null when it is about the state as a whole
 * @param offset byte offset in {@code file}, or -1 when there is none
 */
public record Problem(Severity severity, Path file, long offset, String message) {

    /** How bad. */
    public enum Severity {
        ERROR, WARNING;

        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    public static Problem error(Path file, long offset, String message) {
        return new Problem(Severity.ERROR, file, offset, message);
    }

    public static Problem warning(Path file, long offset, String message) {
        return new Problem(Severity.WARNING, file, offset, message);
    }

    /** The exception's own file and offset, and what it says without them. */
    public static Problem of(StateFileException e) {
        return of(e, e.file());
    }

    /** As {@link #of(CorruptStateException)}, reporting it against {@code file} (the original of a working copy). */
    public static Problem of(StateFileException e, Path file) {
        return error(file, e.offset(), what(e));
    }

    /** The message of a {@link CorruptStateException} without its "file at byte N: " lead. */
    public static String what(StateFileException e) {
        String lead = e.file() + " at byte " + e.offset() + ": ";
        String message = e.getMessage();
        return message.startsWith(lead) ? message.substring(lead.length()) : message;
    }

    public boolean isError() {
        return severity == Severity.ERROR;
    }

    /** {@code error: FILE at byte N: message}. */
    public String text() {
        StringBuilder line = new StringBuilder(severity.label()).append(": ");
        if (file != null) {
            line.append(file);
            if (offset >= 0) {
                line.append(" at byte ").append(offset);
            }
            line.append(": ");
        }
        return line.append(message).toString();
    }

    public Map<String, Object> json() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("severity", severity.label());
        out.put("file", file == null ? null : file.toString());
        out.put("offset", offset >= 0 ? offset : null);
        out.put("message", message);
        return out;
    }
}
