package io.mcctl.cli;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

/**
 * A class-data archive (Java's AppCDS) for the mcctl processes the tests start, recorded by {@link StartupTraining} as the
 * launcher records the release's: a process that maps the classes of gRPC, Netty, protobuf and mcctl from it starts on
 * about half the CPU of one that loads and verifies them from the jars, and the tests start hundreds of processes on two
 * cores. An archive holds classes from jars only, so those processes run on a copy of this JVM's class path whose
 * directories (the module's own classes) are packed in jars. Archive and jars are made once for a build of the class
 * path, in a folder of the build directory named for it, and shared by the module's test JVMs. When they cannot be made
 * the processes start as before, only slower.
 */
final class ChildClassData {

    /** The class path and the JVM options of a process that maps its classes from the archive. */
    record Prepared(String classPath, List<String> jvmOptions) {
    }

    private static Optional<Prepared> prepared;

    private ChildClassData() {
    }

    /** Made now when the build directory has none for this class path yet; empty when they could not be made. */
    static synchronized Optional<Prepared> get() {
        if (prepared == null) {
            prepared = make(System.getProperty("java.class.path"));
        }
        return prepared;
    }

    private static Optional<Prepared> make(String classPath) {
        try {
            Path folder = buildDirectory().resolve("child-classes-" + Integer.toHexString(fingerprint(classPath)));
            Files.createDirectories(folder);
            Path archive = folder.resolve("classes.jsa");
            Path failed = folder.resolve("failed");
            // The module's test JVMs start together: one makes them, the others wait for it.
            try (FileChannel lockFile = FileChannel.open(folder.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                 FileLock lock = lockFile.lock()) {
                String jarsOnly = jarsOnly(classPath, folder);
                // The JVM's messages about the archive are off: tests read what the process prints.
                Prepared ready = new Prepared(jarsOnly, List.of("-XX:SharedArchiveFile=" + archive, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"));
                if (Files.exists(archive)) {
                    return Optional.of(ready);
                }
                if (Files.exists(failed)) {
                    return Optional.empty();
                }
                Path partial = folder.resolve("classes.jsa.partial");
                Process training = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xlog:disable",
                        "-XX:ArchiveClassesAtExit=" + partial, "-cp", jarsOnly, StartupTraining.class.getName())
                        .redirectErrorStream(true).redirectOutput(folder.resolve("training.log").toFile()).start();
                if (training.waitFor(120, TimeUnit.SECONDS) && training.exitValue() == 0 && Files.isRegularFile(partial) && Files.size(partial) > 0) {
                    Files.move(partial, archive, StandardCopyOption.ATOMIC_MOVE);
                    return Optional.of(ready);
                }
                training.destroyForcibly();
                Files.deleteIfExists(partial);
                Files.createFile(failed);
                return Optional.empty();
            }
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    /** {@code classPath} with each directory replaced by a jar of its files in {@code folder}, made once. */
    private static String jarsOnly(String classPath, Path folder) throws IOException {
        List<String> entries = new ArrayList<>();
        int n = 0;
        for (String entry : classPath.split(File.pathSeparator)) {
            Path path = Path.of(entry);
            if (!Files.isDirectory(path)) {
                entries.add(entry);
                continue;
            }
            Path jar = folder.resolve(n++ + "-" + path.getFileName() + ".jar");
            if (!Files.exists(jar)) {
                Path partial = folder.resolve(jar.getFileName() + ".partial");
                try (OutputStream file = Files.newOutputStream(partial); JarOutputStream out = new JarOutputStream(file);
                     Stream<Path> files = Files.walk(path)) {
                    for (Path member : files.filter(Files::isRegularFile).sorted().toList()) {
                        out.putNextEntry(new JarEntry(path.relativize(member).toString().replace(File.separatorChar, '/')));
                        Files.copy(member, out);
                        out.closeEntry();
                    }
                }
                Files.move(partial, jar, StandardCopyOption.ATOMIC_MOVE);
            }
            entries.add(jar.toString());
        }
        return String.join(File.pathSeparator, entries);
    }

    /** The build directory of the module under test (Surefire and Failsafe run the tests in the module's directory). */
    private static Path buildDirectory() {
        return Path.of(System.getProperty("basedir", System.getProperty("user.dir")), "target");
    }

    /** Of the class path, each jar's size and time, and each directory's files': a new build gets jars and an archive of its own. */
    private static int fingerprint(String classPath) throws IOException {
        StringBuilder all = new StringBuilder(classPath);
        for (String entry : classPath.split(File.pathSeparator)) {
            Path path = Path.of(entry);
            if (Files.isDirectory(path)) {
                try (Stream<Path> files = Files.walk(path)) {
                    for (Path member : files.filter(Files::isRegularFile).sorted().toList()) {
                        append(all.append('|').append(member), member);
                    }
                }
            } else if (Files.isRegularFile(path)) {
                append(all, path);
            }
        }
        return all.toString().hashCode();
    }

    private static void append(StringBuilder to, Path file) throws IOException {
        BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
        to.append('|').append(attributes.size()).append('@').append(attributes.lastModifiedTime().toMillis());
    }
}
