package io.mcctl.cli.bench;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.master.etcd.EtcdClient;
import io.mcctl.master.etcd.EtcdTarget;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One or more real etcd members, each a process of its own on free loopback ports over a data directory under the one
 * it is given: for the benchmarks that run masters under {@code --ha} ({@code mcctl bench failover}, {@code bench
 * chaos}) and for the tests that do. Members are killed (-9) on close: their data directories are thrown away with
 * the run. A missing etcd fails in one line naming the Debian package.
 *
 * <p>Not thread-safe.
 */
public final class EtcdCluster implements AutoCloseable {

    /** Where Debian's etcd-server package installs etcd. */
    public static final Path DEFAULT_BINARY = Path.of("/usr/bin/etcd");

    private final Path binary;
    private final Path dir;
    private final List<Integer> clientPorts;
    private final List<Integer> peerPorts;
    private final Process[] members;

    private EtcdCluster(Path binary, Path dir, List<Integer> clientPorts, List<Integer> peerPorts) {
        this.binary = binary;
        this.dir = dir;
        this.clientPorts = clientPorts;
        this.peerPorts = peerPorts;
        this.members = new Process[clientPorts.size()];
    }

    /** Fails in one line naming the Debian package when {@code binary} is not an executable file. */
    public static void checkInstalled(Path binary) {
        if (!Files.isRegularFile(binary) || !Files.isExecutable(binary)) {
            throw new CliException(ExitCodes.FAILED, "etcd is not installed at " + binary
                    + ": install Debian's package etcd-server (apt-get install etcd-server), or name the etcd binary with --etcd");
        }
    }

    /** Starts {@code size} members of {@link #DEFAULT_BINARY} under {@code dir} and waits (30 s at most) until the cluster takes a write. */
    public static EtcdCluster start(Path dir, int size) throws IOException, InterruptedException {
        return start(DEFAULT_BINARY, dir, size, Duration.ofSeconds(30));
    }

    /** Starts a one-member cluster of {@code binary} under {@code dir} and waits (at most {@code limit}) until it takes a write. */
    public static EtcdCluster start(Path binary, Path dir, Duration limit) throws IOException, InterruptedException {
        return start(binary, dir, 1, limit);
    }

    private static EtcdCluster start(Path binary, Path dir, int size, Duration limit) throws IOException, InterruptedException {
        checkInstalled(binary);
        List<Integer> clients = new ArrayList<>();
        List<Integer> peers = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            clients.add(freePort());
            peers.add(freePort());
        }
        EtcdCluster cluster = new EtcdCluster(binary, dir, clients, peers);
        try {
            for (int i = 0; i < size; i++) {
                cluster.startMember(i);
            }
            cluster.awaitWritable(limit);
            return cluster;
        } catch (IOException | InterruptedException | RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private void startMember(int i) throws IOException {
        StringBuilder initial = new StringBuilder();
        for (int j = 0; j < peerPorts.size(); j++) {
            initial.append(j == 0 ? "" : ",").append("m").append(j).append("=http://127.0.0.1:").append(peerPorts.get(j));
        }
        Path data = dir.resolve("etcd-m" + i);
        boolean fresh = !Files.exists(data);
        Files.createDirectories(data);
        String client = "http://127.0.0.1:" + clientPorts.get(i);
        String peer = "http://127.0.0.1:" + peerPorts.get(i);
        members[i] = new ProcessBuilder(binary.toString(), "--name", "m" + i, "--data-dir", data.resolve("data").toString(),
                "--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
                "--initial-advertise-peer-urls", peer, "--initial-cluster", initial.toString(),
                "--initial-cluster-state", fresh ? "new" : "existing", "--initial-cluster-token", "mcctl",
                "--heartbeat-interval", "100", "--election-timeout", "1000")
                .redirectErrorStream(true).redirectOutput(data.resolve("etcd.log").toFile()).start();
    }

    private void awaitWritable(Duration limit) throws InterruptedException, IOException {
        long end = System.nanoTime() + limit.toNanos();
        try (EtcdClient client = new EtcdClient(target(""), Duration.ofSeconds(1))) {
            while (true) {
                try {
                    client.put("/mcctl-etcd/health", "ok", 0);
                    return;
                } catch (EtcdClient.EtcdUnavailableException e) {
                    for (int i = 0; i < members.length; i++) {
                        if (!members[i].isAlive()) {
                            throw new IOException("etcd member " + i + " exited with " + members[i].exitValue() + ": " + tail(log(i)));
                        }
                    }
                    if (System.nanoTime() - end > 0) {
                        throw new IOException("etcd did not answer within " + limit.toSeconds() + " s: " + e.getMessage() + "\n" + tail(log(0)));
                    }
                    Thread.sleep(50);
                }
            }
        }
    }

    private static String tail(String log) {
        String stripped = log.strip();
        return stripped.length() <= 2000 ? stripped : stripped.substring(stripped.length() - 2000);
    }

    /** {@code etcd://127.0.0.1:p1,127.0.0.1:p2...<prefix>}, the form {@code --ha} and {@code --master} take. */
    public String url(String prefix) {
        StringBuilder url = new StringBuilder(EtcdTarget.SCHEME);
        for (int i = 0; i < clientPorts.size(); i++) {
            url.append(i == 0 ? "" : ",").append("127.0.0.1:").append(clientPorts.get(i));
        }
        return url.append(prefix).toString();
    }

    public EtcdTarget target(String prefix) {
        return EtcdTarget.parse(url(prefix));
    }

    public int size() {
        return members.length;
    }

    /** kill -9 of member {@code i}. */
    public void kill(int i) throws InterruptedException {
        if (members[i] != null) {
            members[i].destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** Stops every member (kill -9). */
    public void killAll() throws InterruptedException {
        for (int i = 0; i < members.length; i++) {
            kill(i);
        }
    }

    /**
     * kill -STOP of member {@code i}: it holds its connections and answers nothing, so a call to it runs to its deadline
     * (a killed member refuses at once). Close kills it all the same.
     */
    public void pause(int i) throws IOException, InterruptedException {
        if (members[i] != null && members[i].isAlive()) {
            Signals.send(members[i].pid(), "STOP");
        }
    }

    public String log(int i) throws IOException {
        Path log = dir.resolve("etcd-m" + i).resolve("etcd.log");
        return Files.exists(log) ? Files.readString(log) : "";
    }

    /** kill -9 of every member. */
    @Override
    public void close() throws InterruptedException {
        killAll();
    }
}
