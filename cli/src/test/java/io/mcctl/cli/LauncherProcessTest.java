package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code ./mcctl} launcher (with the release's launcher it hands over to) in a copy of the source tree whose {@code mvn} is a stand-in that prints what Maven
 * prints (colour codes included) and "builds" a jar that runs this module's classes.
 */
@Timeout(120)
@Tag("process")
class LauncherProcessTest {

    @TempDir
    Path dir;

    /** A jar holding only a manifest whose Class-Path is this JVM's classpath: it runs mcctl as built for the tests. */
    private Path classPathJar() throws IOException {
        List<String> urls = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            urls.add(Path.of(entry).toAbsolutePath().toUri().toString());
        }
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().put(Attributes.Name.MAIN_CLASS, "io.mcctl.cli.Main");
        manifest.getMainAttributes().put(Attributes.Name.CLASS_PATH, String.join(" ", urls));
        Path jar = dir.resolve("classpath.jar");
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream ignored = new JarOutputStream(out, manifest)) {
            return jar;
        }
    }

    private record Run(int exitCode, String out, String err) {
    }

    private Run launch(Path tree, Path bin, String... args) throws Exception {
        return launch(tree, bin, Map.of(), args);
    }

    private Run launch(Path tree, Path bin, Map<String, String> env, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("bash", tree.resolve("mcctl").toString()));
        command.addAll(List.of(args));
        Path out = Files.createTempFile(dir, "out", ".txt");
        Path err = Files.createTempFile(dir, "err", ".txt");
        ProcessBuilder builder = McctlProcess.clean(new ProcessBuilder(command), env);
        builder.environment().put("PATH", bin + File.pathSeparator + System.getenv("PATH"));
        Process process = builder.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertTrue(process.waitFor(100, TimeUnit.SECONDS), "the launcher did not finish");
        return new Run(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    }

    /** A copy of the launcher in {@code dir/tree}, with a stand-in {@code mvn} in {@code dir/bin}. */
    private Path treeWithFakeMaven(Path bin) throws IOException {
        Path tree = Files.createDirectories(dir.resolve("tree"));
        Files.copy(Path.of("..", "mcctl"), tree.resolve("mcctl"), StandardCopyOption.COPY_ATTRIBUTES);
        Path releaseLauncher = Path.of("dist", "src", "bin", "mcctl");
        Files.createDirectories(tree.resolve(releaseLauncher).getParent());
        Files.copy(Path.of("..").resolve(releaseLauncher), tree.resolve(releaseLauncher), StandardCopyOption.COPY_ATTRIBUTES);
        Files.writeString(tree.resolve("pom.xml"), "<project/>\n");
        executable(bin.resolve("mvn"), "#!/usr/bin/env bash\n"
                + "printf '\\033[0m\\033[0m[INFO] Scanning for projects...\\n'\n"
                + "printf '[INFO] Building mcctl storage 0.1.0-SNAPSHOT                              [1/2]\\n'\n"
                + "printf '[INFO] \\033[1mCompiling 40 source files\\033[m\\n'\n"
                + "printf '[INFO] Building mcctl CLI 0.1.0-SNAPSHOT                                  [2/2]\\n'\n"
                + "printf '[INFO] BUILD SUCCESS\\n\\033[0m\\033[0m'\n"
                + "mkdir -p bench/target && cp '" + classPathJar() + "' bench/target/mcctl-all.jar\n");
        return tree;
    }

    private static void executable(Path file, String script) throws IOException {
        Files.createDirectories(file.getParent());
        Files.writeString(file, script);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    @Test
    void the_first_run_shows_the_build_a_line_per_module_without_colour_codes_and_makes_the_archive_beside_the_jar() throws Exception {
        Path bin = dir.resolve("bin");
        Path tree = treeWithFakeMaven(bin);

        Run first = launch(tree, bin, "--version");
        assertEquals(0, first.exitCode(), first.err());
        assertTrue(first.out().startsWith("mcctl "), first.out());
        assertTrue(first.err().contains("mcctl: [1/2] building mcctl storage 0.1.0-SNAPSHOT\n"), first.err());
        assertTrue(first.err().contains("mcctl: [2/2] building mcctl CLI 0.1.0-SNAPSHOT\n"), first.err());
        assertFalse(first.err().contains("\u001b"), "colour codes on a stderr that is not a terminal:\n" + first.err());
        assertFalse(first.err().contains("Compiling"), "Maven's detail is condensed to a line per module:\n" + first.err());
        assertTrue(Files.size(tree.resolve("bench/target/mcctl-all.jsa")) > 0, "the class-data archive is beside the jar");

        Run second = launch(tree, bin, "--version");
        assertEquals(0, second.exitCode(), second.err());
        assertTrue(second.out().startsWith("mcctl "), second.out());
        assertEquals("", second.err(), "no second build and no second archive");
    }

    @Test
    void a_class_data_archive_that_cannot_be_made_never_fails_the_command_and_is_not_retried_for_the_same_jar() throws Exception {
        Path bin = dir.resolve("bin");
        Path tree = treeWithFakeMaven(bin);
        // A java whose archive dump fails, as on a full disk; every other run is the real java.
        String realJava = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        executable(bin.resolve("java"), "#!/usr/bin/env bash\n"
                + "for a in \"$@\"; do case \"$a\" in -XX:ArchiveClassesAtExit=*) echo 'Error: cannot write archive' >&2; exit 1;; esac; done\n"
                + "exec '" + realJava + "' \"$@\"\n");

        Run first = launch(tree, bin, "--version");
        assertEquals(0, first.exitCode(), first.err());
        assertTrue(first.out().startsWith("mcctl "), first.out());
        assertTrue(first.err().contains("no class-data archive could be made for this build; commands run without it"), first.err());
        assertFalse(Files.exists(tree.resolve("bench/target/mcctl-all.jsa")));

        Run second = launch(tree, bin, "--version");
        assertEquals(0, second.exitCode(), second.err());
        assertEquals("", second.err(), "not tried again for the same jar");
    }

    @Test
    void the_master_asks_for_its_heap_on_transparent_huge_pages_where_the_kernel_offers_them_before_the_operators_own_options() throws Exception {
        Path bin = dir.resolve("bin");
        Path tree = treeWithFakeMaven(bin);
        // A java that writes down each command line it is given, then is the real java.
        Path calls = dir.resolve("java-calls.txt");
        String realJava = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        executable(bin.resolve("java"), "#!/usr/bin/env bash\nprintf '%s\\n' \"$*\" >> '" + calls + "'\nexec '" + realJava + "' \"$@\"\n");

        Run master = launch(tree, bin, Map.of("MCCTL_JAVA_OPTS", "-XX:-UseTransparentHugePages"), "master", "--help");
        assertEquals(0, master.exitCode(), master.err());
        Run version = launch(tree, bin, "--version");
        assertEquals(0, version.exitCode(), version.err());

        List<String> lines = Files.readAllLines(calls);
        String masterCall = lines.stream().filter(l -> l.endsWith(" master --help")).findFirst().orElseThrow(() -> new AssertionError(lines));
        String versionCall = lines.stream().filter(l -> l.endsWith(" --version")).findFirst().orElseThrow(() -> new AssertionError(lines));
        String mode = HeapPages.kernelMode();
        if ("always".equals(mode) || "madvise".equals(mode)) {
            assertTrue(masterCall.contains(" -XX:+UseTransparentHugePages -XX:-UseTransparentHugePages "), "the launcher's default, then the "
                    + "operator's option, which wins (kernel: " + mode + "): " + masterCall);
        } else {
            assertFalse(masterCall.contains("-XX:+UseTransparentHugePages"), "the kernel offers none (" + mode + "): " + masterCall);
        }
        assertFalse(versionCall.contains("TransparentHugePages"), "only the master asks: " + versionCall);
    }
}
