package io.mcctl.dist;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The tarball on a machine with Java and no Maven: unpacked, its launcher runs a master, an offload and a get. */
@Timeout(300)
class ReleaseTarballTest {

    private static Path dir;
    private static Release release;

    @BeforeAll
    static void unpack(@TempDir Path shared) throws Exception {
        dir = shared;
        release = Release.unpack(dir);
    }

    @Test
    void the_tarball_holds_the_launcher_jar_completions_man_pages_docs_units_rules_dashboard_and_python_client() {
        Path home = release.home;
        assertTrue(Files.isExecutable(home.resolve("bin/mcctl")), "bin/mcctl is executable");
        for (String file : List.of("lib/mcctl-all.jar", "share/completions/mcctl.bash", "share/completions/_mcctl",
                "share/completions/mcctl.fish", "share/man/man1/mcctl.1", "share/man/man1/mcctl-master-start.1",
                "share/man/man1/mcctl-offload.1", "docs/operator-guide.md", "docs/cli-reference.md", "deploy/systemd/mcctl-master.service",
                "deploy/systemd/mcctl-node.service", "deploy/prometheus/mcctl-rules.yml", "deploy/prometheus/tests/mcctl-rules.test.yml",
                "deploy/grafana/mcctl-dashboard.json", "python/pyproject.toml", "python/mcctl/__init__.py", "README.md")) {
            assertTrue(Files.isRegularFile(home.resolve(file)), () -> file + " is missing from the release");
        }
        assertFalse(Files.exists(home.resolve("mcctl")), "the checkout's Maven-building ./mcctl is not in the release");
        // The folder beside the tarball is the same tree.
        Path folder = Path.of(System.getProperty("mcctl.release.dir"));
        assertTrue(Files.isExecutable(folder.resolve("bin/mcctl")) && Files.isRegularFile(folder.resolve("lib/mcctl-all.jar")),
                () -> folder + " is not the release tree");
    }

    @Test
    void the_jar_holds_no_test_code() throws Exception {
        try (java.util.zip.ZipFile jar = new java.util.zip.ZipFile(release.home.resolve("lib/mcctl-all.jar").toFile())) {
            List<String> testOnly = jar.stream().map(java.util.zip.ZipEntry::getName)
                    .filter(name -> name.startsWith("io/mcctl/cli/command/TestHooks") || name.equals("META-INF/services/io.mcctl.cli.command.OffloadObserver"))
                    .toList();
            assertEquals(List.of(), testOnly, "the process tests' offload pauses are not in the release's jar");
            assertTrue(jar.getEntry("io/mcctl/cli/command/OffloadObserver.class") != null, "the jar is mcctl's");
        }
    }

    @Test
    @Tag("process")
    void with_java_and_no_maven_the_launcher_starts_a_master_and_offloads_and_gets_an_object() throws Exception {
        Path work = Files.createDirectories(dir.resolve("node"));
        Map<String, String> env = release.environment(work);
        Release.Done which = Release.exec(work, env, Duration.ofSeconds(10), release.toolsDir.resolve("bash").toString(), "-c",
                "command -v mvn || command -v java || echo none");
        assertEquals("none", which.out().strip(), "neither mvn nor java is on the PATH the release runs with");

        int port = Release.freePort();
        int metricsPort = Release.freePort();
        try (Release.Daemon master = Release.Daemon.start(work, env, work.resolve("master.log"), List.of(release.launcher().toString(),
                "master", "start", "--root", work.resolve("root").toString(), "--bucket-count", "4", "--bucket-size", "4MiB",
                "--page-size", "4KiB", "--bind", "127.0.0.1", "--port", Integer.toString(port), "--metrics-port", Integer.toString(metricsPort)))) {
            master.awaitLog("mcctl master serving gRPC on 127.0.0.1:" + port, Duration.ofSeconds(120));

            byte[] object = new byte[100_000];
            new Random(7).nextBytes(object);
            Files.write(work.resolve("object.bin"), object);
            Map<String, String> client = Map.of("MCCTL_MASTER", "127.0.0.1:" + port);
            release.mcctl(work, client, "offload", "k1", "object.bin").expectOk("offload");
            release.mcctl(work, client, "get", "k1", "--out", "read.bin").expectOk("get");
            assertArrayEquals(object, Files.readAllBytes(work.resolve("read.bin")), "get returns the bytes offloaded");
            Release.Done missing = release.mcctl(work, client, "get", "absent", "--out", "absent.bin");
            assertEquals(3, missing.exitCode(), missing.err());
        }
        // The first run recorded the class-data archive beside the jar (the release's lib/ is writable here), once.
        assertTrue(Files.size(release.home.resolve("lib/mcctl-all.jsa")) > 0, "the class-data archive is beside the jar");
        Release.Done again = release.mcctl(work, Map.of(), "--version").expectOk("--version");
        assertTrue(again.out().startsWith("mcctl "), again.out());
        assertEquals("", again.err(), "no second archive, nothing built");
    }

