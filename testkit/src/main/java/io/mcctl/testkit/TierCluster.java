package io.mcctl.testkit;

import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * A real tier for tests: a {@link MasterServer} on loopback (gRPC and metrics on free ports) over a real
 * root, and any number of nodes, each with its own {@link MasterClient} and its own {@link TierNode} (so
 * its own fd pool), as if every node were a separate machine mounting the same root.
 */
public final class TierCluster implements AutoCloseable {

    public static final long PAGE = 4096;
    public static final long MIB = 1 << 20;

    /** One node: its own connection to the master, its own fd pool and its own client metrics. */
    public record Node(MasterClient client, TierNode tier, ClientMetrics metrics, TierWriter writer, TierReader reader)
            implements AutoCloseable {
        @Override
        public void close() throws IOException {
            try {
                tier.close();
            } finally {
                client.close();
            }
        }
    }

    private final MasterServer master;
    private final TestIo nodeIo;
    private final List<Node> nodes = new ArrayList<>();
    private final List<MasterClient> looseClients = new ArrayList<>();

    private TierCluster(MasterServer master, TestIo io) {
        this.master = master;
        this.nodeIo = io;
    }

    /** The layout most tests use: {@code buckets} files of 1 MiB in 4 KiB pages under {@code root}. */
    public static BucketLayout smallLayout(Path root, int buckets) {
        return new BucketLayout(root, buckets, PAGE, MIB);
    }

    public static TierCluster start(BucketLayout layout, Duration allocationDeadline, Duration readLease, int nodeCount)
            throws IOException {
        return start(options(layout, allocationDeadline, readLease, MasterServer.Options.DEFAULT_ALLOCATION_GRACE), nodeCount);
    }

    /** A cluster whose master keeps expired allocations' pages for {@code allocationGrace} past their deadline. */
    public static TierCluster start(BucketLayout layout, Duration allocationDeadline, Duration readLease, Duration allocationGrace,
                                    int nodeCount) throws IOException {
        return start(options(layout, allocationDeadline, readLease, allocationGrace), nodeCount);
    }

    /** As {@link #start(BucketLayout, Duration, Duration, Duration, int)}, the nodes moving bytes through {@code io}. */
    public static TierCluster start(BucketLayout layout, Duration allocationDeadline, Duration readLease, Duration allocationGrace,
                                    int nodeCount, TestIo io) throws IOException {
        return start(options(layout, allocationDeadline, readLease, allocationGrace), nodeCount, io);
    }

    /** WAL durability under the root, no periodic snapshots, the given deadline, lease and grace. */
    public static MasterServer.Options options(BucketLayout layout, Duration allocationDeadline, Duration readLease, Duration allocationGrace) {
        return MasterServer.Options.builder(layout).fsType("test").allocationDeadline(allocationDeadline).readLease(readLease)
                .snapshotInterval(null).allocationGrace(allocationGrace).build();
    }

    /** Long deadlines and leases, as {@link #start(Path, int, int)}, with the master settings {@code settings} (key: text). */
    public static MasterServer.Options options(BucketLayout layout, java.util.Map<String, String> settings) {
        return MasterServer.Options.builder(layout).fsType("test").snapshotInterval(null).settings(settings).build();
    }

    public static TierCluster start(MasterServer.Options options, int nodeCount) throws IOException {
        return start(options, nodeCount, TestIo.POSIX);
    }

    /** A cluster whose nodes move bucket-file bytes through {@code io}. */
    public static TierCluster start(MasterServer.Options options, int nodeCount, TestIo io) throws IOException {
        io.prepare(options.layout().root());
        MasterServer master = MasterServer.start(options);
        TierCluster cluster = new TierCluster(master, io);
        try {
            for (int i = 0; i < nodeCount; i++) {
                cluster.addNode();
            }
        } catch (IOException | RuntimeException e) {
            cluster.close();
            throw e;
        }
        return cluster;
    }

    /** A cluster with long deadlines and leases, so nothing expires under a test unless it waits for it. */
    public static TierCluster start(Path root, int buckets, int nodeCount) throws IOException {
        return start(root, buckets, nodeCount, TestIo.POSIX);
    }

