package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.master.etcd.EtcdClient;
import io.mcctl.master.etcd.EtcdTarget;
import io.mcctl.master.etcd.MemberStatus;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl master status}: the leader and standbys of each mcctl cluster in etcd, with their log positions and lag. */
@Command(name = "status", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Show the masters of a high-availability cluster from etcd: the leader, every standby, the log record each has "
                + "applied and how far it is behind the leader (docs/ha.md).",
                "Exits 0 when each cluster shown has a leader, 1 when one has none."})
public final class MasterStatusCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--ha", required = true, paramLabel = "ETCD",
            description = "The etcd cluster the masters campaign on: etcd://host:port[,host:port...][/prefix].")
    String etcd;

    @Option(names = "--cluster", paramLabel = "ID", description = "Only the cluster with this id (that of the root's layout record).")
    String cluster;

    record Member(String cluster, String address, String role, long applied, long lagRecords, long epoch) {
    }

    @Override
    public Integer call() throws Exception {
        EtcdTarget target;
        try {
            target = EtcdTarget.parse(etcd);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, e.getMessage());
        }
        Map<String, String> leaders = new TreeMap<>();
        Map<String, List<EtcdClient.Entry>> members = new TreeMap<>();
        try (EtcdClient client = new EtcdClient(target, Duration.ofSeconds(2))) {
            for (EtcdClient.Entry entry : client.list(target.prefix() + "/mcctl/")) {
                String rest = entry.key().substring((target.prefix() + "/mcctl/").length());
                int slash = rest.indexOf('/');
                if (slash < 0) {
                    continue;
                }
                String id = rest.substring(0, slash);
                if (cluster != null && !cluster.equals(id)) {
                    continue;
                }
                String what = rest.substring(slash + 1);
                if (what.equals("leader")) {
                    leaders.put(id, entry.value());
                } else if (what.startsWith("members/")) {
                    members.computeIfAbsent(id, k -> new ArrayList<>()).add(entry);
                }
            }
        } catch (EtcdClient.EtcdUnavailableException e) {
            throw new CliException(ExitCodes.UNAVAILABLE, e.getMessage());
        }
        List<Member> rows = new ArrayList<>();
        for (Map.Entry<String, List<EtcdClient.Entry>> byCluster : members.entrySet()) {
            String leader = leaders.getOrDefault(byCluster.getKey(), "");
            long leaderLog = 0;
            for (EtcdClient.Entry entry : byCluster.getValue()) {
                if (entry.key().endsWith("/members/" + leader)) {
                    leaderLog = MemberStatus.parse(entry.value()).log();
                }
            }
            for (EtcdClient.Entry entry : byCluster.getValue()) {
                MemberStatus status = MemberStatus.parse(entry.value());
                String address = entry.key().substring(entry.key().indexOf("/members/") + "/members/".length());
                boolean leads = address.equals(leader);
                rows.add(new Member(byCluster.getKey(), address, leads ? "leader" : status.role(), leads ? status.log() : status.applied(),
                        leads ? 0 : Math.max(0, leaderLog - status.applied()), status.epoch()));
            }
        }
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("leaders", leaders);
            report.put("masters", rows);
            out.println(OutputMixin.toJson(report));
        } else if (rows.isEmpty() && leaders.isEmpty()) {
            out.println("no mcctl master under " + target);
        } else {
            Table table = new Table("CLUSTER", "MASTER", "ROLE", "EPOCH", "APPLIED", "LAG");
            for (Member row : rows) {
                table.row(row.cluster(), row.address(), row.role(), row.epoch(), row.applied(), row.lagRecords() + " records");
            }
            out.print(table.render());
            for (String id : members.keySet()) {
                if (!leaders.containsKey(id)) {
                    out.println("cluster " + id + " has no leader: the standbys campaign; see their logs");
                }
            }
        }
        out.flush();
        return members.keySet().stream().allMatch(leaders::containsKey) ? 0 : 1;
    }
}
