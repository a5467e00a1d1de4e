package io.mcctl.cli.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code mcctl node start} as a separate process on this JVM's classpath, listening on 127.0.0.1 (any free port unless
 * {@code --listen} is given). Its client id and endpoint are read from the line it prints when serving.
 *
 * <p>Not thread-safe.
 */
public final class NodeProcess implements AutoCloseable {

    private static final Pattern SERVING = Pattern.compile("mcctl node (\\S+) serving on (\\S+) ");

    private final Process process;
    private final String clientId;
    private final String endpoint;
    private final Path out;
    private final Path err;

    private NodeProcess(Process process, String clientId, String endpoint, Path out, Path err) {
        this.process = process;
        this.clientId = clientId;
        this.endpoint = endpoint;
        this.out = out;
        this.err = err;
    }

    /**
     * Starts a node of the master at {@code master} with {@code nodeArgs} added, and waits until it serves.
     *
     * @throws IOException when it exits or does not serve within {@code timeout}; the message carries its stderr
     */
    public static NodeProcess start(List<String> jvmOptions, Duration timeout, Consumer<ProcessBuilder> prepare, String master,
                                    String... nodeArgs) throws IOException, InterruptedException {
        Path out = Files.createTempFile("mcctl-node-out", ".txt");
        Path err = Files.createTempFile("mcctl-node-err", ".txt");
        List<String> args = new ArrayList<>(List.of("node", "start", "--master", master));
        if (!List.of(nodeArgs).contains("--listen")) {
            args.addAll(List.of("--listen", "127.0.0.1:0"));
        }
        args.addAll(List.of(nodeArgs));
        ProcessBuilder builder = new ProcessBuilder(MasterProcess.command(jvmOptions, args)).redirectOutput(out.toFile())
                .redirectError(err.toFile());
        prepare.accept(builder);
        Process process = builder.start();
        Matcher m = MasterProcess.awaitLine(process, out, err, SERVING, timeout, "the node");
        return new NodeProcess(process, m.group(1), m.group(2), out, err);
    }

    public String clientId() {
        return clientId;
    }

    /** host:port of its endpoint. */
    public String endpoint() {
        return endpoint;
    }

    public Process process() {
        return process;
    }

    /** What it wrote to stderr (its log). */
    public String log() throws IOException {
        return Files.readString(err);
    }

    /** kill -9: the node stops pinging without a word, as a crashed host does. */
    public void kill() throws InterruptedException {
        process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }

    /** SIGTERM; kill -9 after 20 s. */
    @Override
    public void close() throws InterruptedException {
        MasterProcess.stop(process, out, err);
    }
}
