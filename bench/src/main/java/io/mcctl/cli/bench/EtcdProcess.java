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
import java.util.concurrent.TimeUnit;

/**
 * One etcd member as a process of its own, on free loopback ports over a data directory it is given, for benchmarks
 * that run masters under {@code --ha}. Killed (-9) on close: its data directory is thrown away with the run.
 *
 * <p>Not thread-safe.
 */
public final class EtcdProcess implements AutoCloseable {

    /** Where Debian's etcd-server package installs etcd. */
    public static final Path DEFAULT_BINARY = Path.of("/usr/bin/etcd");

    private final Process process;
    private final int clientPort;
    private final Path logFile;

    private EtcdProcess(Process process, int clientPort, Path logFile) {
        this.process = process;
        this.clientPort = clientPort;
        this.logFile = logFile;
    }

    /** Fails in one line naming the Debian package when {@code binary} is not an executable file. */
    public static void checkInstalled(Path binary) {
        if (!Files.isRegularFile(binary) || !Files.isExecutable(binary)) {
            throw new CliException(ExitCodes.FAILED, "etcd is not installed at " + binary
                    + ": install Debian's package etcd-server (apt-get install etcd-server), or name the etcd binary with --etcd");
        }
    }

    /** Starts a one-member cluster under {@code dir} and waits (at most {@code limit}) until it takes a write. */
    public static EtcdProcess start(Path binary, Path dir, Duration limit) throws IOException, InterruptedException {
        checkInstalled(binary);
        int clientPort = freePort();
        int peerPort = freePort();
        Files.createDirectories(dir);
        Path log = dir.resolve("etcd.log");
        String client = "http://127.0.0.1:" + clientPort;
        String peer = "http://127.0.0.1:" + peerPort;
        Process process = new ProcessBuilder(binary.toString(), "--name", "bench", "--data-dir", dir.resolve("data").toString(),
                "--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
                "--initial-advertise-peer-urls", peer, "--initial-cluster", "bench=" + peer, "--initial-cluster-state", "new",
                "--initial-cluster-token", "mcctl-bench", "--heartbeat-interval", "100", "--election-timeout", "1000")
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        EtcdProcess etcd = new EtcdProcess(process, clientPort, log);
        try {
            etcd.awaitWritable(limit);
            return etcd;
        } catch (IOException | InterruptedException | RuntimeException e) {
            etcd.close();
            throw e;
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private void awaitWritable(Duration limit) throws IOException, InterruptedException {
        long end = System.nanoTime() + limit.toNanos();
        try (EtcdClient client = new EtcdClient(target(""), Duration.ofSeconds(1))) {
            while (true) {
                try {
                    client.put("/mcctl-bench/health", "ok", 0);
                    return;
                } catch (EtcdClient.EtcdUnavailableException e) {
                    if (!process.isAlive()) {
                        throw new IOException("etcd exited with " + process.exitValue() + ": " + tail(Files.readString(logFile)));
                    }
                    if (System.nanoTime() - end > 0) {
                        throw new IOException("etcd did not answer within " + limit.toSeconds() + " s: " + e.getMessage());
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

    /** {@code etcd://127.0.0.1:PORT<prefix>}, the form {@code --ha} and {@code --master} take. */
    public String url(String prefix) {
        return EtcdTarget.SCHEME + "127.0.0.1:" + clientPort + prefix;
    }

    public EtcdTarget target(String prefix) {
        return EtcdTarget.parse(url(prefix));
    }

    /** kill -9. */
    @Override
    public void close() throws InterruptedException {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
}
