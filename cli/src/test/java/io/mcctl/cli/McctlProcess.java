package io.mcctl.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** mcctl as a real separate process, started with this JVM's classpath. */
public final class McctlProcess {

    /** A finished run. */
    public record Done(int exitCode, String out, String err) {
    }

    private McctlProcess() {
    }

    static ProcessBuilder builder(Path workDir, Map<String, String> env, String... args) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx256m");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(Main.class.getName());
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).directory(workDir.toFile());
        builder.environment().remove("MCCTL_MASTER");
        builder.environment().remove("MCCTL_CONFIG");
        builder.environment().keySet().removeIf(name -> name.startsWith("MOONCAKE_"));
        builder.environment().putAll(env);
        return builder;
    }

    /** Runs mcctl to completion (at most 60 s) and returns what it printed. */
    public static Done run(Path workDir, Map<String, String> env, String... args) throws IOException, InterruptedException {
        Path out = Files.createTempFile(workDir, "out", ".txt");
        Path err = Files.createTempFile(workDir, "err", ".txt");
        Process process = builder(workDir, env, args).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("mcctl " + String.join(" ", args) + " did not finish in 60 s");
        }
        return new Done(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    }

    /** A master started as a real process; its port is read from the line it prints when serving. */
    public static final class Master implements AutoCloseable {
        private static final Pattern SERVING = Pattern.compile("serving gRPC on [^:]+:(\\d+)");

        final Process process;
        final int port;
        final Path log;

        private Master(Process process, int port, Path log) {
            this.process = process;
            this.port = port;
            this.log = log;
        }

        public static Master start(Path workDir, Map<String, String> env, String... args) throws IOException, InterruptedException {
            Path out = Files.createTempFile(workDir, "master-out", ".txt");
            Path log = Files.createTempFile(workDir, "master-err", ".txt");
            List<String> all = new ArrayList<>(List.of("master", "start", "--bind", "127.0.0.1", "--port", "0", "--metrics-port", "0"));
            all.addAll(List.of(args));
            Process process = builder(workDir, env, all.toArray(new String[0])).redirectOutput(out.toFile()).redirectError(log.toFile()).start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (System.nanoTime() < deadline) {
                Matcher m = SERVING.matcher(Files.readString(out));
                if (m.find()) {
                    return new Master(process, Integer.parseInt(m.group(1)), log);
                }
                if (!process.isAlive()) {
                    throw new AssertionError("master exited with " + process.exitValue() + ": " + Files.readString(log));
                }
                Thread.sleep(50);
            }
            process.destroyForcibly();
            throw new AssertionError("master did not start in 60 s: " + Files.readString(log));
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

        public String log() throws IOException {
            return Files.readString(log);
        }

        @Override
        public void close() throws InterruptedException {
            process.destroy();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
