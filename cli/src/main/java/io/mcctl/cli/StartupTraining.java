package io.mcctl.cli;

import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The everyday commands run once against a small master in a temporary directory, so that the JVM that runs this
 * (with {@code -XX:ArchiveClassesAtExit}, see the {@code mcctl} launcher) records every class they load in a
 * class-data archive. Later runs map the classes from the archive instead of loading and verifying them from the jar,
 * which is most of a short command's start. Nothing outside the temporary directory is touched.
 */
public final class StartupTraining {

    private StartupTraining() {
    }

    public static void main(String[] args) throws Exception {
        Main.silenceGrpcLogging();
        Path dir = Files.createTempDirectory("mcctl-training");
        try {
            train(dir);
        } finally {
            delete(dir);
        }
        GrpcThreads.stop();
        System.exit(0);
    }

    private static void train(Path dir) throws IOException {
        Path root = Files.createDirectories(dir.resolve("root"));
        BucketLayout layout = new BucketLayout(root, 2, 4096, 1 << 20);
        Path object = Files.write(dir.resolve("object"), new byte[] {1, 2, 3});
        Map<String, String> environment = Map.of();
        try (MasterServer master = MasterServer.start(MasterServer.Options.builder(layout).readLease(Duration.ofSeconds(30))
                .build())) {
            String address = "127.0.0.1:" + master.port();
            String[][] lines = {
                {"offload", "--master", address, "k", object.toString()},
                {"get", "--master", address, "k", "--out", dir.resolve("copy").toString()},
                {"stat", "--master", address, "k"},
                {"stat", "--master", address, "k", "-o", "json"},
                {"ls", "--master", address},
                {"get", "--master", address, "missing"},
                {"rm", "--master", address, "k"},
            };
            for (String[] line : lines) {
                run(environment, line);
            }
        }
        run(environment, "--version");
        run(environment, "--help");
        run(environment, "stat", "--help");
        run(environment, "stat", "--no-such-option");
        run(environment, "config", "show", "--root", root.toString());
    }

    private static void run(Map<String, String> environment, String... args) {
        PrintWriter discard = new PrintWriter(new StringWriter());
        Main.run(args, environment, discard, discard);
    }

    private static void delete(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
