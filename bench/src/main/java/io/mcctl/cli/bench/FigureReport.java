package io.mcctl.cli.bench;

import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Model.CommandSpec;

/** A benchmark's report of named figures, and the median its repeated measurements report. */
public final class FigureReport {

    private FigureReport() {
    }

    /** The middle of {@code values} (the upper one of an even count). */
    public static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(null);
        return sorted.get(sorted.size() / 2);
    }

    /** A report as a FIGURE/VALUE table, or as JSON with {@code -o json}. */
    public static void print(CommandSpec spec, OutputMixin output, Map<String, Object> report) {
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(report));
        } else {
            Table table = new Table("FIGURE", "VALUE");
            report.forEach((k, v) -> {
                if (!"machine".equals(k) && !"benchmark".equals(k)) {
                    table.row(k, v);
                }
            });
            out.print(table.render());
        }
        out.flush();
    }
}
