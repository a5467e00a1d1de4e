package io.mcctl.cli.command;

import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.MasterOptions;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.ListPromotionsResponse;
import io.mcctl.master.proto.v1.PromotionTask;
import io.mcctl.master.protocol.PromotionTasks;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code mcctl promotions}: the promotion tasks and the DRAM tier's totals. */
@Command(name = "promotions", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"List the promotion tasks, oldest first: queued ones (any node may take them) and ones a node is copying,",
                "with the DRAM tier's totals. Tasks are logged: they survive a master restart, queued again for any node."})
public final class PromotionsCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    MasterOptions master;

    @Mixin
    OutputMixin output;

    @Override
    public Integer call() {
        ListPromotionsResponse listed;
        try (MasterClient client = master.connect(spec)) {
            listed = client.listPromotions();
        }
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            List<Map<String, Object>> tasks = new ArrayList<>();
            for (PromotionTask t : listed.getTasksList()) {
                Map<String, Object> task = new LinkedHashMap<>();
                task.put("tenant", t.getTenantId());
                task.put("key", t.getKey());
                task.put("size", t.getSize());
                task.put("file_path", t.getSource().getFilePath());
                task.put("offset", t.getSource().getOffset());
                task.put("holder_id", t.getHolderId());
                task.put("age_ms", t.getAgeMs());
                tasks.add(task);
            }
            Map<String, Object> all = new LinkedHashMap<>();
            all.put("admission_reads", listed.getAdmissionReads());
            all.put("queued_total", listed.getQueuedTotal());
            all.put("succeeded_total", listed.getSucceededTotal());
            all.put("failed_total", listed.getFailedTotal());
            all.put("memory_objects", listed.getMemoryObjects());
            all.put("memory_bytes", listed.getMemoryBytes());
            all.put("memory_evicted_total", listed.getMemoryEvictedTotal());
            all.put("tasks", tasks);
            out.println(OutputMixin.toJson(all));
        } else {
            Table table = new Table("TENANT", "KEY", "BYTES", "STATE", "AGE");
            for (PromotionTask t : listed.getTasksList()) {
                table.row(t.getTenantId(), t.getKey(), t.getSize(),
                        PromotionTasks.queued(t) ? "queued" : "copying on " + t.getHolderId(), t.getAgeMs() + " ms");
            }
            if (listed.getTasksCount() > 0) {
                out.print(table.render());
            }
            out.printf("%d tasks; since start %d queued, %d succeeded, %d failed; in DRAM: %d objects, %d bytes (%d evicted); admission: %s%n",
                    listed.getTasksCount(), listed.getQueuedTotal(), listed.getSucceededTotal(), listed.getFailedTotal(),
                    listed.getMemoryObjects(), listed.getMemoryBytes(), listed.getMemoryEvictedTotal(),
                    listed.getAdmissionReads() == 0 ? "off (mcctl promote only)" : listed.getAdmissionReads() + " reads");
        }
        out.flush();
        return ExitCodes.OK;
    }
}
