package io.mcctl.cli;

import io.mcctl.cli.bench.MasterProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** mcctl as a real separate process, started with this JVM's classpath. */
public final class McctlProcess {

    /** A finished run. */
    public record Done(int exitCode, String out, String err) {
    }

    private McctlProcess() {
    }

    /**
     * The JVM options of the mcctl processes these tests start, with a heap of at most {@code heap}: the client compiler
     * alone and the serial collector, as the launcher starts short commands. These processes live for seconds and do
     * little; on a test machine's two cores the optimizing compiler's threads only took CPU from the test and from the
     * other processes, for code that never ran long enough to gain from it.
     */
    public static List<String> jvmOptions(String heap) {
        return List.of("-Xmx" + heap, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");
    }

    static ProcessBuilder builder(Path workDir, Map<String, String> env, String... args) {
        return prepare(new ProcessBuilder(MasterProcess.command(jvmOptions("256m"), List.of(args))).directory(workDir.toFile()), env);
    }

    /** This JVM's mcctl settings from the environment removed, {@code env} added. */
    static ProcessBuilder clean(ProcessBuilder builder, Map<String, String> env) {
        builder.environment().remove("MCCTL_MASTER");
        builder.environment().remove("MCCTL_CONFIG");
        builder.environment().keySet().removeIf(name -> name.startsWith("MOONCAKE_"));
        builder.environment().putAll(env);
        return builder;
    }

    /**
     * {@link #clean}; and when the process runs mcctl on this JVM's class path, it maps its classes from the tests'
     * class-data archive ({@link ChildClassData}).
     */
    static ProcessBuilder prepare(ProcessBuilder builder, Map<String, String> env) {
        clean(builder, env);
        List<String> command = builder.command();
        int classPath = command.indexOf("-cp") + 1;
        if (classPath > 0 && classPath < command.size() && command.get(classPath).equals(System.getProperty("java.class.path"))) {
            ChildClassData.get().ifPresent(prepared -> {
                command.set(classPath, prepared.classPath());
                command.addAll(classPath - 1, prepared.jvmOptions());
            });
        }
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

    /** A master started as a real process with a small heap; its port is read from the line it prints when serving. */
    public static final class Master implements AutoCloseable {
        private final MasterProcess process;

        private Master(MasterProcess process) {
            this.process = process;
        }

        public static Master start(Path workDir, Map<String, String> env, String... args) throws IOException, InterruptedException {
            try {
                return new Master(MasterProcess.start(jvmOptions("256m"), Duration.ofSeconds(60), builder -> prepare(builder.directory(workDir.toFile()), env), args));
            } catch (IOException e) {
                throw new AssertionError(e.getMessage(), e);
            }
        }

        public int port() {
            return process.port();
        }

        public String address() {
            return process.address();
        }

        public Process process() {
            return process.process();
        }

        public String log() throws IOException {
            return process.log();
        }

        @Override
        public void close() throws InterruptedException {
            process.close();
        }
    }
}
