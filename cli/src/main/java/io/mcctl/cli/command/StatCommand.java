package io.mcctl.cli.command;

import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.storage.layout.BucketLayout;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl stat}: a key's replicas, best first. */
@Command(name = "stat", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Show a key's replicas, best first: type, status, file, offset, size, bucket, pages, CRC32C.",
                "BUCKET is the bucket's number, in decimal as everywhere in mcctl; FILE names its file (bucket 61 is bucket_3d.data). "
                        + "Control characters in text output are shown escaped (\\n, \\t, \\e, \\xHH; a backslash as \\\\)."})
public final class StatCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Mixin
    OutputMixin output;

    @Parameters(index = "0", paramLabel = "KEY", description = "Key to describe.")
    String key;

    @Override
    public Integer call() {
        String tenant = client.tenant();
        List<Replica> replicas;
        GetLayoutResponse layout;
        io.mcctl.master.proto.v1.GetReplicaListResponse answer;
        try (MasterClient master = client.connect(spec)) {
            answer = master.replicaList(tenant, key);
            replicas = answer.getReplicasList();
            layout = master.layout();
        }
        BucketLayout geometry = MasterClient.bucketLayout(layout);
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            List<Map<String, Object>> rows = new ArrayList<>();
            for (Replica replica : replicas) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("type", replica.getType().name());
                row.put("status", replica.getStatus().name());
                if (replica.hasDistributedDisk()) {
                    row.putAll(place(geometry, replica.getDistributedDisk()));
                }
                rows.add(row);
            }
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("tenant", tenant);
            report.put("key", key);
            report.put("replicas", rows);
            report.put("last_use_age_ms", answer.getLastUseAgeMs());
            report.put("pinned", answer.getPinned());
            out.println(OutputMixin.toJson(report));
        } else {
            Table table = new Table("TYPE", "STATUS", "FILE", "OFFSET", "SIZE", "BUCKET", "PAGES", "CRC32C");
            for (Replica replica : replicas) {
                DistributedDiskDescriptor d = replica.getDistributedDisk();
                Map<String, Object> p = place(geometry, d);
                int bucket = (Integer) p.get("bucket");
                table.row(replica.getType().name(), replica.getStatus().name(), d.getFilePath(), d.getOffset(), d.getObjectSize(),
                        bucket < 0 ? "-" : bucket, p.get("pages"), p.get("crc32c"));
            }
            out.print(table.render());
            out.printf("last used %s ago%s%n", age(answer.getLastUseAgeMs()), answer.getPinned() ? "; pinned" : "");
        }
        out.flush();
        return ExitCodes.OK;
    }

    /** An age for people: 850 ms, 12.3 s, 4 min, 2.5 h, 3 d. */
    static String age(long millis) {
        if (millis < 1000) {
            return millis + " ms";
        }
        if (millis < 60_000) {
            return String.format(java.util.Locale.ROOT, "%.1f s", millis / 1000.0);
        }
        if (millis < 3_600_000) {
            return (millis / 60_000) + " min";
        }
        if (millis < 86_400_000) {
            return String.format(java.util.Locale.ROOT, "%.1f h", millis / 3_600_000.0);
        }
        return (millis / 86_400_000) + " d";
    }

    static Map<String, Object> place(BucketLayout layout, DistributedDiskDescriptor d) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("file", d.getFilePath());
        row.put("offset", d.getOffset());
        row.put("size", d.getObjectSize());
        row.put("bucket", layout.bucketOf(Path.of(d.getFilePath())).orElse(-1));
        row.put("first_page", d.getOffset() / layout.pageSize());
        row.put("pages", layout.pagesFor(d.getObjectSize()));
        row.put("crc32c", String.format("%08x", d.getCrc32C()));
        return row;
    }
}
