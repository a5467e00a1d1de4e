package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.EtcdCluster;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.bench.MasterBenchmark;
import io.mcctl.cli.bench.MasterProcess;
import io.mcctl.cli.bench.ProcessCpu;
import io.mcctl.cli.util.FileTrees;
import io.mcctl.cli.util.Rounding;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.etcd.EtcdClient;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetMasterStatusResponse;
import io.mcctl.storage.config.DurationParser;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.MatchResult;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code mcctl bench failover}: what high availability costs. The time from kill -9, and from SIGTERM, of the leader to
 * the first offload through the new one, broken down, with many mappings in the state; and offload throughput and the master's CPU per
 * key with {@code --ha} against without, in interleaved rounds.
 */
@Command(name = "failover", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Starts etcd (one member on free loopback ports over a temporary directory) and two masters with --ha as",
                "processes of their own over one temporary root (256 x 4GiB sparse buckets, 64KiB pages), fills the state with",
                "--mappings mappings (offload cycles without data, 8 callers, batch 64) and takes a snapshot. Then --rounds times,",
                "while one caller offloads to the leader: kill -9 of the leader, and a client following the leader through etcd",
                "offloads one key until it succeeds. Each round is broken down into the lease expiry wait (until etcd drops the",
                "leader key), the election (until a standby holds it), the take-over (records read then, from the new leader's",
                "log) and the rest on the client's side; the killed master then comes back as a standby and catches up. Then",
                "--rounds times the same with SIGTERM, where the stopping leader hands over: it deletes the key itself.",
                "Last, offload throughput (8 callers, batch 64, --throughput-keys keys a round) against a master with --ha and one",
                "without, on fresh roots, in --throughput-rounds interleaved rounds, with each master's CPU per key from /proc."})
