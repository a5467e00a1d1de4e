package io.mcctl.cli.chaos;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.GetDistributedPageMappingResponse;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

/**
 * The nemesis of a chaos run: from its seed, one fault after another (now and then two at once), each held for a few
 * seconds (stops past the lease TTL or the allocation deadline they aim at), then taken back; after each, the time until
 * a probe offload and its read back succeed again is the recovery time of that fault kind. Every fault and recovery is
 * a line in the history.
 *
 * <p>Not thread-safe: one thread runs it.
 */
final class Nemesis {

    /** Longest a recovery may take before the run fails: well past every lease, deadline and election. */
    static final Duration RECOVERY_LIMIT = Duration.ofSeconds(120);

    /** A fault in place, with what takes it back. */
    private interface Healing {
        void heal() throws Exception;
    }

    private final ChaosCluster cluster;
    private final ChaosHistory history;
    private final Random random;
    private final List<FaultKind> kinds;
    private final Probe probe;
    private final Map<FaultKind, Integer> injected = new EnumMap<>(FaultKind.class);
    private final Map<FaultKind, Long> longestRecoveryMs = new EnumMap<>(FaultKind.class);
    private final List<String> findings = new ArrayList<>();
    /** The faults of the round in place now. */
    private List<FaultKind> round = List.of();

    Nemesis(ChaosCluster cluster, ChaosHistory history, long seed, Set<FaultKind> kinds, Probe probe) {
        this.cluster = cluster;
        this.history = history;
        this.random = new Random(seed);
        this.kinds = new ArrayList<>(kinds);
        this.probe = probe;
    }

    Map<FaultKind, Integer> injected() {
        return injected;
    }

    Map<FaultKind, Long> longestRecoveryMs() {
        return longestRecoveryMs;
    }

    /** What went wrong that is not a property of the history: a cluster that did not recover, a process that died by itself. */
    List<String> findings() {
        return findings;
    }