    @Test
    @Tag("process")
    void the_launcher_runs_through_a_symbolic_link_with_java_from_path_and_refuses_a_missing_java_in_one_line() throws Exception {
        Path work = Files.createDirectories(dir.resolve("linked"));
        Path bin = Files.createDirectories(work.resolve("bin"));
        Files.createSymbolicLink(bin.resolve("mcctl"), release.launcher());
        Files.writeString(bin.resolve("java"), "#!/bin/sh\nexec '" + release.javaHome.resolve("bin/java") + "' \"$@\"\n");
        Files.setPosixFilePermissions(bin.resolve("java"), java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        Map<String, String> env = new java.util.HashMap<>(release.environment(work));
        env.remove("JAVA_HOME");
        env.put("PATH", bin + ":" + release.toolsDir);
        Release.Done version = Release.exec(work, env, Duration.ofSeconds(60), bin.resolve("mcctl").toString(), "--version");
        assertEquals(0, version.exitCode(), version.err());
        assertTrue(version.out().startsWith("mcctl "), version.out());

        env.put("PATH", release.toolsDir.toString());
        Release.Done noJava = Release.exec(work, env, Duration.ofSeconds(60), bin.resolve("mcctl").toString(), "--version");
        assertNotEquals(0, noJava.exitCode());
        assertEquals(1, noJava.err().strip().lines().count(), noJava.err());
        assertTrue(noJava.err().contains("no java found") && noJava.err().contains("JAVA_HOME"), noJava.err());

        env.put("JAVA_HOME", work.resolve("no-such-jdk").toString());
        Release.Done badHome = Release.exec(work, env, Duration.ofSeconds(60), bin.resolve("mcctl").toString(), "--version");
        assertNotEquals(0, badHome.exitCode());
        assertTrue(badHome.err().contains("JAVA_HOME is " + work.resolve("no-such-jdk") + ", which has no bin/java"), badHome.err());
    }

    @Test
    void man_pages_completions_and_the_python_client_are_usable_from_the_release() throws Exception {
        Path man = Release.requireTool("/usr/bin/man", "man-db");
        Path work = Files.createDirectories(dir.resolve("docs"));
        Map<String, String> env = Map.of("PATH", "/usr/bin:/bin", "MANPAGER", "cat", "MANWIDTH", "100", "HOME", work.toString());
        Release.Done page = Release.exec(work, env, Duration.ofSeconds(60), man.toString(), "-l",
                release.home.resolve("share/man/man1/mcctl-master-start.1").toString());
        assertEquals(0, page.exitCode(), page.err());
        assertTrue(page.out().contains("MCCTL-MASTER-START(1)") && page.out().contains("--metrics-port"), page.out());
        Release.Done byPath = Release.exec(work, Map.of("PATH", "/usr/bin:/bin", "MANPAGER", "cat", "HOME", work.toString(),
                "MANPATH", release.home.resolve("share/man").toString()), Duration.ofSeconds(60), man.toString(), "mcctl-offload");
        assertEquals(0, byPath.exitCode(), byPath.err());

        Release.Done completion = Release.exec(work, env, Duration.ofSeconds(60), "/bin/bash", "-c",
                "source " + release.home.resolve("share/completions/mcctl.bash") + " && complete -p mcctl");
        assertEquals(0, completion.exitCode(), completion.err());
        assertTrue(completion.out().contains("mcctl"), completion.out());

        Release.Done python = Release.exec(work, Map.of("PATH", "/usr/bin:/bin", "PYTHONPATH", release.home.resolve("python").toString(),
                "HOME", work.toString()), Duration.ofSeconds(60), "/usr/bin/python3", "-c", "import mcctl, sys; print(mcctl.__name__)");
        assertEquals(0, python.exitCode(), python.err());
        assertEquals("mcctl", python.out().strip());
    }
}
