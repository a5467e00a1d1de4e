package io.mcctl.cli.command;

import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.stats.TierStatsReport;
import io.mcctl.master.client.MasterClient;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code mcctl stats}: one screen of the tier's state. */
@Command(name = "stats", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Show the tier's state: pages used of all and per bucket, allocations in flight, quarantined pages,",
                "mappings and tenants; eviction on or off with its watermarks and totals; how long ago the least recently",
                "used object was used; the hit ratio of mapping lookups overall and per tenant, biggest tenants first; and",
                "why the master refuses changes, when it does. mcctl top shows the same, refreshed."})
public final class StatsCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Mixin
    OutputMixin output;

    @Override
    public Integer call() {
        TierStatsReport report;
        try (MasterClient master = client.connect(spec)) {
            report = new TierStatsReport(master.stats(), master.layout().getPageSize());
        }
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(report.json()));
        } else {
            out.print(render(report));
        }
        out.flush();
        return ExitCodes.OK;
    }

    /** The summary lines, a blank line and the tenant table. */
    static String render(TierStatsReport report) {
        StringBuilder text = new StringBuilder();
        int width = 0;
        for (String[] line : report.summary()) {
            width = Math.max(width, line[0].length());
        }
        for (String[] line : report.summary()) {
            text.append(line[0]).append(" ".repeat(width - line[0].length() + 2)).append(line[1]).append(System.lineSeparator());
        }
        if (report.stats().getTenantStatsCount() > 0) {
            text.append(System.lineSeparator());
            text.append(report.tenantTable(0));
        }
        return text.toString();
    }
}
