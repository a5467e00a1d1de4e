package io.mcctl.cli.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import io.mcctl.cli.bench.MasterProcess;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One chaos run: a cluster of real processes on a private network ({@link ChaosCluster}), Java and Python workers
 * offloading, reading and removing while the {@link Nemesis} injects faults, then a quiet period past every deadline, a
 * final read of every key, {@code mcctl fsck --deep} of the leader and {@code mcctl snapshot wal dump} of the shared
 * state, and the {@link ChaosChecker} over all of it. The run's folder keeps the history, the log dump, fsck's report,
 * every process's log and the report; it is deleted after a run that passed unless asked to keep it.
 */
public final class ChaosRun {

    /** What a run does. {@code pythonClient}: the clients/python directory (null: no Python workers). */
    public record Settings(long seed, Duration duration, int etcdMembers, int javaWorkers, int pythonWorkers, Set<FaultKind> faults,
                           Path parent, Path pythonClient, boolean keep) {
    }

    /** Called after traffic stopped and before the final reads and checks: a test plants what the checker must find. */
    public interface BeforeCheck {
        void accept(ChaosCluster cluster) throws Exception;
    }

    private ChaosRun() {
    }

    /** Runs it; the report says whether it passed ({@code "passed"}) and where its folder is. */
    public static Map<String, Object> run(Settings settings, BeforeCheck beforeCheck) throws Exception {
        String id = HexFormat.of().formatHex(new SecureRandom().generateSeed(3));
        Path folder = settings.parent().resolve("chaos-" + settings.seed() + "-" + id);
        Files.createDirectories(folder);
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("seed", settings.seed());
        report.put("run", id);
        report.put("started", Instant.now().toString());
        report.put("seconds", settings.duration().toSeconds());
        report.put("etcd_members", settings.etcdMembers());
        report.put("java_workers", settings.javaWorkers());
        report.put("python_workers", settings.pythonWorkers());
        report.put("fault_kinds", settings.faults().stream().map(FaultKind::label).toList());
        List<String> findings = new ArrayList<>();
        ChaosChecker checker = new ChaosChecker();
        Nemesis nemesis = null;
        ChaosNet net = ChaosNet.create(id, new java.util.Random());
        ChaosCluster cluster = null;
        Thread cleanup = new Thread(net::close, "chaos-cleanup-" + id);
        Runtime.getRuntime().addShutdownHook(cleanup);
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> workers = new ArrayList<>();
        try (ChaosHistory history = new ChaosHistory(folder.resolve("history-java.jsonl"), "j")) {
            cluster = ChaosCluster.start(net, folder, settings.etcdMembers(), settings.pythonWorkers(), settings.pythonClient(), settings.seed(),
                    settings.duration());
            ChaosCluster started = cluster;
            Thread unmount = new Thread(() -> closeQuietly(started));
            Runtime.getRuntime().removeShutdownHook(cleanup);
            cleanup = new Thread(() -> {
                unmount.run();
                net.close();
            }, "chaos-cleanup-" + id);
            Runtime.getRuntime().addShutdownHook(cleanup);
            for (int i = 0; i < settings.javaWorkers(); i++) {
                Thread worker = new Thread(new JavaWorker("j" + i, cluster.haUrl(), history, settings.seed() * 31 + i, stop, 2 << 20), "chaos-j" + i);
                worker.setDaemon(true);
                worker.start();
                workers.add(worker);
            }
            // A snapshot (the nemesis's, or a new leader's) lets the master delete the log it covers: copy it as it grows.
            ChaosCluster archived = cluster;
            Thread archiver = new Thread(() -> {
                while (!stop.get()) {
                    try {
                        archived.archiveLog();
                        Thread.sleep(200);
                    } catch (IOException e) {
                        // the state directory is being written: the next round copies it
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "chaos-log-archive");
            archiver.setDaemon(true);
            archiver.start();
            workers.add(archiver);
            long trafficStarted = System.nanoTime();
            try (Probe probe = new Probe(cluster.haUrl(), history)) {
                if (!probe.awaitServing(Nemesis.RECOVERY_LIMIT)) {
                    throw new IOException("the cluster never served an offload: " + probe.lastFailure());
                }
                nemesis = new Nemesis(cluster, history, settings.seed(), settings.faults(), probe);
                nemesis.run(trafficStarted + settings.duration().toNanos());
                while (System.nanoTime() - trafficStarted < settings.duration().toNanos()) {
                    Thread.sleep(200); // a run without faults, or a nemesis that stopped early, still runs its traffic out
                }
                findings.addAll(nemesis.findings());
            }
            stop.set(true);
            for (Thread worker : workers) {
                worker.join(60_000);
            }
            for (ChaosProcess python : cluster.pythons()) {
                python.kill(); // mid-operation: what it had in flight must expire
            }
            // Past every deadline, grace and read lease, so that nothing may be in flight or quarantined any more.
            Thread.sleep(ChaosCluster.ALLOCATION_DEADLINE.plus(ChaosCluster.ALLOCATION_GRACE).plus(ChaosCluster.READ_LEASE).toMillis() + 3000);
            if (beforeCheck != null) {
                beforeCheck.accept(cluster);
            }
            String leader = cluster.awaitLeader(Duration.ofSeconds(60));
            long inFlight;
            try (MasterClient client = new MasterClient(leader, Duration.ofSeconds(10))) {
                inFlight = client.stats().getInFlightAllocations();
            }
            finalReads(cluster, folder, history);
            JsonNode fsck = fsck(cluster, leader, folder);
            Iterable<JsonNode> wal = walDump(cluster, folder);
            List<Path> histories = new ArrayList<>(List.of(folder.resolve("history-java.jsonl")));
            for (int i = 0; i < settings.pythonWorkers(); i++) {
                histories.add(folder.resolve("history-py" + i + ".jsonl"));
            }
            history.close();
            checker.check(ChaosChecker.readLines(histories), wal, fsck, inFlight);
        } catch (Exception e) {
            findings.add("the run stopped: " + e);
            throw e;
        } finally {
            stop.set(true);
            for (Thread worker : workers) {
                worker.join(10_000);
            }
            if (cluster != null) {
                cluster.close();
            }
            net.close();
            try {
                Runtime.getRuntime().removeShutdownHook(cleanup);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs now
            }
            report(report, nemesis, checker, findings, folder);
        }
        boolean passed = (boolean) report.get("passed");
        if (passed && !settings.keep()) {
            deleteTree(folder);
            report.put("folder", null);
        }
        return report;
    }

    private static void report(Map<String, Object> report, Nemesis nemesis, ChaosChecker checker, List<String> findings, Path folder)
            throws IOException {
        Map<String, Integer> faults = new TreeMap<>();
        Map<String, Long> recovery = new TreeMap<>();
        if (nemesis != null) {
            nemesis.injected().forEach((kind, n) -> faults.put(kind.label(), n));
            nemesis.longestRecoveryMs().forEach((kind, ms) -> recovery.put(kind.label(), ms));
        }
        report.put("faults_by_kind", faults);
        report.put("faults_injected", faults.values().stream().mapToInt(Integer::intValue).sum());
        report.put("ops_by_kind_and_outcome", checker.opsByKindAndOutcome());
        Map<String, Integer> counts = checker.counts();
        report.put("acknowledged_writes", counts.getOrDefault("acknowledged_writes", 0));
        report.put("lost", counts.getOrDefault("lost", 0));
        report.put("wrong_bytes", counts.getOrDefault("wrong_bytes", 0) + counts.getOrDefault("wrong_bytes_on_disk", 0)
                + counts.getOrDefault("undurable_read", 0));
        report.put("longest_recovery_ms_by_kind", recovery);
        report.put("checks", counts);
        report.put("violations", checker.violations());
        report.put("violation_count", checker.violationCount());
        report.put("findings", findings);
        report.put("passed", findings.isEmpty() && checker.violationCount() == 0 && counts.containsKey("final_present"));
        report.put("folder", folder.toString());
        Files.writeString(folder.resolve("report.json"), io.mcctl.cli.OutputMixin.toJson(report));
    }

    /** Reads every key any write touched, through a fresh client, into the history as the "final" worker's reads. */
    private static void finalReads(ChaosCluster cluster, Path folder, ChaosHistory history) throws IOException {
        Set<List<String>> keys = new LinkedHashSet<>();
        List<Path> files = new ArrayList<>();
        try (var list = Files.list(folder)) {
            list.filter(f -> f.getFileName().toString().startsWith("history-")).forEach(files::add);
        }
        for (JsonNode line : ChaosChecker.readLines(files)) {
            if (line.path("type").asText().equals("invoke") && line.path("op").asText().equals("put")) {
                keys.add(List.of(line.get("tenant").asText(), line.get("key").asText()));
            }
        }
        try (MasterClient client = new MasterClient(cluster.haUrl(), Duration.ofSeconds(10));
             TierNode node = TierNode.connect(client, false, new ClientMetrics())) {
            // The final read judges the bucket files: a copy in a node's DRAM would hide a byte damaged on disk.
            node.readOnlySharedFiles();
            TierReader reader = new TierReader(node, 2);
            for (List<String> key : keys) {
                String id = history.invoke("final", "get", key.get(0), key.get(1), Map.of());
                try {
                    TierReader.Outcome read = reader.get(key.get(0), List.of(key.get(1))).get(0);
                    history.complete(id, JavaWorker.readOutcome(read), JavaWorker.readFields(read));
                } catch (RuntimeException e) {
                    history.complete(id, "unknown", Map.of("error", JavaWorker.shorten(e.toString())));
                }
            }
        }
    }

    private static JsonNode fsck(ChaosCluster cluster, String leader, Path folder) throws IOException, InterruptedException {
        Path out = folder.resolve("fsck.json");
        int exit = mcctl(List.of("fsck", "--master", leader, "--deep", "-o", "json"), out, folder.resolve("fsck.err"));
        if (exit != 0 && exit != 4) {
            throw new IOException("fsck --deep exited " + exit + ": " + Files.readString(folder.resolve("fsck.err")).strip());
        }
        return ChaosHistory.JSON.readTree(out.toFile());
    }

    private static Iterable<JsonNode> walDump(ChaosCluster cluster, Path folder) throws IOException, InterruptedException {
        Path out = folder.resolve("wal.jsonl");
        cluster.archiveLog(); // with the segments copied before each snapshot: the whole log from its first record
        int exit = mcctl(List.of("snapshot", "wal", "dump", cluster.logArchive().toString(), "-o", "json"), out, folder.resolve("wal.err"));
        if (exit != 0 && exit != 1) {
            throw new IOException("snapshot wal dump exited " + exit + ": " + Files.readString(folder.resolve("wal.err")).strip());
        }
        return ChaosChecker.readLines(List.of(out));
    }

    private static int mcctl(List<String> args, Path out, Path err) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(MasterProcess.command(ChaosCluster.JVM, args)).redirectOutput(out.toFile())
                .redirectError(err.toFile()).start();
        if (!process.waitFor(10, TimeUnit.MINUTES)) {
            process.destroyForcibly();
            throw new IOException("mcctl " + String.join(" ", args) + " did not finish within 10 min");
        }
        return process.exitValue();
    }

    private static void closeQuietly(ChaosCluster cluster) {
        try {
            cluster.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (var walk = Files.walk(dir)) {
            for (Path path : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
