package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.util.DescriptorRows;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.KeyInfo;
import io.mcctl.master.proto.v1.ListKeysResponse;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl ls}: a tenant's keys, in key order. */
@Command(name = "ls", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"List a tenant's keys in key order, with size and place.",
                "Control characters in keys are shown escaped in text output (\\n, \\t, \\e, \\xHH; a backslash as \\\\); "
                        + "-o json gives the keys as they are."})
public final class LsCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Mixin
    OutputMixin output;

    @Option(names = "--prefix", paramLabel = "P", defaultValue = "", description = "Only keys that start with P.")
    String prefix;

    @Option(names = "--limit", paramLabel = "N", defaultValue = "0", description = "At most N keys (default: all).")
    long limit;

    @Override
    public Integer call() {
        if (limit < 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --limit " + limit + ": allowed is 0 (all) or more");
        }
        String tenant = client.tenant();
        List<KeyInfo> keys = new ArrayList<>();
        try (MasterClient master = client.connect(spec)) {
            String token = "";
            do {
                int page = (int) (limit == 0 ? 1000 : Math.min(1000, limit - keys.size()));
                ListKeysResponse response = master.listKeys(tenant, prefix, page, token);
                keys.addAll(response.getKeysList());
                token = response.getNextPageToken();
            } while (!token.isEmpty() && (limit == 0 || keys.size() < limit));
        }
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            List<Map<String, Object>> rows = new ArrayList<>();
            for (KeyInfo info : keys) {
                rows.add(DescriptorRows.of(info.getKey(), info.getDistributedDisk()));
            }
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("tenant", tenant);
            report.put("prefix", prefix);
            report.put("keys", rows);
            out.println(OutputMixin.toJson(report));
        } else {
            Table table = new Table("KEY", "SIZE", "FILE", "OFFSET", "CRC32C");
            for (KeyInfo info : keys) {
                table.row(info.getKey(), info.getDistributedDisk().getObjectSize(), info.getDistributedDisk().getFilePath(),
                        info.getDistributedDisk().getOffset(), String.format("%08x", info.getDistributedDisk().getCrc32C()));
            }
            out.print(table.render());
        }
        out.flush();
        return ExitCodes.OK;
    }
}
