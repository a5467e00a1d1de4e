package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real {@code mcctl master start} processes on one state directory: the second is refused, naming the first,
 * and changes nothing; after a kill -9 of the first, the next one starts and every acknowledged key reads back.
 */
@Timeout(180)
@Tag("process")
class StateOwnershipProcessTest {

    @TempDir
    Path dir;

    private static final String[] LAYOUT = {"--bucket-count", "4", "--bucket-size", "4MiB", "--page-size", "4KiB"};

    private String[] masterArgs(String... more) {
        List<String> args = new ArrayList<>(List.of("master", "start", "--bind", "127.0.0.1", "--port", "0", "--metrics-port", "0"));
        args.addAll(List.of(LAYOUT));
        args.addAll(List.of(more));
        return args.toArray(String[]::new);
    }

    private McctlProcess.Master start(Path root) throws Exception {
        List<String> args = new ArrayList<>(List.of("--root", root.toString()));
        args.addAll(List.of(LAYOUT));
        return McctlProcess.Master.start(dir, Map.of(), args.toArray(String[]::new));
    }

    /** Every file and folder under {@code top} with its size and modification time, in name order. */
    static Map<String, String> listing(Path top) throws Exception {
        Map<String, String> files = new TreeMap<>();
        try (Stream<Path> all = Files.walk(top)) {
            for (Path path : all.toList()) {
                BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class);
                files.put(top.relativize(path).toString(), attributes.size() + " bytes, modified " + attributes.lastModifiedTime().toMillis()
                        + (attributes.isDirectory() ? " (folder)" : ""));
            }
        }
        return files;
    }

    /**
     * {@link #listing} of a root whose master is live: its log segment changes as the master logs its own housekeeping
     * (a reservation closing, say) at any moment, so only the segment's name counts.
     */
    private static Map<String, String> listingBesideALiveMaster(Path root) throws Exception {
        Map<String, String> files = listing(root);
        files.replaceAll((name, attributes) -> name.matches("master/wal-[0-9]+\\.log") ? "the live master's log segment" : attributes);
        return files;
    }

    private static Map<String, byte[]> offload(McctlProcess.Master master, int count) throws Exception {
        Map<String, byte[]> written = new TreeMap<>();
        try (CrashRestartProcessTest.Node node = CrashRestartProcessTest.Node.connect(master)) {
            List<TierWriter.ObjectSource> objects = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String key = "key-" + i;
                byte[] bytes = CrashRestartProcessTest.content("alpha", key, 1000 + 97 * i);
                written.put(key, bytes);
                objects.add(new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(bytes))));
            }
            for (TierWriter.Outcome outcome : node.writer().offload("alpha", objects, false)) {
                assertTrue(outcome.ok(), outcome.toString());
            }
        }
        return written;
    }

    private static void readBack(McctlProcess.Master master, Map<String, byte[]> written) throws Exception {
        try (CrashRestartProcessTest.Node node = CrashRestartProcessTest.Node.connect(master)) {
            List<String> keys = new ArrayList<>(written.keySet());
            List<TierReader.Outcome> outcomes = node.reader().get("alpha", keys);
            for (int i = 0; i < keys.size(); i++) {
                assertTrue(outcomes.get(i).ok(), outcomes.get(i).toString());
                ByteBuffer data = outcomes.get(i).data().duplicate();
                byte[] bytes = new byte[data.remaining()];
                data.get(bytes);
                assertArrayEquals(written.get(keys.get(i)), bytes, keys.get(i));
            }
        }
    }

    @Test
    void a_second_master_on_the_same_state_is_refused_naming_the_first_and_a_kill_9_frees_it() throws Exception {
        Path root = dir.resolve("root");
        Path stateDir = root.resolve("master");
        Map<String, byte[]> written;
        try (McctlProcess.Master first = start(root)) {
            written = offload(first, 20);
            long pid = first.process().pid();
            Map<String, String> before = listingBesideALiveMaster(root);

            // The same root, spelled through a symbolic link.
            Path link = Files.createSymbolicLink(dir.resolve("root-link"), root);
            McctlProcess.Done sameRoot = McctlProcess.run(dir, Map.of(), masterArgs("--root", link.toString()));
            // Another root, with --state-dir pointing at the first master's state.
            McctlProcess.Done sameStateDir = McctlProcess.run(dir, Map.of(), masterArgs("--root", dir.resolve("other-root").toString(),
                    "--state-dir", root.resolve(".").resolve("master").toString()));

            for (McctlProcess.Done refused : List.of(sameRoot, sameStateDir)) {
                assertEquals(ExitCodes.IN_USE, refused.exitCode(), refused.err());
                List<String> errors = refused.err().lines().filter(line -> line.startsWith("mcctl: error:")).toList();
                assertEquals(1, errors.size(), refused.err());
                assertTrue(errors.get(0).contains("state " + stateDir.toRealPath() + " is held by pid " + pid + " on host ")
                        && errors.get(0).contains(", serving 127.0.0.1:" + first.port()), errors.get(0));
            }
            assertEquals(before, listingBesideALiveMaster(root), "a refused start changes nothing under the root or in the state directory");

            // An offline reader works on, and says once that the state is live.
            McctlProcess.Done list = McctlProcess.run(dir, Map.of(), "snapshot", "list", stateDir.toString());
            assertEquals(ExitCodes.OK, list.exitCode(), list.err());
            List<String> warnings = list.err().lines().toList();
            assertEquals(1, warnings.size(), list.err());
            assertTrue(warnings.get(0).startsWith("mcctl: warning: state " + stateDir.toRealPath() + " is held by pid " + pid)
                    && warnings.get(0).endsWith("the state is live and may change while this reads it"), warnings.get(0));
            assertEquals(before, listingBesideALiveMaster(root), "nor does a reader");
            assertTrue(Files.notExists(dir.resolve("other-root")), "the refused master laid out no root of its own");
            readBack(first, written);

            CrashRestartProcessTest.kill9(first);
        }
        assertTrue(Files.exists(stateDir.resolve("in_use.lock")), "the lock file stays behind after a kill -9");
        try (McctlProcess.Master next = start(root)) {
            readBack(next, written);
        }
    }
}