    /** Injects faults until {@code endNanos}; returns early (with a finding) when the cluster does not recover. */
    void run(long endNanos) throws Exception {
        if (kinds.isEmpty()) {
            return;
        }
        while (System.nanoTime() - endNanos < 0) {
            int count = random.nextInt(10) < 3 ? 2 : 1;
            List<FaultKind> now = new ArrayList<>();
            round = now;
            List<Healing> healings = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                FaultKind kind = kinds.get(random.nextInt(kinds.size()));
                Map<String, Object> fields = new LinkedHashMap<>();
                String target = describeAndInject(kind, fields, healings);
                if (target == null) {
                    continue; // nothing to aim at now (no committed object to flip, say)
                }
                now.add(kind);
                injected.merge(kind, 1, Integer::sum);
                history.fault("start", kind.label(), target, fields);
            }
            Thread.sleep(hold(now));
            for (int i = healings.size() - 1; i >= 0; i--) {
                healings.get(i).heal();
            }
            for (FaultKind kind : now) {
                history.fault("end", kind.label(), "", Map.of());
            }
            long healed = System.nanoTime();
            if (!probe.awaitServing(RECOVERY_LIMIT)) {
                findings.add("the cluster did not serve an offload and its read within " + RECOVERY_LIMIT.toSeconds() + " s after " + now
                        + " ended: " + probe.lastFailure());
                history.fault("not_recovered", now.toString(), "", Map.of("error", String.valueOf(probe.lastFailure())));
                return;
            }
            long recoveredMs = (System.nanoTime() - healed) / 1_000_000;
            for (FaultKind kind : now) {
                longestRecoveryMs.merge(kind, recoveredMs, Math::max);
            }
            history.fault("recovered", now.toString(), "", Map.of("recovery_ms", recoveredMs));
            checkAlive();
            Thread.sleep(300 + random.nextInt(1500));
        }
    }

    /** How long the faults stay: past the lease TTL, allocation deadline or client TTL for stops; a few seconds else. */
    private long hold(List<FaultKind> now) {
        long hold = 1000 + random.nextInt(3000);
        for (FaultKind kind : now) {
            long past = switch (kind) {
                case PAUSE_LEADER, PARTITION_LEADER_ETCD -> ChaosCluster.HA_LEASE_TTL.toMillis() + 1000 + random.nextInt(3000);
                case PAUSE_CLIENT -> ChaosCluster.ALLOCATION_DEADLINE.toMillis() + 1000 + random.nextInt(3000);
                case PAUSE_NODE -> 3000 + 1000 + random.nextInt(2000); // the client TTL
                default -> 0;
            };
            hold = Math.max(hold, past);
        }
        return hold;
    }

    /** A process the nemesis did not stop that is no longer running is a finding; it is started again. */
    private void checkAlive() throws IOException {
        for (ChaosProcess process : cluster.all()) {
            if (!process.alive()) {
                String log = process.tail(4000);
                String sinceStart = log.substring(Math.max(0, log.lastIndexOf("---- chaos: start")));
                if (sinceStart.contains("serving")) {
                    findings.add(process.name() + " exited by itself; its log ends: " + process.tail(600).replace('\n', ' '));
                }
                // else: it gave up at start, before it served: counted, started again
                history.fault("exited", sinceStart.contains("serving") ? "exited" : "start_failed", process.name(), Map.of());
                process.start();
            }
        }
    }

    private <T> T pick(List<T> list) {
        return list.get(random.nextInt(list.size()));
    }

    private Optional<ChaosProcess> leaderProcess() {
        Optional<String> leader = cluster.leader();
        return leader.flatMap(address -> cluster.masters().stream().filter(m -> ChaosCluster.address(m).equals(address)).findFirst());
    }

    /** Injects {@code kind}, adds what takes it back to {@code healings}, and names its target (null: none now). */
    private String describeAndInject(FaultKind kind, Map<String, Object> fields, List<Healing> healings) throws Exception {
        switch (kind) {
            case KILL_MASTER -> {
                ChaosProcess master = random.nextBoolean() ? leaderProcess().orElse(pick(cluster.masters())) : pick(cluster.masters());
                return kill(master, healings);
            }
            case KILL_NODE -> {
                return kill(pick(cluster.nodes()), healings);
            }
            case KILL_ETCD -> {
                return kill(pick(cluster.etcd()), healings);
            }
            case KILL_CLIENT -> {
                if (cluster.pythons().isEmpty()) {
                    return null;
                }
                return kill(pick(cluster.pythons()), healings);
            }
            case PAUSE_LEADER -> {
                Optional<ChaosProcess> leader = leaderProcess();
                return leader.isEmpty() ? null : pause(leader.get(), healings);
            }
            case PAUSE_CLIENT -> {
                return cluster.pythons().isEmpty() ? null : pause(pick(cluster.pythons()), healings);
            }
            case PAUSE_NODE -> {
                return pause(pick(cluster.nodes()), healings);
            }
            case PAUSE_ETCD -> {
                return pause(pick(cluster.etcd()), healings);
            }
            case PARTITION_LEADER_ETCD -> {
                Optional<ChaosProcess> leader = leaderProcess();
                if (leader.isEmpty()) {
                    return null;
                }
                ChaosNet.Host host = leader.get().host();
                for (ChaosProcess member : cluster.etcd()) {
                    cluster.net().cut(host, member.host());
                }
                healings.add(() -> healAll());
                return leader.get().name();
            }
            case PARTITION_LEADER_CLIENTS -> {
                Optional<ChaosProcess> leader = leaderProcess();
                if (leader.isEmpty()) {
                    return null;
                }
                ChaosNet.Host host = leader.get().host();
                cluster.net().cutFromGateway(host);
                List<ChaosProcess> clients = new ArrayList<>(cluster.nodes());
                clients.addAll(cluster.pythons());
                for (ChaosProcess client : clients) {
                    cluster.net().cut(host, client.host());
                }
                healings.add(() -> healAll());
                return leader.get().name();
            }
            case PARTITION_CLIENT -> {
                List<ChaosProcess> clients = new ArrayList<>(cluster.nodes());
                clients.addAll(cluster.pythons());
                ChaosProcess client = pick(clients);
                cluster.net().link(client.host(), false);
                healings.add(() -> cluster.net().link(client.host(), true));
                return client.name();
            }
            case NETEM_LOSS, NETEM_DELAY -> {
                List<ChaosProcess> targets = new ArrayList<>(cluster.masters());
                targets.addAll(cluster.etcd());
                targets.addAll(cluster.nodes());
                targets.addAll(cluster.pythons());
                ChaosProcess target = pick(targets);
                String[] args = kind == FaultKind.NETEM_LOSS ? new String[] {"loss", (10 + random.nextInt(31)) + "%"}
                        : new String[] {"delay", (50 + random.nextInt(251)) + "ms", (10 + random.nextInt(40)) + "ms"};
                try {
                    cluster.net().netem(target.host(), args);
                    fields.put("qdisc", "netem " + String.join(" ", args));
                } catch (IOException e) {
                    if (!String.valueOf(e.getMessage()).contains("qdisc kind is unknown")) {
                        throw e;
                    }
                    // A kernel without netem: a token bucket slows the link, and with a queue of a few packets drops the rest.
                    String[] tbf = kind == FaultKind.NETEM_LOSS
                            ? new String[] {"rate", (256 + random.nextInt(768)) + "kbit", "burst", "4kb", "limit", "6kb"}
                            : new String[] {"rate", (1 + random.nextInt(4)) + "mbit", "burst", "16kb", "latency", (100 + random.nextInt(300)) + "ms"};
                    cluster.net().qdisc(target.host(), "tbf", tbf);
                    fields.put("qdisc", "tbf " + String.join(" ", tbf));
                }
                healings.add(() -> cluster.net().netem(target.host()));
                return target.name();
            }
            case FILL_ROOT -> {
                Path filler = cluster.root().resolve("chaos-filler");
                long written = fill(filler);
                fields.put("filled_bytes", written);
                healings.add(() -> Files.deleteIfExists(filler));
                return "root";
            }
            case FLIP_BYTE -> {
                return flip(fields);
            }
            case TRUNCATE_BUCKET -> {
                int bucket = random.nextInt(ChaosCluster.BUCKETS);
                Path file = bucketFile(bucket);
                long length;
                try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
                    length = (long) random.nextInt(ChaosCluster.BUCKETS) * (ChaosCluster.BUCKET_BYTES / ChaosCluster.BUCKETS);
                    channel.truncate(length);
                } catch (java.nio.file.NoSuchFileException e) {
                    return null;
                }
                fields.put("bucket", bucket);
                fields.put("length", length);
                healings.add(() -> restoreBucketFile(file));
                return "bucket " + bucket;
            }
            case DELETE_BUCKET -> {
                int bucket = random.nextInt(ChaosCluster.BUCKETS);
                Path file = bucketFile(bucket);
                if (!Files.deleteIfExists(file)) {
                    return null;
                }
                cluster.growRoot(ChaosCluster.BUCKET_BYTES); // the deleted file keeps its room while a client has it open
                fields.put("bucket", bucket);
                healings.add(() -> restoreBucketFile(file));
                return "bucket " + bucket;
            }
            case IDLE_FLOOD -> {
                Optional<ChaosProcess> leader = leaderProcess();
                if (leader.isEmpty()) {
                    return null;
                }
                List<Socket> sockets = new ArrayList<>();
                int wanted = 500 + random.nextInt(1500);
                for (int i = 0; i < wanted; i++) {
                    try {
                        Socket socket = new Socket();
                        socket.connect(new InetSocketAddress(leader.get().host().address(), ChaosCluster.MASTER_PORT), 1000);
                        sockets.add(socket);
                    } catch (IOException e) {
                        break; // refused or full: the flood is as large as it gets
                    }
                }
                fields.put("connections", sockets.size());
                healings.add(() -> {
                    for (Socket socket : sockets) {
                        socket.close();
                    }
                });
                return leader.get().name();
            }
            case IDLE_SESSION -> {
                Optional<ChaosProcess> leader = leaderProcess();
                if (leader.isEmpty()) {
                    return null;
                }
                int idle = 1 + random.nextInt(8);
                int stalled = 1 + random.nextInt(4);
                IdleSessions sessions = IdleSessions.open(ChaosCluster.address(leader.get()), idle, stalled, random);
                fields.put("idle_streams", idle);
                fields.put("stalled_streams", stalled);
                healings.add(() -> {
                    // Without other kinds of fault in place the cluster is whole: the others must be served while the streams are held.
                    if (round.stream().allMatch(FaultKind.IDLE_SESSION::equals) && !probe.awaitServing(RECOVERY_LIMIT)) {
                        findings.add("the cluster did not serve an offload and its read within " + RECOVERY_LIMIT.toSeconds() + " s while "
                                + leader.get().name() + " held " + (idle + stalled) + " idle Session streams: " + probe.lastFailure());
                    }
                    history.fault("observed", kind.label(), leader.get().name(), Map.of("streams_open", sessions.open(),
                            "lookups_sent", sessions.lookupsSent(), "master_streams_paused",
                            IdleSessions.pausedStreams(leader.get().host().address())));
                    findings.addAll(sessions.release());
                });
                return leader.get().name();
            }
            case SNAPSHOT_RESTART -> {
                Optional<ChaosProcess> leader = leaderProcess();
                if (leader.isEmpty()) {
                    return null;
                }
                cluster.archiveLog(); // the snapshot lets the master delete the log it covers: the checker needs all of it
                try (MasterClient client = new MasterClient(ChaosCluster.address(leader.get()), Duration.ofSeconds(10))) {
                    client.createSnapshot();
                    fields.put("snapshot", "taken");
                } catch (RuntimeException e) {
                    fields.put("snapshot", "failed: " + JavaWorker.shorten(e.getMessage()));
                }
                return kill(leader.get(), healings);
            }
            default -> throw new IllegalStateException("no injection for " + kind);
        }
    }

    private String kill(ChaosProcess process, List<Healing> healings) throws InterruptedException {
        if (!process.alive()) {
            // Drawn twice in one round (or down since the last round, which the round's end restarts): the first
            // kill's restart is queued already, and a second one would start a process that is running.
            return null;
        }
        process.kill();
        healings.add(process::start);
        return process.name();
    }

    private String pause(ChaosProcess process, List<Healing> healings) throws IOException, InterruptedException {
        if (!process.alive()) {
            return null;
        }
        process.pause();
        healings.add(process::resume);
        return process.name();
    }

    private void healAll() throws IOException, InterruptedException {
        for (ChaosProcess process : cluster.all()) {
            cluster.net().heal(process.host());
        }
    }

    private Path bucketFile(int bucket) {
        return cluster.root().resolve(String.format(java.util.Locale.ROOT, "bucket_%02x.data", bucket));
    }

    /** An operator's restore of a bucket file: there again (empty when it was gone), grown back to the bucket's size. */
    static void restoreBucketFile(Path file) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            if (raf.length() < ChaosCluster.BUCKET_BYTES) {
                raf.setLength(ChaosCluster.BUCKET_BYTES); // ftruncate up: a hole, no byte of any object written
            }
        }
    }

    /** Writes {@code filler} until the filesystem is full; returns the bytes written. */
    private static long fill(Path filler) throws IOException {
        long written = 0;
        byte[] block = new byte[1 << 20];
        try (var out = Files.newOutputStream(filler)) {
            while (true) {
                out.write(block);
                written += block.length;
            }
        } catch (IOException e) {
            if (e.getMessage() == null || !e.getMessage().contains("No space left")) {
                throw e;
            }
        }
        try (var out = Files.newOutputStream(filler, StandardOpenOption.APPEND)) {
            for (int i = 0; i < 4096; i++) {
                out.write(block, 0, 4096); // the last pages
                written += 4096;
            }
        } catch (IOException e) {
            // full to the page
        }
        return written;
    }

    /** Flips one byte of a committed object another worker wrote (its mapping looked up now). */
    private String flip(Map<String, Object> fields) throws IOException {
        for (int attempt = 0; attempt < 20; attempt++) {
            String tenant = JavaWorker.TENANTS.get(random.nextInt(JavaWorker.TENANTS.size()));
            String key = "j" + random.nextInt(2) + "/k" + random.nextInt(JavaWorker.KEYS);
            DistributedDiskDescriptor place;
            try (MasterClient client = new MasterClient(cluster.haUrl(), Duration.ofSeconds(3))) {
                GetDistributedPageMappingResponse mapping = client.getMapping(tenant, key);
                if (!mapping.hasDistributedDisk()) {
                    continue;
                }
                place = mapping.getDistributedDisk();
            } catch (RuntimeException e) {
                continue;
            }
            long at = place.getOffset() + (long) (random.nextDouble() * place.getObjectSize());
            try (RandomAccessFile file = new RandomAccessFile(place.getFilePath(), "rw")) {
                if (at >= file.length()) {
                    continue;
                }
                file.seek(at);
                int old = file.read();
                file.seek(at);
                file.write(old ^ (1 << random.nextInt(8)));
            } catch (java.io.FileNotFoundException e) {
                continue;
            }
            fields.put("tenant", tenant);
            fields.put("key", key);
            fields.put("bucket", place.getBucket());
            fields.put("file_offset", at);
            return tenant + "/" + key;
        }
        return null;
    }
}
