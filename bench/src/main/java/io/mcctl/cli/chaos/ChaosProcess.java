package io.mcctl.cli.chaos;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One process of a chaos run (an etcd member, a master, a node, a Python worker) in its own namespace, which the
 * nemesis kills, restarts, stops and continues. Its output goes to one log file for the whole run, appended across
 * restarts, with a line at each start.
 *
 * <p>Thread-safe: every method is synchronized on this object.
 */
public final class ChaosProcess {

    private final String name;
    private final ChaosNet.Host host;
    private final List<String> command;
    private final Path log;
    private Process process;
    private boolean stopped;
    private int starts;

    ChaosProcess(String name, ChaosNet.Host host, List<String> command, Path log) {
        this.name = name;
        this.host = host;
        this.command = List.copyOf(command);
        this.log = log;
    }

    public String name() {
        return name;
    }

    public ChaosNet.Host host() {
        return host;
    }

    public Path log() {
        return log;
    }

    /** Starts it in its namespace (again, after a kill). */
    public synchronized void start() throws IOException {
        if (process != null && process.isAlive()) {
            throw new IllegalStateException(name + " is running already");
        }
        starts++;
        Files.writeString(log, "---- chaos: start " + starts + " of " + name + " at " + java.time.Instant.now() + ": "
                + String.join(" ", command) + "\n", java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        process = new ProcessBuilder(ChaosNet.in(host, command)).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        stopped = false;
    }

    public synchronized boolean alive() {
        return process != null && process.isAlive();
    }

    public synchronized boolean stopped() {
        return stopped;
    }

    /** kill -9 (continuing it first would let it run a moment; -9 takes a stopped process as well). */
    public synchronized void kill() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
        stopped = false;
    }

    /** SIGSTOP: it stays, holding its sockets and locks, and does nothing. */
    public synchronized void pause() throws IOException, InterruptedException {
        signal("-STOP");
        stopped = true;
    }

    /** SIGCONT. */
    public synchronized void resume() throws IOException, InterruptedException {
        signal("-CONT");
        stopped = false;
    }

    private void signal(String signal) throws IOException, InterruptedException {
        if (process != null && process.isAlive()) {
            ChaosNet.run(List.of("kill", signal, Long.toString(process.pid())));
        }
    }

    /** The last {@code chars} characters of its log. */
    public String tail(int chars) {
        try {
            String text = Files.readString(log);
            return text.length() <= chars ? text : text.substring(text.length() - chars);
        } catch (IOException e) {
            return "(log unreadable: " + e.getMessage() + ")";
        }
    }
}
