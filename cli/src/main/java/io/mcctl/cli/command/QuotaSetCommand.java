package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.MasterOptions;
import io.mcctl.cli.OutputMixin;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.SetTenantQuotaResponse;
import io.mcctl.master.protocol.KeyRules;
import io.mcctl.storage.config.SizeParser;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl quota set TENANT SIZE}: a tenant's byte quota, kept in the master's log and snapshots. */
@Command(name = "set", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Set a tenant's byte quota (none removes it). At its quota the tenant's offloads make room by evicting its own "
                + "least recently used objects, never another tenant's; with eviction off they are refused. An admin's call.",
                "",
                "Example: mcctl quota set team-a 200GiB"})
public final class QuotaSetCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "TENANT", description = "The tenant.")
    String tenant;

    @Parameters(index = "1", paramLabel = "SIZE", description = "Bytes the tenant may hold (e.g. 500MiB, 2TiB), or none.")
    String size;

    @Mixin
    MasterOptions client;

    @Mixin
    OutputMixin output;

    @Override
    public Integer call() {
        String problem = KeyRules.checkTenant(tenant);
        if (problem != null) {
            throw new CliException(ExitCodes.USAGE, "invalid TENANT: " + problem);
        }
        long bytes;
        if (size.equals("none")) {
            bytes = 0;
        } else {
            try {
                bytes = SizeParser.parse(size);
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCodes.USAGE, "invalid SIZE '" + size + "': allowed is a size such as 500MiB or 2TiB, or none");
            }
            if (bytes <= 0) {
                throw new CliException(ExitCodes.USAGE, "invalid SIZE '" + size + "': a quota is at least 1 byte (none removes it)");
            }
        }
        SetTenantQuotaResponse answer;
        try (MasterClient master = client.connect(spec)) {
            answer = master.setQuota(tenant, bytes);
        }
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("tenant", tenant);
            report.put("quota_bytes", bytes);
            report.put("previous_quota_bytes", answer.getPreviousMaxBytes());
            report.put("used_bytes", answer.getUsedBytes());
            out.println(OutputMixin.toJson(report));
        } else {
            out.printf("tenant %s: quota %s (was %s), %d bytes used%n", tenant, bytes == 0 ? "none" : bytes + " bytes",
                    answer.getPreviousMaxBytes() == 0 ? "none" : answer.getPreviousMaxBytes() + " bytes", answer.getUsedBytes());
        }
        out.flush();
        return ExitCodes.OK;
    }
}
