package io.mcctl.cli.command;

import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.proto.v1.PromotionTask;
import io.mcctl.master.protocol.PromotionTasks;
import io.mcctl.master.protocol.Quoted;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl promote}: queue objects for promotion into a node's DRAM segment now. */
@Command(name = "promote", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Queue objects for promotion into the DRAM tier now, whatever their reads (the master also queues an object",
                "read promotion_reads times within its admission window). Any node with a DRAM segment (mcctl node start --memory)",
                "takes the task with its heartbeat, copies the object's pages into its segment and checks the CRC32C; readers then",
                "find a MEMORY replica first. mcctl promotions lists the tasks."})
public final class PromoteCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Parameters(arity = "1..*", paramLabel = "KEY", description = "Keys of committed objects to promote.")
    List<String> keys;

    @Override
    public Integer call() {
        ExitCodes.checkKeys(keys);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        int worst = ExitCodes.OK;
        try (MasterClient master = client.connect(spec)) {
            for (String key : keys) {
                try {
                    PromotionTask task = master.promote(client.tenant(), key);
                    out.println("queued " + key + " (" + task.getSize() + " bytes) for promotion"
                            + (PromotionTasks.queued(task) ? "" : ": node " + task.getHolderId()
                            + " is copying it"));
                } catch (MasterException e) {
                    if (e.unreachable()) {
                        throw e;
                    }
                    err.println("mcctl: error: " + Quoted.shortened(key) + ": " + e.getMessage());
                    worst = Math.max(worst, ExitCodes.ofKeyError(e.code()));
                }
            }
        }
        out.flush();
        err.flush();
        return worst;
    }
}
