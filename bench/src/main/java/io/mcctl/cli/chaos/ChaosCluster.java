package io.mcctl.cli.chaos;

import io.mcctl.cli.bench.MasterProcess;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.etcd.EtcdClient;
import io.mcctl.master.etcd.EtcdTarget;
import io.mcctl.master.proto.v1.GetMasterStatusResponse;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The processes of a chaos run, each in its own namespace of a {@link ChaosNet}: etcd (one or three members), three
 * masters with {@code --ha} over one shared root on a small tmpfs, two nodes (the second with a DRAM segment) and the
 * Python workers. The root is small (8 buckets of 8 MiB, 4 KiB pages) so that eviction runs all the time; deadlines,
 * leases and the HA lease are seconds, so that a stop of a few seconds passes them.
 *
 * <p>Not thread-safe: the run's one nemesis thread changes it; the processes themselves are thread-safe.
 */
public final class ChaosCluster implements AutoCloseable {

    public static final int BUCKETS = 8;
    public static final long BUCKET_BYTES = 8 << 20;
    public static final long PAGE_BYTES = 4 << 10;
    /**
     * The state directory's share of the root's tmpfs: the log from the oldest kept snapshot on, the snapshots, and the
     * zeros the writer keeps ahead in its segment. A 30-minute run held up to 30 MiB there, half of it zeros: a leader
     * that lives less than {@link #SNAPSHOT_INTERVAL} never snapshots, and one killed or deposed leaves the zeros it
     * wrote ahead (up to 4 MiB) in its last segment, which stays until a snapshot covers it. Twice that.
     */
    static final long STATE_ROOM = 64L << 20;
    /**
     * The tmpfs of the root at the start: the bucket files (sparse, but the traffic writes them through) and
     * {@link #STATE_ROOM}, not much more, so that fill_root fills it at once. Each deleted bucket file adds its size
     * ({@link #growRoot}).
     */
    public static final long ROOT_FS_BYTES = BUCKETS * BUCKET_BYTES + STATE_ROOM;
    public static final Duration ALLOCATION_DEADLINE = Duration.ofSeconds(4);
    public static final Duration ALLOCATION_GRACE = Duration.ofSeconds(2);
    public static final Duration READ_LEASE = Duration.ofSeconds(2);
    public static final Duration HA_LEASE_TTL = Duration.ofSeconds(5);
    /**
     * A run longer than this has its masters snapshot every {@link #SNAPSHOT_INTERVAL}, keeping
     * {@link #SNAPSHOT_RETENTION}, so that its log fits the root's tmpfs (without them it fills it within minutes). A
     * segment goes only when the oldest kept snapshot is past it, seconds after its last record: long after
     * {@link #archiveLog} copied it, every 200 ms. Shorter runs snapshot only when the nemesis asks.
     */
    static final Duration PERIODIC_SNAPSHOTS_PAST = Duration.ofMinutes(2);
    static final Duration SNAPSHOT_INTERVAL = Duration.ofSeconds(20);
    static final int SNAPSHOT_RETENTION = 3;
    static final int MASTER_PORT = 50051;
    static final int METRICS_PORT = 9003;
    static final List<String> JVM = List.of("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k");

    private final ChaosNet net;
    private final Path dir;
    private final Path root;
    private final Path logs;
    private final List<ChaosProcess> etcd = new ArrayList<>();
    private final List<ChaosProcess> masters = new ArrayList<>();
    private final List<ChaosProcess> nodes = new ArrayList<>();
    private final List<ChaosProcess> pythons = new ArrayList<>();
    private boolean mounted;
    private long rootBytes = ROOT_FS_BYTES;
    private String haUrl;

    private ChaosCluster(ChaosNet net, Path dir) {
        this.net = net;
        this.dir = dir;
        this.root = dir.resolve("root");
        this.logs = dir.resolve("logs");
    }

