package io.mcctl.cli;

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
 * One or three real etcd members (Debian's etcd-server, /usr/bin/etcd) on free loopback ports over temporary data
 * directories, for tests. A missing etcd fails the test in one line naming the package; nothing is skipped.
 */
public final class EtcdCluster implements AutoCloseable {

    public static final Path ETCD = Path.of("/usr/bin/etcd");

    private final Path dir;
    private final List<Integer> clientPorts;
    private final List<Integer> peerPorts;
    private final Process[] members;

    private EtcdCluster(Path dir, List<Integer> clientPorts, List<Integer> peerPorts) {
        this.dir = dir;
        this.clientPorts = clientPorts;
        this.peerPorts = peerPorts;
        this.members = new Process[clientPorts.size()];
    }

    /** Starts {@code size} members under {@code dir} and waits until the cluster answers. */
    public static EtcdCluster start(Path dir, int size) throws IOException, InterruptedException {
        if (!Files.isExecutable(ETCD)) {
            throw new AssertionError("etcd is not installed at " + ETCD + ": install Debian's package etcd-server (apt-get install etcd-server)");
        }
        List<Integer> clients = new ArrayList<>();
        List<Integer> peers = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            clients.add(freePort());
            peers.add(freePort());
        }
        EtcdCluster cluster = new EtcdCluster(dir, clients, peers);
        for (int i = 0; i < size; i++) {
            cluster.startMember(i);
        }
        cluster.awaitHealthy(Duration.ofSeconds(30));
        return cluster;
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
        members[i] = new ProcessBuilder(ETCD.toString(), "--name", "m" + i, "--data-dir", data.resolve("data").toString(),
                "--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
                "--initial-advertise-peer-urls", peer, "--initial-cluster", initial.toString(),
                "--initial-cluster-state", fresh ? "new" : "existing", "--initial-cluster-token", "mcctl-test",
                "--heartbeat-interval", "100", "--election-timeout", "1000")
                .redirectErrorStream(true).redirectOutput(data.resolve("etcd.log").toFile()).start();
    }

    private void awaitHealthy(Duration limit) throws InterruptedException, IOException {
        long end = System.nanoTime() + limit.toNanos();
        try (EtcdClient client = new EtcdClient(target(""), Duration.ofSeconds(1))) {
            while (true) {
                try {
                    client.put("/mcctl-test/health", "ok", 0);
                    return;
                } catch (EtcdClient.EtcdUnavailableException e) {
                    if (System.nanoTime() - end > 0) {
                        throw new AssertionError("etcd did not answer within " + limit.toSeconds() + " s: " + e.getMessage() + "\n" + log(0));
                    }
                    Thread.sleep(100);
                }
            }
        }
    }

    /** {@code etcd://127.0.0.1:p1,127.0.0.1:p2...<prefix>}. */
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
        members[i].destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }

    /** Stops every member (kill -9). */
    public void killAll() throws InterruptedException {
        for (int i = 0; i < members.length; i++) {
            kill(i);
        }
    }

    public String log(int i) throws IOException {
        Path log = dir.resolve("etcd-m" + i).resolve("etcd.log");
        return Files.exists(log) ? Files.readString(log) : "";
    }

    @Override
    public void close() throws InterruptedException {
        killAll();
    }
}
