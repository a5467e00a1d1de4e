package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.cli.bench.NodeProcess;
import io.mcctl.cli.command.TestHooks;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.proto.v1.ListKeysResponse;
import io.mcctl.master.proto.v1.OffloadMode;
import io.mcctl.master.proto.v1.ReplicaType;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * USRBIO across processes, over the stand-in library the storage module's build compiles (it is not 3FS: it runs the IOs
 * with pread and pwrite on a directory it takes for a 3FS mount): a master and two nodes with io usrbio on one root, a
 * writer with io usrbio killed with kill -9 between its batches, and io usrbio refused at start, in one line, changing
 * nothing, when the library, a function of it or the 3FS mount is missing.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@Tag("process")
class UsrbioProcessTest {

    @TempDir
    Path dir;

    /** io usrbio over the stand-in, for every process of a test. */
    static Map<String, String> usrbio() {
        return Map.of("MOONCAKE_DISTRIBUTED_IO", "usrbio", "MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY", Standin.library("libhf3fs_api_shared.so").toString());
    }

    static byte[] content(String key, int size) {
        byte[] bytes = new byte[size];
        new SplittableRandom(key.hashCode()).nextBytes(bytes);
        return bytes;
    }

    private NodeProcess node(String master, String name) throws Exception {
        return NodeProcess.start(McctlProcess.jvmOptions("128m"), Duration.ofSeconds(60), builder -> McctlProcess.prepare(builder.directory(dir.toFile()), usrbio()),
                master, "--local-disk", dir.resolve("disk-" + name).toString());
    }

