package io.mcctl.cli;

import java.util.ArrayList;
import java.util.List;

/** A borderless text table: columns padded to their widest cell, the last column not padded. */
public final class Table {

    private final List<String[]> rows = new ArrayList<>();

    public Table(String... header) {
        rows.add(header);
    }

    public Table row(Object... cells) {
        String[] text = new String[cells.length];
        for (int i = 0; i < cells.length; i++) {
            text[i] = String.valueOf(cells[i]);
        }
        rows.add(text);
        return this;
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
