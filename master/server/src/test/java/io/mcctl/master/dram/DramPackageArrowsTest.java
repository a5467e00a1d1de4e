package io.mcctl.master.dram;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The DRAM tier's package points one way: the RPC rooms ({@code io.mcctl.master.server}) call it, it never names them.
 * Read from the compiled classes, where every type a class uses appears by its internal name and comments do not.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class DramPackageArrowsTest {

    private static final String RPC_ROOMS = "io/mcctl/master/server/";

    @Test
    void no_class_of_the_dram_package_uses_the_server_package() throws Exception {
        Path folder = Path.of(MemoryTier.class.getResource("MemoryTier.class").toURI()).getParent();
        List<Path> classes = new ArrayList<>();
        try (Stream<Path> files = Files.list(folder)) {
            files.filter(f -> f.toString().endsWith(".class")).forEach(classes::add);
        }
        assertTrue(classes.size() >= 3, "the package's classes were found in " + folder + ": " + classes);
        List<String> offenders = new ArrayList<>();
        for (Path file : classes) {
            if (new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1).contains(RPC_ROOMS)) {
                offenders.add(file.getFileName().toString());
            }
        }
        assertTrue(offenders.isEmpty(), "these classes use io.mcctl.master.server, which depends on this package: " + offenders
                + "; pass what they need in (as Promoter.Nodes and Node do) or move it here");
    }
}
