package io.mcctl.dist;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The release as an operator gets it: mcctl-VERSION.tar.gz (built by this module's package phase) unpacked into a
 * directory, and its {@code bin/mcctl} run as a process with an environment that has Java and no build tool.
 */
final class Release {

    /** Tools the launcher and the tests call; mvn is never among them. */
    private static final List<String> TOOLS = List.of("bash", "env", "dirname", "readlink", "sed", "grep", "mkdir", "mv", "rm", "touch",
            "cksum", "cut", "basename", "cat", "head", "ls");

    final Path home;
    /** A directory of links to {@link #TOOLS} only: the PATH of every run. */
    final Path toolsDir;
    final Path javaHome;

    private Release(Path home, Path toolsDir, Path javaHome) {
        this.home = home;
        this.toolsDir = toolsDir;
        this.javaHome = javaHome;
    }

    static Path tarball() {
        String property = System.getProperty("mcctl.release.tarball");
        assertTrue(property != null, "mcctl.release.tarball is not set: run these tests through Maven (mvn verify), after package");
        Path tarball = Path.of(property);
        assertTrue(Files.isRegularFile(tarball), () -> "no release at " + tarball + ": the package phase makes it");
        return tarball;
    }

    static String name() {
        return System.getProperty("mcctl.release.name");
    }

    /** Unpacks the tarball under {@code dir} with tar, as an operator would. */
    static Release unpack(Path dir) throws IOException, InterruptedException {
        Path tarball = tarball();
        Done untar = exec(dir, Map.of(), Duration.ofSeconds(60), "tar", "-xzf", tarball.toString(), "-C", dir.toString());
        assertTrue(untar.exitCode == 0, () -> "tar failed: " + untar.err);
        Path home = dir.resolve(name());
        assertTrue(Files.isDirectory(home), () -> tarball + " does not unpack into " + name() + "/");
        Path tools = Files.createDirectories(dir.resolve("tools"));
        for (String tool : TOOLS) {
            // A script rather than a link, which the temporary directory's clean-up would warn about.
            Path wrapper = tools.resolve(tool);
            Files.writeString(wrapper, "#!/bin/sh\nexec '" + which(tool) + "' \"$@\"\n");
            Files.setPosixFilePermissions(wrapper, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        return new Release(home, tools, Path.of(System.getProperty("java.home")));
    }

    private static Path which(String tool) {
        for (String entry : System.getenv("PATH").split(File.pathSeparator)) {
            Path candidate = Path.of(entry, tool);
            if (Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        throw new AssertionError(tool + " is not on PATH");
    }

    Path launcher() {
        return home.resolve("bin/mcctl");
    }

    /**
     * The environment of a run: PATH holds only {@link #TOOLS} (no mvn, no java), Java comes from JAVA_HOME, HOME and
     * the cache are under {@code work}, and no mcctl setting leaks in from the test's own environment.
     */
    Map<String, String> environment(Path work) {
        Map<String, String> env = new java.util.HashMap<>();
        env.put("PATH", toolsDir.toString());
        env.put("JAVA_HOME", javaHome.toString());
        env.put("HOME", work.toString());
        env.put("NO_COLOR", "1");
        return env;
    }

    record Done(int exitCode, String out, String err) {
        Done expectOk(String what) {
            assertTrue(exitCode == 0, () -> what + " exited " + exitCode + "\nstdout: " + out + "\nstderr: " + err);
            return this;
        }
    }

    /** Runs {@code bin/mcctl args} to completion in {@code work}. */
    Done mcctl(Path work, Map<String, String> extraEnv, String... args) throws IOException, InterruptedException {
        Map<String, String> env = new java.util.HashMap<>(environment(work));
        env.putAll(extraEnv);
        List<String> command = new ArrayList<>(List.of(launcher().toString()));
        command.addAll(List.of(args));
        return exec(work, env, Duration.ofSeconds(120), command.toArray(String[]::new));
    }

    static Done exec(Path work, Map<String, String> env, Duration limit, String... command) throws IOException, InterruptedException {
        Path out = Files.createTempFile(work, "out", ".txt");
        Path err = Files.createTempFile(work, "err", ".txt");
        ProcessBuilder builder = new ProcessBuilder(command).directory(work.toFile()).redirectOutput(out.toFile()).redirectError(err.toFile());
        if (!env.isEmpty()) {
            builder.environment().clear();
            builder.environment().putAll(env);
        }
        Process process = builder.start();
        if (!process.waitFor(limit.toSeconds(), TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
            throw new AssertionError(String.join(" ", command) + " did not finish in " + limit.toSeconds() + " s");
        }
        return new Done(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    }

    /** A tool a test needs from a Debian package: its absence fails the test in one line naming the package. */
    static Path requireTool(String path, String debianPackage) {
        Path tool = Path.of(path);
        assertTrue(Files.isExecutable(tool), () -> tool + " is missing: install Debian's package " + debianPackage
                + " (apt-get install " + debianPackage + "; ./run-tests installs it when run as root)");
        return tool;
    }

    /** A process started from the release (a master), stopped with SIGTERM at close, SIGKILL if it does not stop. */
    static final class Daemon implements AutoCloseable {
        final Process process;
        final Path log;

        private Daemon(Process process, Path log) {
            this.process = process;
            this.log = log;
        }

        static Daemon start(Path work, Map<String, String> env, Path log, List<String> command) throws IOException {
            ProcessBuilder builder = new ProcessBuilder(command).directory(work.toFile()).redirectErrorStream(true).redirectOutput(log.toFile());
            builder.environment().clear();
            builder.environment().putAll(env);
            return new Daemon(builder.start(), log);
        }

        /** Waits until the log has {@code line}; fails with the log when the process ends first or time runs out. */
        void awaitLog(String line, Duration limit) throws IOException, InterruptedException {
            long end = System.nanoTime() + limit.toNanos();
            while (true) {
                String text = Files.readString(log, StandardCharsets.UTF_8);
                if (text.contains(line)) {
                    return;
                }
                if (!process.isAlive() || System.nanoTime() > end) {
                    throw new AssertionError("no '" + line + "' from " + process.info().commandLine().orElse("the process")
                            + (process.isAlive() ? " in " + limit.toSeconds() + " s" : ", which exited " + process.exitValue()) + ":\n" + text);
                }
                Thread.sleep(100);
            }
        }

        String log() throws IOException {
            return Files.readString(log, StandardCharsets.UTF_8);
        }

        @Override
        public void close() throws InterruptedException {
            process.destroy();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
            }
        }
    }

    static int freePort() throws IOException {
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