public final class BenchFailoverCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--mappings", paramLabel = "N", defaultValue = "1000000",
            description = "Mappings in the state before the first kill, rounded down to a multiple of 512 (default: ${DEFAULT-VALUE}).")
    int mappings;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "10",
            description = "Kills (-9) of the leader, and as many stops with SIGTERM (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--lease-ttl", paramLabel = "DURATION", defaultValue = "5s",
            description = "The masters' --ha-lease-ttl, whole seconds (default: ${DEFAULT-VALUE}, the masters' default).")
    String leaseTtl;

    @Option(names = "--throughput-rounds", paramLabel = "N", defaultValue = "5",
            description = "Throughput rounds per mode (with --ha, without), interleaved; 0 skips the comparison (default: ${DEFAULT-VALUE}).")
    int throughputRounds;

    @Option(names = "--throughput-transport", paramLabel = "stream|unary", defaultValue = "stream",
            description = "How both clients of the throughput comparison send their batches: the Session stream or unary calls "
                    + "(default: ${DEFAULT-VALUE}). The same for both, so the comparison is of --ha alone; a client given etcd:// "
                    + "uses unary calls unless told otherwise (docs/ha.md).")
    String throughputTransport;

    @Option(names = "--throughput-keys", paramLabel = "N", defaultValue = "100000",
            description = "Keys offloaded per throughput round, rounded down to a multiple of 512 (default: ${DEFAULT-VALUE}).")
    int throughputKeys;

    @Option(names = "--etcd", paramLabel = "PATH", defaultValue = "/usr/bin/etcd",
            description = "The etcd binary (Debian's package etcd-server) (default: ${DEFAULT-VALUE}).")
    Path etcdBinary;

    static final int CALLERS = 8;
    static final int BATCH = 64;
    static final long OBJECT_SIZE = 64 << 10;
    static final String TENANT = "bench";
    /** Longest wait for anything one step of a round waits for (an election, a standby catching up, a first offload). */
    static final Duration STEP_LIMIT = Duration.ofMinutes(5);
    /** How often the leader key is read while a round waits for it to change: the resolution of the breakdown. */
    static final long KEY_POLL_MILLIS = 2;
    /** The pause of the application's loop between failed offload attempts after the kill. */
    static final long RETRY_PAUSE_MILLIS = 10;

    private static final Pattern TOOK_OVER = Pattern.compile("leader of epoch (\\d+) \\(([^)]*)\\): took over after record \\d+ of epoch \\d+ "
            + "with (\\d+) mappings, (\\d+) in flight, (\\d+) records read at take-over, in (\\d+) ms");

    @Override
    public Integer call() throws Exception {
        if (mappings < CALLERS * BATCH || mappings > 100_000_000) {
            throw new CliException(ExitCodes.USAGE, "invalid --mappings " + mappings + ": allowed is 512 to 100000000");
        }
        if (rounds < 1 || rounds > 1000) {
            throw new CliException(ExitCodes.USAGE, "invalid --rounds " + rounds + ": allowed is 1 to 1000");
        }
        if (!throughputTransport.equals("stream") && !throughputTransport.equals("unary")) {
            throw new CliException(ExitCodes.USAGE, "invalid --throughput-transport '" + throughputTransport + "': allowed are stream and unary");
        }
        if (throughputRounds < 0 || throughputRounds > 100) {
            throw new CliException(ExitCodes.USAGE, "invalid --throughput-rounds " + throughputRounds + ": allowed is 0 to 100");
        }
        if (throughputKeys < CALLERS * BATCH || throughputKeys > 100_000_000) {
            throw new CliException(ExitCodes.USAGE, "invalid --throughput-keys " + throughputKeys + ": allowed is 512 to 100000000");
        }
        Duration ttl = leaseTtl();
        EtcdCluster.checkInstalled(etcdBinary);
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("benchmark", "failover");
        report.put("machine", MachineInfo.describe());
        report.put("masters", "2 with --ha (256 x 4GiB sparse buckets, 64KiB pages, WAL), etcd: 1 member on loopback");
        report.put("lease_ttl_s", ttl.toSeconds());
        Path work = Files.createTempDirectory("mcctl-bench-failover");
        try (EtcdCluster etcd = EtcdCluster.start(etcdBinary, work.resolve("etcd"), Duration.ofSeconds(60))) {
            failover(etcd, work.resolve("failover-root"), ttl, report);
            if (throughputRounds > 0) {
                throughput(etcd, work, ttl, report);
            }
        } finally {
            FileTrees.deleteTree(work);
        }
        print(report);
        return ExitCodes.OK;
    }

    private Duration leaseTtl() {
        try {
            Duration ttl = DurationParser.parse(leaseTtl);
            if (ttl.toMillis() % 1000 == 0 && ttl.toSeconds() >= 1 && ttl.toSeconds() <= 600) {
                return ttl;
            }
        } catch (IllegalArgumentException e) {
            // reported below
        }
        throw new CliException(ExitCodes.USAGE, "invalid --lease-ttl '" + leaseTtl + "': allowed is whole seconds from 1s to 600s");
    }

    // ---- fail-over rounds ----

    /** The masters of the fail-over rounds: every live one, by address. */
    private final Map<String, MasterProcess> live = new LinkedHashMap<>();

    private void failover(EtcdCluster etcd, Path root, Duration ttl, Map<String, Object> report) throws Exception {
        String prefix = "/failover";
        String haUrl = etcd.url(prefix);
        List<String> args = List.of("--root", root.toString(), "--bucket-count", "256", "--bucket-size", "4GiB", "--page-size", "64KiB",
                "--allocation-deadline", "10m", "--durability", "wal", "--ha", haUrl, "--ha-lease-ttl", DurationParser.format(ttl));
        try (EtcdClient keys = new EtcdClient(etcd.target(prefix), Duration.ofSeconds(2))) {
            startMaster(args); // the first creates the root and leads; the second finds it and follows
            String clusterId = status(live.values().iterator().next().address()).getClusterId();
            String leaderKey = etcd.target(prefix).leaderKey(clusterId);
            MasterProcess leader = awaitLeader(keys, leaderKey, live);
            startMaster(args);
            long fillStarted = System.nanoTime();
            long filled;
            try (MasterClient client = new MasterClient(haUrl, Duration.ofMinutes(5))) {
                List<List<String>> written = new ArrayList<>();
                MasterBenchmark.Phase fill;
                try {
                    fill = new MasterBenchmark(client, CALLERS, OBJECT_SIZE, "fill").offload(BATCH, mappings / (CALLERS * BATCH) * BATCH, written);
                } catch (java.util.concurrent.ExecutionException e) {
                    throw new CliException(ExitCodes.FAILED, "filling the state failed: " + e.getCause().getMessage());
                }
                if (fill.failures() > 0) {
                    throw new CliException(ExitCodes.FAILED, fill.failures() + " of " + fill.keys() + " offloads failed while filling the state");
                }
                written.clear();
                client.createSnapshot(); // a master that comes back loads it rather than replaying every record
                filled = client.stats().getMappings();
                report.put("fill_keys_per_s", Math.round(fill.keysPerSecond()));
            }
            report.put("mappings", filled);
            report.put("fill_seconds", Rounding.roundFinite((System.nanoTime() - fillStarted) / 1e9, 3));
            for (Stop stop : Stop.values()) {
                List<Map<String, Object>> rows = new ArrayList<>();
                for (int round = 1; round <= rounds; round++) {
                    leader = awaitLeader(keys, leaderKey, live);
                    rows.add(round(stop, round, haUrl, keys, leaderKey, leader, args));
                }
                report.put(stop.reportKey + "rounds", rows);
                Map<String, Object> summary = new LinkedHashMap<>();
                for (String figure : List.of(stop.total, stop.keyGone, "election_ms", "takeover_ms", "takeover_records_read", "client_ms",
                        "standby_back_ms")) {
                    List<Double> values = rows.stream().map(r -> ((Number) r.get(figure)).doubleValue()).sorted().toList();
                    Map<String, Object> spread = new LinkedHashMap<>();
                    spread.put("min", Rounding.roundFinite(values.get(0), 3));
                    spread.put("median", Rounding.roundFinite(median(values), 3));
                    spread.put("max", Rounding.roundFinite(values.get(values.size() - 1), 3));
                    summary.put(figure, spread);
                }
                report.put(stop.reportKey + "summary", summary);
            }
        } finally {
            for (MasterProcess master : live.values()) {
                master.process().destroyForcibly(); // at once, even when this run was interrupted; the root is thrown away
                master.close();
            }
            live.clear();
        }
    }

    /**
     * How a round stops the leader, and the names of its figures: kill -9 leaves the leader key to expire with the lease;
     * SIGTERM lets the leader hand over (it deletes the key and revokes the lease as it stops).
     */
    enum Stop {
        KILL("kill -9", "", "killed", "kill_to_first_offload_ms", "lease_expiry_ms"),
        SIGTERM("SIGTERM", "sigterm_", "stopped", "sigterm_to_first_offload_ms", "key_released_ms");

        final String signal;
        /** Before "rounds" and "summary" in the report. */
        final String reportKey;
        /** The row's field naming the stopped leader. */
        final String stopped;
        final String total;
        /** Until etcd no longer named the old leader. */
        final String keyGone;

        Stop(String signal, String reportKey, String stopped, String total, String keyGone) {
            this.signal = signal;
            this.reportKey = reportKey;
            this.stopped = stopped;
            this.total = total;
            this.keyGone = keyGone;
        }
    }

    /**
     * One stop: load on the leader, kill -9 or SIGTERM, then a client following the leader through etcd offloads one key
     * until it succeeds, while the leader key is read every {@link #KEY_POLL_MILLIS} ms; then the stopped master comes back.
     */
    private Map<String, Object> round(Stop stop, int round, String haUrl, EtcdClient keys, String leaderKey, MasterProcess leader,
                                      List<String> args) throws Exception {
        String oldAddress = leader.address();
        MasterProcess standby = live.values().stream().filter(m -> m != leader).findFirst()
                .orElseThrow(() -> new IllegalStateException("no standby beside the leader " + oldAddress));
        awaitCaughtUp(standby.address(), oldAddress);
        try (MasterClient client = new MasterClient(haUrl, Duration.ofSeconds(10))) {
            offloadOne(client, "round" + round + "/before"); // the client's channel is on the leader, as a working client's is
            AtomicBoolean stopLoad = new AtomicBoolean();
            Thread load = new Thread(() -> loadUntilStopped(oldAddress, "round" + round + "/load", stopLoad), "failover-load");
            load.setDaemon(true);
            load.start();
            Thread.sleep(500); // the kill lands in the middle of offloads
            // nanoTime when the old holder's key was gone, when a new holder had it (written by the poller)
            java.util.concurrent.atomic.AtomicLongArray keyChanges = new java.util.concurrent.atomic.AtomicLongArray(new long[] {-1, -1});
            String[] newHolder = {""};
            AtomicBoolean stopPolling = new AtomicBoolean();
            long killed = System.nanoTime();
            Thread poller = new Thread(() -> pollLeaderKey(keys, leaderKey, oldAddress, keyChanges, newHolder, stopPolling), "failover-etcd-poll");
            poller.setDaemon(true);
            poller.start();
            if (stop == Stop.KILL) {
                leader.kill();
            } else {
                leader.terminate(); // returns at once: the leader hands over while the client is at work
            }
            live.remove(oldAddress);
            stopLoad.set(true);
            int attempts = 0;
            long firstOffload = -1;
            Map<String, Integer> refusals = new LinkedHashMap<>();
            int servedByTheOldLeader = 0;
            while (firstOffload < 0) {
                attempts++;
                // A stopping leader serves until it hands over: an offload counts once it was sent after etcd named the next.
                boolean afterHandOver = stop == Stop.KILL || keyChanges.get(1) >= 0;
                try {
                    if (offloadOne(client, "round" + round + "/after" + attempts)) {
                        if (afterHandOver) {
                            firstOffload = System.nanoTime();
                        } else {
                            servedByTheOldLeader++;
                        }
                    }
                } catch (MasterException e) {
                    // the leader is gone or not yet replaced: the application tries again after a pause
                    refusals.merge(firstLine(e.getMessage()), 1, Integer::sum);
                    sleep(RETRY_PAUSE_MILLIS);
                }
                if (firstOffload < 0 && System.nanoTime() - killed > STEP_LIMIT.toNanos()) {
                    throw new CliException(ExitCodes.FAILED, stop.signal + " round " + round + ": no offload succeeded within "
                            + STEP_LIMIT.toMinutes() + " min of stopping the leader " + oldAddress);
                }
            }
            poller.join(10_000); // an offload succeeded, so a new leader holds the key already
            stopPolling.set(true);
            load.join(STEP_LIMIT.toMillis());
            if (keyChanges.get(0) < 0 || keyChanges.get(1) < 0) {
                throw new CliException(ExitCodes.FAILED, "round " + round + ": an offload succeeded but etcd's leader key was not seen to move from "
                        + oldAddress);
            }
            MasterProcess newLeader = live.get(newHolder[0]);
            if (newLeader == null) {
                throw new CliException(ExitCodes.FAILED, "round " + round + ": the new leader " + newHolder[0] + " is not a master of this run");
            }
            MatchResult tookOver = takeOverLine(newLeader);
            long takeoverMs = Long.parseLong(tookOver.group(6));
            double keyGoneMs = (keyChanges.get(0) - killed) / 1e6;
            double keyTakenMs = (keyChanges.get(1) - killed) / 1e6;
            double totalMs = (firstOffload - killed) / 1e6;
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("round", round);
            row.put(stop.stopped, oldAddress);
            row.put("new_leader", newHolder[0]);
            row.put("epoch", Long.parseLong(tookOver.group(1)));
            row.put(stop.total, Rounding.roundFinite(totalMs, 3));
            row.put(stop.keyGone, Rounding.roundFinite(keyGoneMs, 3));
            row.put("election_ms", Rounding.roundFinite(keyTakenMs - keyGoneMs, 3));
            row.put("takeover_ms", takeoverMs);
            row.put("takeover_records_read", Long.parseLong(tookOver.group(5)));
            row.put("takeover_mappings", Long.parseLong(tookOver.group(3)));
            row.put("takeover_in_flight", Long.parseLong(tookOver.group(4)));
            row.put("client_ms", Rounding.roundFinite(totalMs - keyTakenMs - takeoverMs, 3));
            row.put("offload_attempts", attempts);
            row.put("first_offload_ok", true);
            row.put("failed_attempts", refusals);
            if (stop == Stop.SIGTERM) {
                row.put("offloads_before_hand_over", servedByTheOldLeader);
                if (!leader.process().waitFor(STEP_LIMIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)) {
                    throw new CliException(ExitCodes.FAILED, "round " + round + ": the leader " + oldAddress + " did not exit within "
                            + STEP_LIMIT.toMinutes() + " min of SIGTERM");
                }
                row.put("exit_code", leader.process().exitValue());
                row.put("stepped_down", leader.log().contains("stepped down as leader of epoch"));
            }
            leader.close();
            long restarted = System.nanoTime();
            MasterProcess back = startMaster(args);
            awaitCaughtUp(back.address(), newHolder[0]);
            row.put("standby_back_ms", Rounding.roundFinite((System.nanoTime() - restarted) / 1e6, 3));
            return row;
        }
    }

    /** Offload cycles of {@link #BATCH} keys to {@code address} itself (not following the leader) until stopped or it fails. */
    private static void loadUntilStopped(String address, String prefix, AtomicBoolean stop) {
        try (MasterClient client = new MasterClient(address, Duration.ofSeconds(10))) {
            List<String> tenants = Collections.nCopies(BATCH, TENANT);
            List<Long> sizes = Collections.nCopies(BATCH, OBJECT_SIZE);
            for (long n = 0; !stop.get(); n++) {
                List<String> batch = new ArrayList<>(BATCH);
                for (int i = 0; i < BATCH; i++) {
                    batch.add(prefix + "/" + n + "/" + i);
                }
                var allocated = client.batchAllocate(batch, tenants, sizes, false);
                List<String> ok = new ArrayList<>();
                List<io.mcctl.master.proto.v1.DistributedDiskDescriptor> places = new ArrayList<>();
                for (int i = 0; i < BATCH; i++) {
                    AllocationResult r = allocated.getResults(i);
                    if (r.getStatus().getError() == ErrorCode.OK) {
                        ok.add(batch.get(i));
                        places.add(r.getDistributedDisk());
                    }
                }
                if (!ok.isEmpty()) {
                    client.notifySuccess(ok, tenants.subList(0, ok.size()), places);
                }
            }
        } catch (MasterException e) {
            // the leader was killed under the load: what the load is for
        }
    }

    /** Reads the leader key until a master other than {@code oldHolder} holds it, noting when the old holder's key went. */
    private static void pollLeaderKey(EtcdClient keys, String leaderKey, String oldHolder, java.util.concurrent.atomic.AtomicLongArray changes,
                                      String[] newHolder, AtomicBoolean stop) {
        long end = System.nanoTime() + STEP_LIMIT.toNanos();
        while (!stop.get() && System.nanoTime() - end < 0) {
            Optional<EtcdClient.Entry> entry;
            try {
                entry = keys.get(leaderKey);
            } catch (EtcdClient.EtcdUnavailableException e) {
                continue;
            }
            long now = System.nanoTime();
            String holder = entry.map(EtcdClient.Entry::value).orElse("");
            if (!holder.equals(oldHolder) && changes.get(0) < 0) {
                changes.set(0, now);
            }
            if (!holder.isEmpty() && !holder.equals(oldHolder)) {
                newHolder[0] = holder;
                changes.set(1, now);
                return;
            }
            sleep(KEY_POLL_MILLIS);
        }
    }

    /** One key offloaded (allocate, then notify) through {@code client}: true when both answered OK. */
    private static boolean offloadOne(MasterClient client, String key) {
        AllocationResult allocated = client.batchAllocate(List.of(key), List.of(TENANT), List.of(OBJECT_SIZE), false).getResults(0);
        if (allocated.getStatus().getError() != ErrorCode.OK) {
            return false;
        }
        return client.notifySuccess(List.of(key), List.of(TENANT), List.of(allocated.getDistributedDisk())).getResults(0).getError() == ErrorCode.OK;
    }

    /** The take-over line the master logged when it won, waiting for it briefly (it is logged just after it serves). */
    private static MatchResult takeOverLine(MasterProcess master) throws IOException {
        long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            Matcher m = TOOK_OVER.matcher(master.log());
            MatchResult last = null;
            while (m.find()) {
                last = m.toMatchResult();
            }
            if (last != null) {
                return last;
            }
            if (System.nanoTime() - end > 0) {
                throw new CliException(ExitCodes.FAILED, "the new leader " + master.address() + " logged no take-over line; its log:\n" + master.log());
            }
            sleep(20);
        }
    }

    private MasterProcess startMaster(List<String> args) throws IOException, InterruptedException {
        MasterProcess master = MasterProcess.start(List.of(), STEP_LIMIT, builder -> { }, args.toArray(String[]::new));
        live.put(master.address(), master);
        return master;
    }

    /** The live master etcd names as leader, once it says itself that it leads. */
    private static MasterProcess awaitLeader(EtcdClient keys, String leaderKey, Map<String, MasterProcess> masters) throws IOException {
        long end = System.nanoTime() + STEP_LIMIT.toNanos();
        while (System.nanoTime() - end < 0) {
            Optional<EtcdClient.Entry> entry = keys.get(leaderKey);
            MasterProcess master = entry.map(e -> masters.get(e.value())).orElse(null);
            if (master != null) {
                try {
                    if (status(master.address()).getRole() == GetMasterStatusResponse.Role.LEADER) {
                        return master;
                    }
                } catch (MasterException e) {
                    // taking over
                }
            }
            sleep(20);
        }
        throw new CliException(ExitCodes.FAILED, "no master led within " + STEP_LIMIT.toMinutes() + " min; etcd names " + keys.get(leaderKey)
                .map(EtcdClient.Entry::value).orElse("none"));
    }

    /** Waits until the standby at {@code standby} has applied every record the leader at {@code leader} has logged. */
    private static void awaitCaughtUp(String standby, String leader) {
        long end = System.nanoTime() + STEP_LIMIT.toNanos();
        String last = "";
        while (System.nanoTime() - end < 0) {
            try {
                GetMasterStatusResponse following = status(standby);
                long logged = status(leader).getLogSequence();
                if (following.getRole() == GetMasterStatusResponse.Role.STANDBY && following.getAppliedSequence() >= logged) {
                    return;
                }
                last = following.getRole() + " at record " + following.getAppliedSequence() + " of " + logged;
            } catch (MasterException e) {
                last = e.getMessage();
            }
            sleep(20);
        }
        throw new CliException(ExitCodes.FAILED, "the standby " + standby + " did not catch up with " + leader + " within " + STEP_LIMIT.toMinutes()
                + " min: " + last);
    }

    private static GetMasterStatusResponse status(String address) {
        try (MasterClient client = new MasterClient(address, Duration.ofSeconds(2))) {
            return client.masterStatus();
        }
    }

    // ---- throughput with and without --ha ----

    private void throughput(EtcdCluster etcd, Path work, Duration ttl, Map<String, Object> report) throws Exception {
        List<String> common = List.of("--bucket-count", "256", "--bucket-size", "4GiB", "--page-size", "64KiB", "--allocation-deadline", "10m",
                "--durability", "wal");
        List<String> plainArgs = new ArrayList<>(List.of("--root", work.resolve("plain-root").toString()));
        plainArgs.addAll(common);
        String prefix = "/throughput";
        List<String> haArgs = new ArrayList<>(List.of("--root", work.resolve("ha-root").toString()));
        haArgs.addAll(common);
        haArgs.addAll(List.of("--ha", etcd.url(prefix), "--ha-lease-ttl", DurationParser.format(ttl)));
        try (MasterProcess plain = startQuiet(plainArgs); MasterProcess ha = startQuiet(haArgs);
             EtcdClient keys = new EtcdClient(etcd.target(prefix), Duration.ofSeconds(2))) {
            awaitLeader(keys, etcd.target(prefix).leaderKey(status(ha.address()).getClusterId()), Map.of(ha.address(), ha));
            record Mode(String name, MasterProcess master, String target) {
            }
            List<Mode> modes = List.of(new Mode("without --ha", plain, plain.address()), new Mode("with --ha", ha, etcd.url(prefix)));
            MasterClient.Transport transport = throughputTransport.equals("stream") ? MasterClient.Transport.STREAM : MasterClient.Transport.UNARY;
            try (MasterClient plainClient = new MasterClient(modes.get(0).target(), Duration.ofSeconds(30), ClientSecurity.NONE, transport);
                 MasterClient haClient = new MasterClient(modes.get(1).target(), Duration.ofSeconds(30), ClientSecurity.NONE, transport)) {
                List<MasterClient> clients = List.of(plainClient, haClient);
                long perCaller = throughputKeys / (CALLERS * BATCH) * BATCH;
                for (int m = 0; m < 2; m++) { // unmeasured: the JIT of both masters and of this side
                    new MasterBenchmark(clients.get(m), CALLERS, OBJECT_SIZE, "warm").offload(BATCH, Math.max(BATCH, perCaller / 4), new ArrayList<>());
                }
                List<Map<String, Object>> rows = new ArrayList<>();
                List<List<Double>> keysPerSecond = List.of(new ArrayList<>(), new ArrayList<>());
                List<List<Double>> cpuPerKey = List.of(new ArrayList<>(), new ArrayList<>());
                List<Double> pairRatios = new ArrayList<>();
                long failures = 0;
                for (int round = 1; round <= throughputRounds; round++) {
                    double[] rate = new double[2];
                    // Alternate which mode goes first, so neither always runs after the other's log has grown or its collector has run.
                    List<Integer> order = round % 2 == 1 ? List.of(0, 1) : List.of(1, 0);
                    for (int m : order) {
                        long pid = modes.get(m).master().process().pid();
                        MasterBenchmark.Phase phase = new MasterBenchmark(clients.get(m), CALLERS, OBJECT_SIZE, "r" + round)
                                .withServerCpu(() -> ProcessCpu.ofPid(pid)).offload(BATCH, perCaller, new ArrayList<>());
                        rate[m] = phase.keysPerSecond();
                        keysPerSecond.get(m).add(phase.keysPerSecond());
                        cpuPerKey.get(m).add(phase.serverMicrosPerKey());
                        failures += phase.failures();
                        Map<String, Object> row = new LinkedHashMap<>();
                        row.put("round", round);
                        row.put("mode", modes.get(m).name());
                        row.put("keys", phase.keys());
                        row.put("keys_per_second", Math.round(phase.keysPerSecond()));
                        row.put("master_cpu_us_per_key", Rounding.roundFinite(phase.serverMicrosPerKey(), 3));
                        row.put("master_cores", Rounding.roundFinite(phase.serverCores(), 3));
                        row.put("failures", phase.failures());
                        rows.add(row);
                    }
                    pairRatios.add(rate[1] / rate[0]);
                }
                Map<String, Object> comparison = new LinkedHashMap<>();
                comparison.put("transport", throughputTransport);
                comparison.put("callers", CALLERS);
                comparison.put("batch", BATCH);
                comparison.put("keys_per_round", perCaller * CALLERS);
                comparison.put("rounds", rows);
                comparison.put("keys_per_s_without_ha_median", Math.round(median(keysPerSecond.get(0))));
                comparison.put("keys_per_s_with_ha_median", Math.round(median(keysPerSecond.get(1))));
                comparison.put("keys_per_s_ha_over_plain_per_round", pairRatios.stream().map(ratio -> Rounding.roundFinite(ratio, 3)).toList());
                comparison.put("keys_per_s_ha_over_plain_median", Rounding.roundFinite(median(pairRatios), 3));
                comparison.put("master_cpu_us_per_key_without_ha_median", Rounding.roundFinite(median(cpuPerKey.get(0)), 3));
                comparison.put("master_cpu_us_per_key_with_ha_median", Rounding.roundFinite(median(cpuPerKey.get(1)), 3));
                comparison.put("master_cpu_per_key_ha_over_plain", Rounding.roundFinite(median(cpuPerKey.get(1)) / median(cpuPerKey.get(0)), 3));
                comparison.put("failures", failures);
                report.put("throughput", comparison);
            }
        }
    }

    private static MasterProcess startQuiet(List<String> args) throws IOException, InterruptedException {
        return MasterProcess.start(List.of(), STEP_LIMIT, builder -> builder.redirectError(ProcessBuilder.Redirect.DISCARD), args.toArray(String[]::new));
    }

    // ---- report ----

    @SuppressWarnings("unchecked")
    private void print(Map<String, Object> report) {
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(report));
            out.flush();
            return;
        }
        out.println(String.format(Locale.ROOT, "fail-over with %d mappings, lease TTL %d s (state filled in %s s, %d keys/s)", report.get("mappings"),
                report.get("lease_ttl_s"), report.get("fill_seconds"), report.get("fill_keys_per_s")));
        for (Stop stop : Stop.values()) {
            out.println(stop.signal + " of the leader:");
            Table rounds = new Table("ROUND", stop.stopped.toUpperCase(Locale.ROOT), "NEW LEADER", "TO OFFLOAD ms",
                    stop == Stop.KILL ? "LEASE EXPIRY ms" : "KEY RELEASED ms", "ELECTION ms", "TAKE-OVER ms", "RECORDS READ", "CLIENT ms",
                    "ATTEMPTS", "STANDBY BACK ms");
            for (Map<String, Object> r : (List<Map<String, Object>>) report.get(stop.reportKey + "rounds")) {
                rounds.row(r.get("round"), r.get(stop.stopped), r.get("new_leader"), r.get(stop.total), r.get(stop.keyGone), r.get("election_ms"),
                        r.get("takeover_ms"), r.get("takeover_records_read"), r.get("client_ms"), r.get("offload_attempts"), r.get("standby_back_ms"));
            }
            out.print(rounds.render());
            Table summary = new Table("FIGURE", "MIN", "MEDIAN", "MAX");
            ((Map<String, Map<String, Object>>) report.get(stop.reportKey + "summary")).forEach((figure, s) -> summary.row(figure, s.get("min"),
                    s.get("median"), s.get("max")));
            out.print(summary.render());
        }
        Map<String, Object> comparison = (Map<String, Object>) report.get("throughput");
        if (comparison != null) {
            Table throughput = new Table("ROUND", "MODE", "KEYS", "KEYS/S", "MASTER CPU us/KEY", "MASTER CORES", "FAILURES");
            for (Map<String, Object> r : (List<Map<String, Object>>) comparison.get("rounds")) {
                throughput.row(r.get("round"), r.get("mode"), r.get("keys"), r.get("keys_per_second"), r.get("master_cpu_us_per_key"),
                        r.get("master_cores"), r.get("failures"));
            }
            out.print(throughput.render());
            out.println(String.format(Locale.ROOT, "offload keys/s with --ha over without: %s (median of the rounds' ratios %s); master CPU per key: %s",
                    comparison.get("keys_per_s_ha_over_plain_per_round"), comparison.get("keys_per_s_ha_over_plain_median"),
                    comparison.get("master_cpu_per_key_ha_over_plain")));
        }
        out.flush();
    }

    /** A refusal without the parts that differ from one attempt to the next (addresses, times), so equal ones count together. */
    private static String firstLine(String message) {
        String line = message == null ? "" : message.lines().findFirst().orElse("");
        line = line.replaceAll("\\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z", "<time>").replaceAll("127\\.0\\.0\\.1:\\d+", "127.0.0.1:<port>");
        return line.length() <= 300 ? line : line.substring(0, 300) + "...";
    }

    static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(null);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