    @Test
    void nodes_on_usrbio_share_the_root_and_a_writer_killed_between_batches_loses_nothing_acknowledged_and_leaks_nothing() throws Exception {
        Path mount = Files.createDirectories(dir.resolve("mnt"));
        Files.createDirectories(mount.resolve("3fs-virt")); // the stand-in's mark of a 3FS mount
        Path root = mount.resolve("root");
        try (McctlProcess.Master master = McctlProcess.Master.start(dir, usrbio(), "--root", root.toString(), "--fs-type", "hf3fs",
                "--bucket-count", "4", "--bucket-size", "16MiB", "--page-size", "4KiB", "--allocation-deadline", "3s",
                "--allocation-grace", "1s");
             NodeProcess a = node(master.address(), "a");
             NodeProcess b = node(master.address(), "b");
             MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(10));
             NodeClient viaA = new NodeClient(a.endpoint(), Duration.ofSeconds(20));
             NodeClient viaB = new NodeClient(b.endpoint(), Duration.ofSeconds(20))) {
            assertTrue(master.log().contains("bucket-file IO for this root: usrbio: root " + root), master.log());
            assertTrue(a.log().contains("bucket-file IO usrbio: root " + root), a.log());
            assertTrue(b.log().contains("bucket-file IO usrbio: root " + root), b.log());

            // Node A writes pages of the shared files, node B reads them with its own rings.
            Map<String, byte[]> committed = new HashMap<>();
            for (int size : new int[] {1, 70_000, 1 << 20}) {
                String key = "through-a-" + size;
                byte[] bytes = content(key, size);
                assertEquals(ReplicaType.DISTRIBUTED_DISK, viaA.write("default", key, ByteBuffer.wrap(bytes), OffloadMode.PAGE_MODE)
                        .getReplica().getType());
                committed.put(key, bytes);
            }

            // A writer with io usrbio offloads batches of 4 files and is killed with kill -9 while its second batch waits
            // to be notified: the first batch was acknowledged, the second holds in-flight allocations.
            Path spool = Files.createDirectories(dir.resolve("spool"));
            Map<String, byte[]> spooled = new HashMap<>();
            for (int i = 0; i < 12; i++) {
                String key = String.format("batch-%02d", i);
                byte[] bytes = content(key, 4096 * (1 + i * 7) + i);
                Files.write(spool.resolve(key), bytes);
                spooled.put(key, bytes);
            }
            Map<String, String> env = new HashMap<>(usrbio());
            env.put(TestHooks.PAUSE_BEFORE_NOTIFY, "1500");
            Path err = dir.resolve("writer.err");
            Process writer = McctlProcess.builder(dir, env, "offload", "--master", master.address(), "--batch", spool.toString(),
                    "--batch-size", "4").redirectOutput(dir.resolve("writer.out").toFile()).redirectError(err.toFile()).start();
            assertTrue(FenceProcessTest.await(Duration.ofSeconds(60), () -> count(err, "test hook: written") >= 2), "the writer reached its second batch");
            writer.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            assertTrue(client.stats().getInFlightAllocations() > 0, "the killed writer held allocations");

            List<String> acknowledged = keys(client, "batch-");
            assertTrue(acknowledged.size() >= 4 && acknowledged.size() < 12, "the first batch, not the last, was acknowledged: " + acknowledged);
            for (String key : acknowledged) {
                committed.put(key, spooled.get(key));
            }
            for (Map.Entry<String, byte[]> e : committed.entrySet()) {
                NodeClient.Read read = viaB.get("default", e.getKey());
                assertEquals(ReplicaType.DISTRIBUTED_DISK, read.type(), e.getKey());
                byte[] back = new byte[read.data().remaining()];
                read.data().duplicate().get(back);
                assertArrayEquals(e.getValue(), back, e.getKey() + " reads back byte-exact through node B");
            }

            // Past the deadline and the grace, the killed writer's pages are free again: no page is held by nothing.
            assertTrue(FenceProcessTest.await(Duration.ofSeconds(30), () -> client.stats().getInFlightAllocations() == 0), "its allocations expired");
            CliRun fsck = CliRun.run("fsck", "--master", master.address(), "--deep", "--io", "usrbio", "--usrbio-library",
                    Standin.library("libhf3fs_api_shared.so").toString(), "-o", "json").expectOk();
            assertEquals(committed.size(), new com.fasterxml.jackson.databind.ObjectMapper().readTree(fsck.out()).findValue("objects_read").asInt(),
                    fsck.out());
        }
    }

    @Test
    void io_usrbio_that_cannot_work_here_stops_the_master_at_start_in_one_line_and_lays_out_nothing() throws Exception {
        Path mount = Files.createDirectories(dir.resolve("mnt"));
        Files.createDirectories(mount.resolve("3fs-virt"));
        Path onMount = Files.createDirectories(mount.resolve("root"));
        Path offMount = Files.createDirectories(dir.resolve("plain").resolve("root"));
        String library = Standin.library("libhf3fs_api_shared.so").toString();

        assertRefused(Map.of("MOONCAKE_DISTRIBUTED_IO", "usrbio"), onMount, "USRBIO library libhf3fs_api_shared.so is not on the library path");
        assertRefused(Map.of("MOONCAKE_DISTRIBUTED_IO", "usrbio", "MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY", library), offMount,
                "but root " + offMount + " is not on a 3FS mount");
        assertRefused(Map.of("MOONCAKE_DISTRIBUTED_IO", "usrbio", "MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY",
                Standin.library("libhf3fs_without_wait.so").toString()), onMount, "lacks the function hf3fs_wait_for_ios");
    }

    private void assertRefused(Map<String, String> env, Path root, String says) throws Exception {
        McctlProcess.Done done = McctlProcess.run(dir, env, "master", "start", "--root", root.toString(), "--fs-type", "hf3fs",
                "--port", "0", "--metrics-port", "0");
        assertEquals(ExitCodes.USAGE, done.exitCode(), done.err());
        List<String> errors = done.err().lines().filter(line -> line.startsWith("mcctl: error:")).toList();
        assertEquals(1, errors.size(), done.err());
        assertTrue(errors.get(0).contains("io is usrbio (environment MOONCAKE_DISTRIBUTED_IO) but ") && errors.get(0).contains(says),
                errors.get(0));
        try (Stream<Path> left = Files.list(root)) {
            assertEquals(List.of(), left.toList(), "nothing was laid out or changed under the root");
        }
    }

    private static List<String> keys(MasterClient client, String prefix) {
        List<String> keys = new ArrayList<>();
        String token = "";
        do {
            ListKeysResponse page = client.listKeys("default", prefix, 1000, token);
            page.getKeysList().forEach(info -> keys.add(info.getKey()));
            token = page.getNextPageToken();
        } while (!token.isEmpty());
        return keys;
    }

    private static int count(Path file, String text) {
        try {
            String all = Files.readString(file, StandardCharsets.UTF_8);
            int n = 0;
            for (int at = all.indexOf(text); at >= 0; at = all.indexOf(text, at + 1)) {
                n++;
            }
            return n;
        } catch (IOException e) {
            return 0;
        }
    }
}
