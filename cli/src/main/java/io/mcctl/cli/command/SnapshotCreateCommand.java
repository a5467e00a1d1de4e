package io.mcctl.cli.command;

import io.mcctl.cli.MasterOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.CreateSnapshotResponse;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code mcctl snapshot create}: ask a running master for a snapshot now. */
@Command(name = "create", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Ask the master to write a snapshot of its state now (it keeps serving meanwhile).")
public final class SnapshotCreateCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    MasterOptions client;

    @Mixin
    OutputMixin output;

    @Override
    public Integer call() {
        CreateSnapshotResponse taken;
        try (MasterClient master = client.connect(spec)) {
            taken = master.createSnapshot();
        }
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("path", taken.getPath());
            report.put("wal_sequence", taken.getWalSequence());
            report.put("mappings", taken.getMappings());
            report.put("in_flight", taken.getInFlight());
            report.put("quarantined_ranges", taken.getQuarantinedRanges());
            report.put("bytes", taken.getBytes());
            report.put("millis", taken.getMillis());
            out.println(OutputMixin.toJson(report));
        } else {
            out.printf("snapshot %s: %d mappings, %d in flight, %d quarantined ranges, covers log record %d, %d bytes in %d ms%n",
                    taken.getPath(), taken.getMappings(), taken.getInFlight(), taken.getQuarantinedRanges(), taken.getWalSequence(),
                    taken.getBytes(), taken.getMillis());
        }
        out.flush();
        return ExitCodes.OK;
    }
}
