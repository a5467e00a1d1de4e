package io.mcctl.master.durability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.CheckPagesResponse;
import io.mcctl.master.proto.v1.KeyInfo;
import io.mcctl.master.proto.v1.ListKeysResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every on-disk format so far stays readable: a state directory written by the build of each log format version
 * (src/test/resources/state-formats, with the builds named in its README) is recovered by a master of this build,
 * which must hold exactly the mappings that build listed, at the same places, and pass its own page check. A new
 * format version adds a directory here; none is ever removed.
 */
@Timeout(120)
class OldStateFormatsTest {

    private static final Path FORMATS = Path.of("src", "test", "resources", "state-formats");

    @TempDir
    Path dir;

    /**
     * A folder per log format version, and one written by the last build before the master was split into modules by
     * role (protocol, client, node, server): moving classes between modules must not move a byte on disk.
     */
    @ParameterizedTest(name = "state written by {0}")
    @ValueSource(strings = {"log-v1", "log-v2", "log-v3", "before-module-split"})
    void a_state_directory_of_each_format_version_recovers_every_mapping(String folder) throws Exception {
        Path written = FORMATS.resolve(folder);
        assertTrue(Files.isDirectory(written.resolve("master")), () -> written + " holds no state directory");
        Path root = dir.resolve("root");
        copy(written.resolve("master"), root.resolve("master"));
        Files.copy(written.resolve("mooncake.layout.json"), root.resolve("mooncake.layout.json"));
        List<String> expected = Files.readAllLines(written.resolve("expected-mappings.txt"), StandardCharsets.UTF_8).stream()
                .filter(line -> !line.startsWith("#") && !line.isBlank()).toList();
        assertTrue(expected.size() >= 5, "the fixture lists its mappings");

        // The layout record says 4 buckets of 1 MiB in 4 KiB pages; the bucket files are not kept (they hold only the
        // objects' bytes) and the master lays them out again, empty.
        try (TierCluster cluster = TierCluster.start(TierCluster.smallLayout(root, 4), java.time.Duration.ofSeconds(60),
                java.time.Duration.ofSeconds(5), 0); MasterClient client = cluster.newClient()) {
            List<String> recovered = new ArrayList<>();
            for (String tenant : new TreeSet<>(expected.stream().map(line -> line.split(" ")[0]).toList())) {
                ListKeysResponse listed = client.listKeys(tenant, "", 1000, "");
                for (KeyInfo key : listed.getKeysList()) {
                    recovered.add(String.join(" ", tenant, key.getKey(), Long.toString(key.getDistributedDisk().getObjectSize()),
                            String.format(Locale.ROOT, "%08x", key.getDistributedDisk().getCrc32C()),
                            Path.of(key.getDistributedDisk().getFilePath()).getFileName().toString(),
                            Long.toString(key.getDistributedDisk().getOffset())));
                }
            }
            assertEquals(expected, recovered, "mappings recovered from " + written);

            // The removed and overwritten objects' pages are not claimed twice, and nothing is free that a mapping holds.
            CheckPagesResponse check = client.checkPages(false, 0, 100);
            assertEquals(0, check.getFalseFreePages(), check::toString);
            assertEquals(0, check.getOverlapPages(), check::toString);
            assertEquals(expected.size(), check.getMappings(), check::toString);
        }
    }

    private static void copy(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path file : files.toList()) {
                Files.copy(file, to.resolve(file.getFileName()));
            }
        }
    }
}
