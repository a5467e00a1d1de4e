package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The master and the data path as a user runs them: separate processes on loopback over a real root. */
@Timeout(180)
@Tag("process")
class DataPathProcessTest {

    private static final String[] SMALL_LAYOUT = {"--bucket-count", "8", "--bucket-size", "4MiB", "--page-size", "4KiB"};

    @TempDir
    Path dir;

    private static byte[] randomBytes(int size, long seed) {
        byte[] bytes = new byte[size];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    private String[] withLayout(Path root, String... args) {
        String[] all = new String[args.length + 2 + SMALL_LAYOUT.length];
        System.arraycopy(args, 0, all, 0, args.length);
        all[args.length] = "--root";
        all[args.length + 1] = root.toString();
        System.arraycopy(SMALL_LAYOUT, 0, all, args.length + 2, SMALL_LAYOUT.length);
        return all;
    }

    @Test
    void offload_get_stat_ls_rm_through_a_master_process() throws Exception {
        Path root = dir.resolve("root");
        try (McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of(), withLayout(root))) {
            Map<String, String> env = Map.of("MCCTL_MASTER", master.address());
            byte[] content = randomBytes(100_000, 1);
            Path file = dir.resolve("object.bin");
            Files.write(file, content);

            McctlProcess.Done offload = McctlProcess.run(dir, env, "offload", "layer-0/block-7", file.toString());
            assertEquals(0, offload.exitCode(), offload.err());
            assertTrue(offload.out().contains("offloaded layer-0/block-7: 100000 bytes at " + root), offload.out());

            Path back = dir.resolve("back.bin");
            McctlProcess.Done get = McctlProcess.run(dir, env, "get", "layer-0/block-7", "--out", back.toString());
            assertEquals(0, get.exitCode(), get.err());
            assertArrayEquals(content, Files.readAllBytes(back));

            McctlProcess.Done stat = McctlProcess.run(dir, env, "stat", "layer-0/block-7", "-o", "json");
            assertEquals(0, stat.exitCode(), stat.err());
            JsonNode replica = new ObjectMapper().readTree(stat.out()).get("replicas").get(0);
            assertEquals("DISTRIBUTED_DISK", replica.get("type").asText());
            assertEquals("COMPLETE", replica.get("status").asText());
            assertEquals(100_000, replica.get("size").asLong());
            assertEquals(25, replica.get("pages").asLong());
            assertTrue(replica.get("file").asText().startsWith(root.toString()));

            McctlProcess.Done ls = McctlProcess.run(dir, env, "ls", "--prefix", "layer-0/");
            assertEquals(0, ls.exitCode(), ls.err());
            assertTrue(ls.out().contains("layer-0/block-7"), ls.out());

            McctlProcess.Done otherTenant = McctlProcess.run(dir, env, "get", "layer-0/block-7", "--tenant", "other", "--out",
                    dir.resolve("x").toString());
            assertEquals(ExitCodes.NOT_FOUND, otherTenant.exitCode(), otherTenant.err());

            McctlProcess.Done rm = McctlProcess.run(dir, env, "rm", "layer-0/block-7");
            assertEquals(0, rm.exitCode(), rm.err());
            McctlProcess.Done gone = McctlProcess.run(dir, env, "get", "layer-0/block-7", "--out", dir.resolve("gone").toString());
            assertEquals(ExitCodes.NOT_FOUND, gone.exitCode());
            assertEquals(1, gone.err().lines().count(), gone.err());
            assertTrue(gone.err().contains("not found"), gone.err());
            assertFalse(Files.exists(dir.resolve("gone")));
        }
    }

