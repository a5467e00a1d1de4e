package io.mcctl.cli;

import java.util.ArrayList;
import java.util.List;

/**
 * A borderless text table: columns padded to their widest cell, the last column not padded. Control characters in a
 * cell (a key may hold any) are shown escaped, so a cell is always one line and never moves the terminal's cursor or
 * colours: newline as \n, tab as \t, carriage return as \r, ESC as \e, others as \xHH, and a backslash as \\.
 */
public final class Table {

    private final List<String[]> rows = new ArrayList<>();

    public Table(String... header) {
        rows.add(header);
    }

    public Table row(Object... cells) {
        String[] text = new String[cells.length];
        for (int i = 0; i < cells.length; i++) {
            text[i] = escape(String.valueOf(cells[i]));
        }
        rows.add(text);
        return this;
    }

    /** {@code text} with its control characters and backslashes escaped, as the table shows it. */
    public static String escape(String text) {
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            String replacement = switch (c) {
                case '\\' -> "\\\\";
                case '\n' -> "\\n";
                case '\t' -> "\\t";
                case '\r' -> "\\r";
                case '\u001b' -> "\\e";
                default -> Character.isISOControl(c) ? String.format("\\x%02x", (int) c) : null;
            };
            if (replacement != null && out == null) {
                out = new StringBuilder(text.length() + 8).append(text, 0, i);
            }
            if (out != null) {
                if (replacement != null) {
                    out.append(replacement);
                } else {
                    out.append(c);
                }
            }
        }
        return out == null ? text : out.toString();
    }

    public String render() {
        int columns = rows.get(0).length;
        int[] widths = new int[columns];
        for (String[] row : rows) {
            for (int c = 0; c < columns - 1 && c < row.length; c++) {
                widths[c] = Math.max(widths[c], row[c].length());
            }
        }
        StringBuilder out = new StringBuilder();
        for (String[] row : rows) {
            StringBuilder line = new StringBuilder();
            for (int c = 0; c < row.length; c++) {
                line.append(row[c]);
                if (c < row.length - 1) {
                    line.append(" ".repeat(widths[c] - row[c].length() + 2));
                }
            }
            out.append(line.toString().stripTrailing()).append(System.lineSeparator());
        }
        return out.toString();
    }
}
