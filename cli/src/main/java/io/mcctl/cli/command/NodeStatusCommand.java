package io.mcctl.cli.command;

import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.MasterOptions;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.ClientInfo;
import io.mcctl.master.proto.v1.ListClientsResponse;
import io.mcctl.storage.config.SizeParser;
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

/** {@code mcctl node status}: the master's nodes, their liveness and what they hold. */
@Command(name = "status", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"List the nodes the master knows: client id, endpoint, alive or dead, the time since their last ping, "
                + "the LOCAL_DISK objects each owns, and its DRAM segment: size, bytes used by MEMORY replicas (complete or "
                + "staged), MEMORY objects, and the promotion tasks it has taken and not finished.",
                "A node dead for missing its TTL is listed with the replicas CleanupStaleHandles removed. The list is the master's "
                        + "memory: after a master restart nodes appear again as they register."})
public final class NodeStatusCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    MasterOptions master;

    @Mixin
    OutputMixin output;

    @Override
    public Integer call() {
        ListClientsResponse clients;
        try (MasterClient client = master.connect(spec)) {
            clients = client.listClients();
        }
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            List<Map<String, Object>> nodes = new ArrayList<>();
            for (ClientInfo c : clients.getClientsList()) {
                Map<String, Object> node = new LinkedHashMap<>();
                node.put("client_id", c.getClientId());
                node.put("endpoint", c.getTransportEndpoint());
                node.put("alive", c.getAlive());
                node.put("last_ping_age_ms", c.getLastPingAgeMs());
                node.put("registered_age_ms", c.getRegisteredAgeMs());
                node.put("page_mode", c.getPageMode());
                node.put("local_disk_dir", c.getLocalDiskDir());
                node.put("local_disk_objects", c.getLocalDiskObjects());
                node.put("local_disk_bytes", c.getLocalDiskBytes());
                node.put("cleaned_replicas", c.getCleanedReplicas());
                node.put("memory_bytes", c.getMemoryBytes());
                node.put("memory_used_bytes", c.getMemoryUsedBytes());
                node.put("memory_objects", c.getMemoryObjects());
                node.put("promotions_held", c.getPromotionsHeld());
                nodes.add(node);
            }
            out.println(OutputMixin.toJson(Map.of("ttl_ms", clients.getTtlMs(), "nodes", nodes)));
        } else {
            Table table = new Table("CLIENT ID", "ENDPOINT", "STATE", "LAST PING", "LOCAL_DISK OBJECTS", "BYTES", "LOCAL DISK",
                    "MEMORY", "USED", "MEMORY OBJECTS", "PROMOTING");
            long alive = 0;
            for (ClientInfo c : clients.getClientsList()) {
                alive += c.getAlive() ? 1 : 0;
                table.row(c.getClientId(), c.getTransportEndpoint(), c.getAlive() ? "alive" : "dead (" + c.getCleanedReplicas() + " replicas cleaned)",
                        c.getLastPingAgeMs() + " ms ago", c.getLocalDiskObjects(), c.getLocalDiskBytes(),
                        c.getLocalDiskDir().isEmpty() ? "-" : c.getLocalDiskDir(),
                        c.getMemoryBytes() == 0 ? "-" : SizeParser.format(c.getMemoryBytes()),
                        c.getMemoryBytes() == 0 ? "-" : String.valueOf(c.getMemoryUsedBytes()),
                        c.getMemoryBytes() == 0 ? "-" : String.valueOf(c.getMemoryObjects()),
                        c.getMemoryBytes() == 0 ? "-" : String.valueOf(c.getPromotionsHeld()));
            }
            if (clients.getClientsCount() > 0) {
                out.print(table.render());
            }
            out.printf("%d nodes, %d alive (ttl %d ms)%n", clients.getClientsCount(), alive, clients.getTtlMs());
        }
        out.flush();
        return ExitCodes.OK;
    }
}
