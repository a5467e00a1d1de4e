package io.mcctl.cli.bench;

import io.mcctl.cli.HeapPages;
import io.mcctl.cli.Main;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code mcctl master start} as a separate process on this JVM's classpath, as a master runs in production: its own
 * heap, its own collector, no client threads beside it. Its address is read from the line it prints when serving.
 *
 * <p>Not thread-safe.
 */
public final class MasterProcess implements AutoCloseable {

    private static final Pattern SERVING = Pattern.compile("serving gRPC on [^:]+:(\\d+)");

    private final Process process;
    private final int port;
    private final Path out;
    private final Path err;
    private final long startedNanos;
    private final long servingNanos;

    private MasterProcess(Process process, int port, Path out, Path err, long startedNanos, long servingNanos) {
        this.process = process;
        this.port = port;
        this.out = out;
        this.err = err;
        this.startedNanos = startedNanos;
        this.servingNanos = servingNanos;
    }

    /** The command that runs mcctl with these JVM options and arguments. */
    public static List<String> command(List<String> jvmOptions, List<String> args) {
        return command(null, jvmOptions, args);
    }

    /** {@link #command(List, List)} from the mcctl jar {@code jar} (another build), or this JVM's class path when null. */
    static List<String> command(Path jar, List<String> jvmOptions, List<String> args) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.add("-cp");
        command.add(jar == null ? System.getProperty("java.class.path") : jar.toString());
        command.add(Main.class.getName());
        command.addAll(args);
        return command;
    }

    /** The JVM options a master started here runs with: those the launcher gives {@code mcctl master}, then {@code given}. */
    public static List<String> jvmOptionsFor(List<String> given) {
        List<String> options = new ArrayList<>(HeapPages.masterDefaults());
        options.addAll(given);
        return options;
    }

    /**
     * Starts a master on 127.0.0.1, any free port and metrics port unless {@code masterArgs} name them, with
     * {@code masterArgs} added, and waits until it serves. Its JVM runs with {@link #jvmOptionsFor jvmOptionsFor(jvmOptions)}:
     * the launcher's defaults for a master, which {@code jvmOptions} override.
     *
     * @param prepare adjusts the process (directory, environment) before it starts
     * @throws IOException when it exits or does not serve within {@code timeout}; the message carries its stderr
     */
    public static MasterProcess start(List<String> jvmOptions, Duration timeout, java.util.function.Consumer<ProcessBuilder> prepare,
                                      String... masterArgs) throws IOException, InterruptedException {
        return start(null, jvmOptions, timeout, prepare, masterArgs);
    }

    /**
     * {@link #start(List, Duration, java.util.function.Consumer, String...)} from the mcctl jar {@code jar}, another build
     * of mcctl (its main class where this build's is), or from this JVM's class path when null.
     */
    public static MasterProcess start(Path jar, List<String> jvmOptions, Duration timeout, java.util.function.Consumer<ProcessBuilder> prepare,
                                      String... masterArgs) throws IOException, InterruptedException {
        Path out = Files.createTempFile("mcctl-master-out", ".txt");
        Path err = Files.createTempFile("mcctl-master-err", ".txt");
        List<String> args = new ArrayList<>(List.of("master", "start", "--bind", "127.0.0.1"));
        List<String> given = List.of(masterArgs);
        for (String portFlag : List.of("--port", "--metrics-port")) {
            if (!given.contains(portFlag)) {
                args.addAll(List.of(portFlag, "0")); // any free port, unless the caller names one (a restart on the same port)
            }
        }
        args.addAll(given);
        ProcessBuilder builder = new ProcessBuilder(command(jar, jvmOptionsFor(jvmOptions), args)).redirectOutput(out.toFile()).redirectError(err.toFile());
        prepare.accept(builder);
        long started = System.nanoTime();
        try {
            Process process = builder.start();
            Matcher m = awaitLine(process, out, err, SERVING, timeout, "the master");
            return new MasterProcess(process, Integer.parseInt(m.group(1)), out, err, started, System.nanoTime());
        } catch (IOException | InterruptedException | RuntimeException e) {
            deleteQuietly(out, err); // the message carries what they said
            throw e;
        }
    }

    /**
     * Waits until {@code process} prints a line matching {@code serving} to {@code out}; kills it when it exits first or
     * does not print it within {@code timeout}, with its stderr in the message.
     */
    static Matcher awaitLine(Process process, Path out, Path err, Pattern serving, Duration timeout, String what)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            while (System.nanoTime() < deadline) {
                Matcher m = serving.matcher(Files.readString(out));
                if (m.find()) {
                    return m;
                }
                if (!process.isAlive()) {
                    throw new IOException(what + " exited with " + process.exitValue() + ": " + lastWords(out, err));
                }
                Thread.sleep(5);
            }
            throw new IOException(what + " did not serve within " + timeout.toSeconds() + " s: " + lastWords(out, err));
        } catch (IOException | InterruptedException | RuntimeException e) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw e;
        }
    }

    /**
     * What a process that failed wrote to {@code err}; when that is nothing, the last lines of {@code out} on one line
     * (the JVM reports a bad option on its standard output, and callers may discard the standard error).
     */
    static String lastWords(Path out, Path err) throws IOException {
        String said = Files.readString(err).strip();
        if (!said.isEmpty()) {
            return said;
        }
        List<String> lines = Files.readString(out).lines().map(String::strip).filter(line -> !line.isEmpty()).toList();
        return lines.isEmpty() ? "(it wrote nothing)" : String.join(" ", lines.subList(Math.max(0, lines.size() - 3), lines.size()));
    }

    /** SIGTERM, kill -9 after 20 s, then its output files go. */
    static void stop(Process process, Path... outputs) throws InterruptedException {
        process.destroy();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        deleteQuietly(outputs);
    }

    private static void deleteQuietly(Path... files) {
        try {
            for (Path file : files) {
                Files.deleteIfExists(file);
            }
        } catch (IOException e) {
            // temp files: the system cleans them up
        }
    }

    public int port() {
        return port;
    }

    public String address() {
        return "127.0.0.1:" + port;
    }

    public Process process() {
        return process;
    }

    /** From launch to the line saying it serves, as this side saw it (polled every 5 ms). */
    public Duration startToServing() {
        return Duration.ofNanos(servingNanos - startedNanos);
    }

    /** What it wrote to stderr (its log). */
    public String log() throws IOException {
        return Files.readString(err);
    }

    /** kill -9: no shutdown hook runs, nothing is flushed that was not already. */
    public void kill() throws InterruptedException {
        process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }

    /** SIGTERM, returning at once: the master stops as an operator's stop makes it, its shutdown hook and all. */
    public void terminate() {
        process.destroy();
    }

    /** SIGTERM, as an operator stops it; kill -9 after 20 s. */
    @Override
    public void close() throws InterruptedException {
        stop(process, out, err);
    }
}
