package io.mcctl.cli.util;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Directory trees a command made for itself (a benchmark's or a demo's scratch root). */
public final class FileTrees {

    private FileTrees() {
    }

    /** Deletes {@code root} and everything under it, deepest first. */
    public static void deleteTree(Path root) throws IOException {
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path path : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
