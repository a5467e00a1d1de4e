package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.bench.EtcdCluster;
import io.mcctl.cli.chaos.ChaosRun;
import io.mcctl.cli.chaos.FaultKind;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl bench chaos}: real traffic under seeded faults, every operation recorded and the history checked. */
@Command(name = "chaos", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Starts etcd (1 or 3 members), three masters with --ha over one root on a small tmpfs, two nodes (one",
                "with a DRAM segment) and Python workers, each in a network namespace of its own on a bridge this run creates",
                "(needs root; everything it makes is deleted at the end). Java and Python workers offload, overwrite, read,",
                "remove, pin, look up and promote while a nemesis seeded by --seed kills, stops, partitions, slows and",
                "starves processes, fills the root's filesystem and damages bucket files. Then: a quiet period past every",
                "deadline, a final read of every key, mcctl fsck --deep and mcctl snapshot wal dump, and a check of the",
                "recorded history: no acknowledged write lost, no wrong bytes read, no epoch going back, every unknown",
                "outcome resolved, fsck clean but for the damage the nemesis did. Exits 0 when the run passed, 1 when not;",
                "a failed run keeps its folder (history, log dump, fsck report, every process's log, report.json)."})
public final class BenchChaosCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--minutes", paramLabel = "N", defaultValue = "5", description = "Minutes of traffic and faults, 1 to 1440 (default: ${DEFAULT-VALUE}).")
    int minutes;

    @Option(names = "--seconds", paramLabel = "N", description = "Seconds of traffic and faults instead of --minutes, 10 to 86400.")
    Integer seconds;

    @Option(names = "--seed", paramLabel = "S", description = "Seed of the nemesis and the workers (default: a random one, printed).")
    Long seed;

    @Option(names = "--etcd-members", paramLabel = "N", defaultValue = "3", description = "etcd members, 1 or 3 (default: ${DEFAULT-VALUE}).")
    int etcdMembers;

    @Option(names = "--faults", paramLabel = "KIND[,KIND...]", defaultValue = "all", split = ",",
            description = "Fault kinds the nemesis injects: all, none, or a list of kill_master, kill_node, kill_etcd, kill_client, "
                    + "pause_leader, pause_client, pause_node, pause_etcd, partition_leader_etcd, partition_leader_clients, "
                    + "partition_client, netem_loss, netem_delay, fill_root, flip_byte, truncate_bucket, delete_bucket, idle_flood, "
                    + "idle_session, snapshot_restart (default: ${DEFAULT-VALUE}).")
    List<String> faults;

    @Option(names = "--java-workers", paramLabel = "N", defaultValue = "2", description = "Java client workers, 1 to 16 (default: ${DEFAULT-VALUE}).")
    int javaWorkers;

    @Option(names = "--python-workers", paramLabel = "N", defaultValue = "2", description = "Python client workers, 0 to 16 (default: ${DEFAULT-VALUE}).")
    int pythonWorkers;

    @Option(names = "--python-client", paramLabel = "DIR",
            description = "The clients/python directory of mcctl (default: clients/python of the checkout this mcctl was built in, "
                    + "or under the working directory).")
    Path pythonClient;

    @Option(names = "--dir", paramLabel = "DIR", description = "Where the run's folder goes (default: the system's temporary directory).")
    Path dir;

    @Option(names = "--keep", description = "Keep the run's folder even when it passed.")
    boolean keep;

    @Override
    public Integer call() throws Exception {
        Duration duration = seconds != null ? Duration.ofSeconds(seconds) : Duration.ofMinutes(minutes);
        if (seconds != null && (seconds < 10 || seconds > 86400)) {
            throw new CliException(ExitCodes.USAGE, "invalid --seconds " + seconds + ": allowed is 10 to 86400");
        }
        if (minutes < 1 || minutes > 1440) {
            throw new CliException(ExitCodes.USAGE, "invalid --minutes " + minutes + ": allowed is 1 to 1440");
        }
        if (etcdMembers != 1 && etcdMembers != 3) {
            throw new CliException(ExitCodes.USAGE, "invalid --etcd-members " + etcdMembers + ": allowed are 1 and 3");
        }
        if (javaWorkers < 1 || javaWorkers > 16) {
            throw new CliException(ExitCodes.USAGE, "invalid --java-workers " + javaWorkers + ": allowed is 1 to 16");
        }
        if (pythonWorkers < 0 || pythonWorkers > 16) {
            throw new CliException(ExitCodes.USAGE, "invalid --python-workers " + pythonWorkers + ": allowed is 0 to 16");
        }
        Set<FaultKind> kinds = faultKinds(faults);
        EtcdCluster.checkInstalled(EtcdCluster.DEFAULT_BINARY);
        Path python = pythonWorkers == 0 ? null : pythonClient();
        long runSeed = seed != null ? seed : new java.security.SecureRandom().nextLong() & Long.MAX_VALUE;
        PrintWriter err = spec.commandLine().getErr();
        err.println("chaos: seed " + runSeed + " (repeat with --seed " + runSeed + "), " + duration.toSeconds() + " s, " + kinds.size() + " fault kinds");
        err.flush();
        Path parent = dir != null ? dir : Path.of(System.getProperty("java.io.tmpdir"));
        Map<String, Object> report = ChaosRun.run(new ChaosRun.Settings(runSeed, duration, etcdMembers, javaWorkers, pythonWorkers, kinds, parent,
                python, keep), null);
        print(report);
        return (boolean) report.get("passed") ? ExitCodes.OK : ExitCodes.FAILED;
    }

    /** {@code all}, {@code none} or fault kinds by name. */
    public static Set<FaultKind> faultKinds(List<String> names) {
        if (names.size() == 1 && names.get(0).equals("all")) {
            return FaultKind.all();
        }
        if (names.size() == 1 && names.get(0).equals("none")) {
            return EnumSet.noneOf(FaultKind.class);
        }
        Set<FaultKind> kinds = EnumSet.noneOf(FaultKind.class);
        for (String name : names) {
            try {
                kinds.add(FaultKind.of(name));
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCodes.USAGE, "invalid --faults: " + e.getMessage());
            }
        }
        return kinds;
    }

    private Path pythonClient() {
        if (pythonClient != null) {
            if (!Files.isDirectory(pythonClient.resolve("mcctl"))) {
                throw new CliException(ExitCodes.USAGE, "invalid --python-client " + pythonClient + ": it holds no mcctl package (mcctl/)");
            }
            return pythonClient.toAbsolutePath();
        }
        List<Path> candidates = new java.util.ArrayList<>(List.of(Path.of("clients", "python"), Path.of("..", "clients", "python")));
        try {
            // the jar is <checkout>/bench/target/mcctl-all.jar, the classes <checkout>/bench/target/classes
            Path code = Path.of(BenchChaosCommand.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            candidates.add(0, code.getParent().getParent().getParent().resolve("clients").resolve("python"));
        } catch (java.net.URISyntaxException | RuntimeException e) {
            // not from a file: the working directory's candidates remain
        }
        for (Path candidate : candidates) {
            if (Files.isDirectory(candidate.resolve("mcctl"))) {
                return candidate.toAbsolutePath().normalize();
            }
        }
        throw new CliException(ExitCodes.USAGE, "no clients/python here: name it with --python-client DIR, or run with --python-workers 0");
    }

    private void print(Map<String, Object> report) {
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(report));
            out.flush();
            return;
        }
        out.println("chaos run " + report.get("run") + ", seed " + report.get("seed") + ", " + report.get("seconds") + " s: "
                + ((boolean) report.get("passed") ? "PASSED" : "FAILED"));
        out.println("faults injected: " + report.get("faults_injected") + " " + report.get("faults_by_kind"));
        out.println("operations: " + report.get("ops_by_kind_and_outcome"));
        out.println("acknowledged writes: " + report.get("acknowledged_writes") + ", lost: " + report.get("lost") + ", wrong bytes: "
                + report.get("wrong_bytes"));
        out.println("longest recovery (ms) by fault kind: " + report.get("longest_recovery_ms_by_kind"));
        out.println("checks: " + report.get("checks"));
        for (Object finding : (List<?>) report.get("findings")) {
            out.println("finding: " + finding);
        }
        for (Object violation : (List<?>) report.get("violations")) {
            out.println("violation: " + violation);
        }
        if (report.get("folder") != null) {
            out.println("history, logs and report kept in " + report.get("folder"));
        }
        out.flush();
    }
}