    /**
     * Starts every process and waits until a leader serves. {@code python} is the clients/python directory; none
     * starts no Python worker.
     */
    public static ChaosCluster start(ChaosNet net, Path dir, int etcdMembers, int pythonWorkers, Path python, long seed, Duration traffic)
            throws IOException, InterruptedException {
        ChaosCluster cluster = new ChaosCluster(net, dir);
        try {
            cluster.startAll(etcdMembers, pythonWorkers, python, seed, traffic.compareTo(PERIODIC_SNAPSHOTS_PAST) > 0);
            return cluster;
        } catch (IOException | InterruptedException | RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    private void startAll(int etcdMembers, int pythonWorkers, Path python, long seed, boolean periodicSnapshots)
            throws IOException, InterruptedException {
        Files.createDirectories(root);
        Files.createDirectories(logs);
        ChaosNet.run(List.of("mount", "-t", "tmpfs", "-o", "size=" + ROOT_FS_BYTES, "mcctl-chaos-" + net.id(), root.toString()));
        mounted = true;
        List<ChaosNet.Host> etcdHosts = new ArrayList<>();
        for (int i = 0; i < etcdMembers; i++) {
            etcdHosts.add(net.add("etcd" + i));
        }
        StringBuilder initial = new StringBuilder();
        StringBuilder endpoints = new StringBuilder();
        for (int i = 0; i < etcdMembers; i++) {
            initial.append(i == 0 ? "" : ",").append("e").append(i).append("=http://").append(etcdHosts.get(i).address()).append(":2380");
            endpoints.append(i == 0 ? "" : ",").append(etcdHosts.get(i).address()).append(":2379");
        }
        haUrl = EtcdTarget.SCHEME + endpoints + "/chaos";
        for (int i = 0; i < etcdMembers; i++) {
            ChaosNet.Host host = etcdHosts.get(i);
            String client = "http://" + host.address() + ":2379";
            String peer = "http://" + host.address() + ":2380";
            ChaosProcess member = new ChaosProcess("etcd" + i, host, List.of("/usr/bin/etcd", "--name", "e" + i,
                    "--data-dir", dir.resolve("etcd" + i).toString(), "--listen-client-urls", client, "--advertise-client-urls", client,
                    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", initial.toString(),
                    "--initial-cluster-state", "new", "--initial-cluster-token", "mcctl-chaos-" + net.id(),
                    "--heartbeat-interval", "100", "--election-timeout", "1000"), logs.resolve("etcd" + i + ".log"));
            etcd.add(member);
            member.start();
        }
        awaitEtcd(Duration.ofSeconds(60));
        for (int i = 0; i < 3; i++) {
            ChaosNet.Host host = net.add("master" + i);
            List<String> args = List.of("master", "start", "--root", root.toString(), "--bucket-count", String.valueOf(BUCKETS),
                    "--bucket-size", String.valueOf(BUCKET_BYTES), "--page-size", String.valueOf(PAGE_BYTES),
                    "--allocation-deadline", ALLOCATION_DEADLINE.toSeconds() + "s", "--allocation-grace", ALLOCATION_GRACE.toSeconds() + "s",
                    "--read-lease", READ_LEASE.toSeconds() + "s", "--ha", haUrl, "--ha-lease-ttl", HA_LEASE_TTL.toSeconds() + "s",
                    "--bind", host.address(), "--port", String.valueOf(MASTER_PORT), "--metrics-port", String.valueOf(METRICS_PORT),
                    "--snapshot-interval", periodicSnapshots ? SNAPSHOT_INTERVAL.toSeconds() + "s" : "3600s",
                    "--snapshot-retention", String.valueOf(periodicSnapshots ? SNAPSHOT_RETENTION : 100), "--client-ttl", "3s", "--bucket-check-interval", "1s",
                    "--eviction-high-watermark", "0.80", "--eviction-low-watermark", "0.60", "--connection-idle-timeout", "20s");
            ChaosProcess master = new ChaosProcess("master" + i, host, MasterProcess.command(JVM, args), logs.resolve("master" + i + ".log"));
            masters.add(master);
            master.start();
            if (i == 0) {
                awaitLeader(Duration.ofSeconds(90)); // the first lays the root out; the others find it
            }
        }
        for (int i = 0; i < 2; i++) {
            ChaosNet.Host host = net.add("node" + i);
            List<String> args = new ArrayList<>(List.of("node", "start", "--master", haUrl, "--listen", host.address() + ":50061",
                    "--timeout", "10s"));
            if (i == 1) {
                args.addAll(List.of("--memory", "16MiB", "--promotion-interval", "200ms"));
            }
            ChaosProcess node = new ChaosProcess("node" + i, host, MasterProcess.command(JVM, args), logs.resolve("node" + i + ".log"));
            nodes.add(node);
            node.start();
        }
        for (int i = 0; i < pythonWorkers; i++) {
            ChaosNet.Host host = net.add("py" + i);
            Path script = dir.resolve("chaos_worker.py");
            if (!Files.exists(script)) {
                try (var in = ChaosCluster.class.getResourceAsStream("chaos_worker.py")) {
                    Files.write(script, in.readAllBytes());
                }
            }
            ChaosProcess worker = new ChaosProcess("py" + i, host, List.of("env", "PYTHONPATH=" + python, "/usr/bin/python3", script.toString(),
                    haUrl, root.toString(), dir.resolve("history-py" + i + ".jsonl").toString(), "py" + i, Long.toString(seed + i)),
                    logs.resolve("py" + i + ".log"));
            pythons.add(worker);
            worker.start();
        }
        awaitLeader(Duration.ofSeconds(90));
    }

    private void awaitEtcd(Duration limit) throws IOException, InterruptedException {
        long end = System.nanoTime() + limit.toNanos();
        try (EtcdClient client = new EtcdClient(EtcdTarget.parse(haUrl), Duration.ofSeconds(1))) {
            while (true) {
                try {
                    client.put("/chaos-health", "ok", 0);
                    return;
                } catch (EtcdClient.EtcdUnavailableException e) {
                    if (System.nanoTime() - end > 0) {
                        throw new IOException("etcd did not take a write within " + limit.toSeconds() + " s: " + e.getMessage() + "; "
                                + etcd.get(0).tail(1500));
                    }
                    Thread.sleep(100);
                }
            }
        }
    }

    /** The address of the master that says it leads, waiting at most {@code limit} for one. */
    public String awaitLeader(Duration limit) throws IOException, InterruptedException {
        long end = System.nanoTime() + limit.toNanos();
        while (true) {
            Optional<String> leader = leader();
            if (leader.isPresent()) {
                return leader.get();
            }
            if (System.nanoTime() - end > 0) {
                StringBuilder said = new StringBuilder();
                for (ChaosProcess master : masters) {
                    said.append("\n").append(master.name()).append(": ").append(master.tail(800));
                }
                throw new IOException("no master leads within " + limit.toSeconds() + " s:" + said);
            }
            Thread.sleep(200);
        }
    }

    /** The master that says it leads now, asked one by one. */
    public Optional<String> leader() {
        for (ChaosProcess master : masters) {
            if (!master.alive() || master.stopped()) {
                continue;
            }
            String address = address(master);
            try (MasterClient client = new MasterClient(address, Duration.ofMillis(1500))) {
                if (client.masterStatus().getRole() == GetMasterStatusResponse.Role.LEADER) {
                    return Optional.of(address);
                }
            } catch (RuntimeException e) {
                // not serving now
            }
        }
        return Optional.empty();
    }

    public static String address(ChaosProcess master) {
        return master.host().address() + ":" + MASTER_PORT;
    }

    /** etcd://members/chaos, the address every client of the run gives: it follows the leader. */
    public String haUrl() {
        return haUrl;
    }

    public Path root() {
        return root;
    }

    public Path stateDir() {
        return root.resolve("master");
    }

    /**
     * Gives the root's tmpfs {@code bytes} more room, for a bucket file deleted under the processes that have it open:
     * its pages stay allocated until the last of them closes it. A Python client keeps even a replaced fd until it
     * closes (so a worker that is not killed keeps it to the end of the run), a Java node until it next writes to, or
     * fails to read from, that bucket. Without this, every delete_bucket took a bucket file's room from the log for as
     * long as its holders lived: a 30-minute run had three such files held at once, the root filled, no new leader
     * could write the header of its first log segment, and nothing could give room back (no snapshot without a leader,
     * no write to make a holder let go) until the workers stopped at the end of the run.
     */
    public void growRoot(long bytes) throws IOException, InterruptedException {
        rootBytes += bytes;
        ChaosNet.run(List.of("mount", "-o", "remount,size=" + rootBytes, root.toString()));
    }

    public Path dir() {
        return dir;
    }

    public ChaosNet net() {
        return net;
    }

    public List<ChaosProcess> etcd() {
        return etcd;
    }

    public List<ChaosProcess> masters() {
        return masters;
    }

    public List<ChaosProcess> nodes() {
        return nodes;
    }

    public List<ChaosProcess> pythons() {
        return pythons;
    }

    public List<ChaosProcess> all() {
        List<ChaosProcess> all = new ArrayList<>(etcd);
        all.addAll(masters);
        all.addAll(nodes);
        all.addAll(pythons);
        return all;
    }

    /** Where log segments are copied before a snapshot lets the master delete them. */
    public Path logArchive() {
        return dir.resolve("log-archive");
    }

    /** Segments copied after a later one existed: the master writes them no more (it trims and closes one before it opens the next). */
    private final java.util.Set<Path> archivedFinal = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * Copies the newest log segment, and every other one until it has been copied once after a later one existed.
     * The newest holds zeros ahead of its last record (its size says nothing of what is written), so it is copied on
     * every pass; a finished one once more, and again only if its size changes (a new leader trimming a torn tail), so
     * that a pass costs about one segment rather than the whole log.
     */
    public synchronized void archiveLog() throws IOException {
        Files.createDirectories(logArchive());
        List<Path> segments;
        try (var listing = Files.list(stateDir())) {
            segments = listing.filter(f -> f.getFileName().toString().matches("wal-.*\\.log")).sorted().toList();
        }
        for (int i = 0; i < segments.size(); i++) {
            Path segment = segments.get(i);
            Path copy = logArchive().resolve(segment.getFileName());
            boolean finished = i < segments.size() - 1;
            try {
                if (finished && archivedFinal.contains(segment) && Files.size(copy) == Files.size(segment)) {
                    continue;
                }
                Files.copy(segment, copy, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                if (finished) {
                    archivedFinal.add(segment);
                }
            } catch (java.nio.file.NoSuchFileException gone) {
                // deleted under the copy by a snapshot: copied before, when it was not the newest
            }
        }
    }

    /** kill -9 of every process, then the root's tmpfs unmounted (the logs and history stay in the run's folder). */
    @Override
    public void close() throws InterruptedException {
        for (ChaosProcess process : all()) {
            process.kill();
        }
        if (mounted) {
            try {
                ChaosNet.run(List.of("umount", "-l", root.toString()));
            } catch (IOException e) {
                // reported by the next run's mount, if ever; nothing here can do better
            }
            mounted = false;
        }
    }
}
