package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.cli.bench.NodeProcess;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.proto.v1.MappingResult;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reader that talks to the master and the bucket files directly (TierReader, mcctl get) takes a promoted object's
 * copy in a node's DRAM, over the node's endpoint, and falls back to the pread once that node is killed with kill -9.
 * Real processes: a master and a node with a segment.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
@Tag("process")
class DramReadProcessTest {

    @TempDir
    Path dir;

    @Test
    void direct_readers_read_the_DRAM_copy_and_fall_back_to_the_pread_when_its_node_dies() throws Exception {
        byte[] data = new byte[200_000];
        new Random(5).nextBytes(data);
        Path file = dir.resolve("hot.bin");
        Files.write(file, data);
        try (McctlProcess.Master master = McctlProcess.Master.start(dir, Map.of(), "--root", dir.resolve("root").toString(),
                "--bucket-count", "4", "--bucket-size", "16MiB", "--client-ttl", "2s", "--promotion-reads", "0");
             NodeProcess node = NodeProcess.start(McctlProcess.jvmOptions("128m"), Duration.ofSeconds(60),
                     b -> McctlProcess.prepare(b.directory(dir.toFile()), Map.of()), master.address(), "--memory", "16MiB",
                     "--promotion-interval", "50ms");
             MasterClient client = new MasterClient(master.address(), Duration.ofSeconds(10))) {
            CliRun.run("offload", "--master", master.address(), "hot", file.toString()).expectOk();
            CliRun.run("promote", "--master", master.address(), "hot").expectOk();
            assertTrue(PromotionProcessTest.await(() -> lookup(client).getMemoryCount() == 1), "the node never promoted the object");
            assertEquals(node.clientId(), lookup(client).getMemory(0).getMemory().getClientId());
            com.fasterxml.jackson.databind.JsonNode dram = new com.fasterxml.jackson.databind.ObjectMapper()
                    .readTree(CliRun.run("stats", "--master", master.address(), "-o", "json").expectOk().out()).get("dram");
            assertEquals(1, dram.get("nodes_alive").asInt());
            assertEquals(16L << 20, dram.get("segment_bytes").asLong());
            assertEquals(1, dram.get("objects").asInt());
            assertEquals(data.length, dram.get("bytes").asLong());
            assertEquals(1, dram.get("promotions_succeeded").asInt());
            assertTrue(CliRun.run("stats", "--master", master.address()).expectOk().out()
                    .contains("1 objects (195.3 KiB) in 16 MiB of segments on 1 live nodes"), "the dram line of mcctl stats");

            ClientMetrics metrics = new ClientMetrics();
            try (TierNode tier = TierNode.connect(client, false, metrics)) {
                TierReader reader = new TierReader(tier);
                assertArrayEquals(data, bytes(reader.get("default", List.of("hot")).get(0)));
                assertEquals(1, metrics.memoryReadsTotal(), "read from the node's DRAM");
                assertEquals(0, metrics.readsTotal(), "not by pread");
                Path out = dir.resolve("got.bin");
                CliRun.run("get", "--master", master.address(), "hot", "--out", out.toString()).expectOk();
                assertArrayEquals(data, Files.readAllBytes(out));

                node.kill();
                // Until the TTL runs out the master still names the copy: the reader finds its node gone and preads.
                assertEquals(1, lookup(client).getMemoryCount());
                assertArrayEquals(data, bytes(reader.get("default", List.of("hot")).get(0)));
                assertEquals(1, metrics.memoryFallbacksTotal());
                assertEquals(1, metrics.readsTotal());
                CliRun.run("get", "--master", master.address(), "hot", "--out", out.toString()).expectOk();
                assertArrayEquals(data, Files.readAllBytes(out));
                assertTrue(PromotionProcessTest.await(() -> lookup(client).getMemoryCount() == 0), "the dead node's copy stays listed");
                assertArrayEquals(data, bytes(reader.get("default", List.of("hot")).get(0)));
                assertEquals(2, metrics.readsTotal());
            }
        }
    }

    private static MappingResult lookup(MasterClient client) {
        return client.batchGetMapping(List.of("hot"), List.of("default")).getResults(0);
    }

    private static byte[] bytes(TierReader.Outcome read) {
        assertTrue(read.ok(), read.status() + " " + read.message());
        ByteBuffer data = read.data().duplicate();
        byte[] out = new byte[data.remaining()];
        data.get(out);
        return out;
    }
}