    /** As {@link #start(Path, int, int)}, the nodes moving bytes through {@code io}. */
    public static TierCluster start(Path root, int buckets, int nodeCount, TestIo io) throws IOException {
        return start(options(smallLayout(root, buckets), Duration.ofSeconds(60), Duration.ofSeconds(5),
                MasterServer.Options.DEFAULT_ALLOCATION_GRACE), nodeCount, io);
    }

    /** The IO this cluster's nodes use. */
    public TestIo io() {
        return nodeIo;
    }

    public String target() {
        return "127.0.0.1:" + master.port();
    }

    /** A new node that writes and reads: its own client and its own TierNode; on a refused mount nothing is left open. */
    public Node addNode() throws IOException {
        return addNode(true);
    }

    /** A new node whose fd pool opens bucket files for writing too, or only for reading. */
    public Node addNode(boolean writable) throws IOException {
        return addNode(writable, MasterClient.Transport.STREAM);
    }

    /** A new node whose batch calls travel as {@code transport} says. */
    public Node addNode(boolean writable, MasterClient.Transport transport) throws IOException {
        MasterClient client = new MasterClient(target(), Duration.ofSeconds(10), io.mcctl.master.client.ClientSecurity.NONE, transport);
        ClientMetrics metrics = new ClientMetrics();
        TierNode tier;
        try {
            tier = TierNode.connect(client, writable, metrics, nodeIo.wanted());
            if (!tier.ioChoice().mode().name().equals(nodeIo.name())) {
                tier.close();
                throw new IllegalStateException("the node chose " + tier.ioChoice().reason() + " instead of " + nodeIo);
            }
        } catch (IOException | RuntimeException e) {
            client.close();
            throw e;
        }
        Node node = new Node(client, tier, metrics, new TierWriter(tier), new TierReader(tier));
        synchronized (nodes) {
            nodes.add(node);
        }
        return node;
    }

    /** A bare client of this master, closed with the cluster. */
    public MasterClient newClient() {
        MasterClient client = new MasterClient(target(), Duration.ofSeconds(10));
        synchronized (looseClients) {
            looseClients.add(client);
        }
        return client;
    }

    public Node node(int i) {
        synchronized (nodes) {
            return nodes.get(i);
        }
    }

    public MasterServer master() {
        return master;
    }

    public BucketLayout layout() {
        return master.options().layout();
    }

    public Path root() {
        return layout().root();
    }

    public int metricsPort() {
        return master.metricsPort();
    }

    /** The master's Prometheus text, as a scraper reads it from its metrics port. */
    public String scrapeMetrics() throws IOException, InterruptedException {
        java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        return http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + metricsPort() + "/metrics"))
                .timeout(Duration.ofSeconds(10)).GET().build(), java.net.http.HttpResponse.BodyHandlers.ofString()).body();
    }

    /** The value of one series of the master's metrics ({@code name{label="value",...}} as exposed), empty when it has none. */
    public java.util.OptionalDouble metric(String series) throws IOException, InterruptedException {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^" + java.util.regex.Pattern.quote(series) + " ([0-9.eE+-]+)$")
                .matcher(scrapeMetrics());
        return m.find() ? java.util.OptionalDouble.of(Double.parseDouble(m.group(1))) : java.util.OptionalDouble.empty();
    }

    public GetStatsResponse stats() {
        return node(0).client().stats();
    }

    /**
     * Polls {@code condition} every 20 ms until it holds or {@code limit} has passed; returns whether it
     * held. A bounded wait for something the master does on its own (the reaper), never a timing claim.
     */
    public static boolean await(Duration limit, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + limit.toNanos();
        while (true) {
            if (condition.getAsBoolean()) {
                return true;
            }
            if (System.nanoTime() - end > 0) {
                return false;
            }
            Thread.sleep(20);
        }
    }

    @Override
    public void close() {
        List<Node> toClose;
        synchronized (nodes) {
            toClose = new ArrayList<>(nodes);
            nodes.clear();
        }
        for (Node node : toClose) {
            try {
                node.close();
            } catch (IOException | RuntimeException ignored) {
                // closing what is left matters more
            }
        }
        synchronized (looseClients) {
            looseClients.forEach(MasterClient::close);
            looseClients.clear();
        }
        master.close();
    }
}