    @Test
    void batch_offload_and_batch_get_round_trip_a_directory() throws Exception {
        Path root = dir.resolve("root");
        Path in = Files.createDirectories(dir.resolve("in"));
        StringBuilder keys = new StringBuilder();
        for (int i = 0; i < 20; i++) {
            Files.write(in.resolve("block-" + i), randomBytes(1 + i * 30001, i)); // up to 570 KB: batches read on several threads
            keys.append("blk/block-").append(i).append('\n');
        }
        Files.writeString(dir.resolve("keys.txt"), keys);
        try (McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of(), withLayout(root))) {
            Map<String, String> env = Map.of("MCCTL_MASTER", master.address());
            McctlProcess.Done offload = McctlProcess.run(dir, env, "offload", "--batch", in.toString(), "--prefix", "blk/",
                    "--batch-size", "7", "-o", "json");
            assertEquals(0, offload.exitCode(), offload.err());
            assertEquals(20, new ObjectMapper().readTree(offload.out()).get("offloaded").asInt());

            Path out = dir.resolve("out");
            McctlProcess.Done refused = McctlProcess.run(dir, env, "get", "--batch", dir.resolve("keys.txt").toString(), "--out", out.toString(),
                    "--read-threads", "0");
            assertEquals(2, refused.exitCode(), refused.err());
            assertEquals("mcctl: error: invalid --read-threads 0: allowed is 1 to 16", refused.err().strip());
            assertFalse(Files.exists(out), "a refused get writes nothing");

            McctlProcess.Done get = McctlProcess.run(dir, env, "get", "--batch", dir.resolve("keys.txt").toString(), "--out", out.toString(),
                    "--batch-size", "6", "--read-threads", "3");
            assertEquals(0, get.exitCode(), get.err());
            for (int i = 0; i < 20; i++) {
                assertArrayEquals(Files.readAllBytes(in.resolve("block-" + i)), Files.readAllBytes(out.resolve("blk%2Fblock-" + i)));
            }
        }
    }

    @Test
    void sigterm_stops_the_master_cleanly() throws Exception {
        McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of(), withLayout(dir.resolve("root")));
        master.process().destroy();
        assertTrue(master.process().waitFor(30, TimeUnit.SECONDS), "master did not stop on SIGTERM");
        assertTrue(master.log().contains("stopping"), master.log());
    }

    @Test
    void a_client_without_a_master_gets_one_line_naming_the_address() throws Exception {
        McctlProcess.Done get = McctlProcess.run(dir, Map.of(), "get", "k", "--master", "127.0.0.1:1", "--out", dir.resolve("o").toString());
        assertEquals(ExitCodes.UNAVAILABLE, get.exitCode(), get.err());
        assertEquals(1, get.err().lines().count(), get.err());
        assertTrue(get.err().contains("cannot reach the master at 127.0.0.1:1"), get.err());
    }

    @Test
    void page_mode_false_at_the_master_is_a_nodes_setting_and_the_master_serves_both() throws Exception {
        try (McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of("MOONCAKE_DISTRIBUTED_PAGE_MODE", "false"),
                withLayout(dir.resolve("root")))) {
            assertTrue(master.port() > 0);
            assertTrue(master.log().contains("page_mode is each node's setting"), master.log());
            assertTrue(master.log().contains("environment MOONCAKE_DISTRIBUTED_PAGE_MODE"), master.log());
        }
    }

    @Test
    void a_second_master_with_another_page_size_is_refused_and_changes_nothing() throws Exception {
        Path root = dir.resolve("root");
        try (McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of(), withLayout(root))) {
            assertTrue(master.port() > 0);
        }
        String layoutBefore = Files.readString(root.resolve("mooncake.layout.json"));
        McctlProcess.Done start = McctlProcess.run(dir, Map.of(), "master", "start", "--root", root.toString(), "--bucket-count", "8",
                "--bucket-size", "4MiB", "--page-size", "8KiB", "--port", "0", "--metrics-port", "0");
        assertEquals(ExitCodes.USAGE, start.exitCode(), start.err());
        assertTrue(start.err().contains("page_size is 8192 here but 4096 in the layout"), start.err());
        assertEquals(layoutBefore, Files.readString(root.resolve("mooncake.layout.json")));
    }
}
