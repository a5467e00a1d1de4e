package io.mcctl.master.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.FreePorts;
import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.KvBlocks;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.Value;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMsg;

/** A real master publishing KV events on loopback, read by a real ZeroMQ subscriber and decoded with msgpack. */
@Timeout(120)
class KvEventsTest {

    @TempDir
    Path root;

    /** One decoded message: topic, batch sequence, and its events as (type, hashes, reason) lines. */
    record Batch(String topic, long sequence, List<String> events) {
    }

    static Batch decode(String topic, byte[] sequence, byte[] payload) throws IOException {
        List<String> events = new ArrayList<>();
        try (MessageUnpacker in = MessagePack.newDefaultUnpacker(payload)) {
            Value batch = in.unpackValue();
            List<Value> fields = batch.asArrayValue().list();
            assertEquals(2, fields.size(), "a batch is [ts, events]");
            assertTrue(fields.get(0).isFloatValue(), "ts is a float");
            for (Value event : fields.get(1).asArrayValue()) {
                Map<String, Value> map = new HashMap<>();
                event.asMapValue().map().forEach((k, v) -> map.put(k.asStringValue().asString(), v));
                assertEquals("STORAGE", map.get("medium").asStringValue().asString());
                assertEquals("REMOTE", map.get("locality").asStringValue().asString());
                StringBuilder line = new StringBuilder(map.get("type").asStringValue().asString());
                for (Value h : map.get("block_hashes").asArrayValue()) {
                    line.append(' ').append(h.asIntegerValue().asBigInteger());
                }
                if (map.containsKey("reason")) {
                    line.append(' ').append(map.get("reason").asStringValue().asString());
                }
                events.add(line.toString());
            }
        }
        return new Batch(topic, ByteBuffer.wrap(sequence).getLong(), events);
    }

    /**
     * Every kept batch from {@code from} on, as the replay endpoint answers a DEALER (as llm-d asks): an empty frame and the
     * 8-byte big-endian sequence; each answer an empty frame, then topic, sequence, payload.
     */
    static List<Batch> replay(ZContext context, String endpoint, long from) throws IOException {
        for (int attempt = 1; ; attempt++) {
            List<Batch> answered = replayOnce(context, endpoint, from);
            if (answered != null || attempt == 5) {
                assertNotNull(answered, "the replay endpoint answered");
                return answered;
            }
        }
    }

    /** One replay request; null when nothing came back within 5 s (a DEALER connects in the background: asked again). */
    static List<Batch> replayOnce(ZContext context, String endpoint, long from) throws IOException {
        try (ZMQ.Socket dealer = context.createSocket(SocketType.DEALER)) {
            dealer.setReceiveTimeOut(5_000);
            dealer.setLinger(0);
            dealer.connect(endpoint);
            dealer.sendMore(new byte[0]);
            dealer.send(ByteBuffer.allocate(8).putLong(from).array());
            List<Batch> batches = new ArrayList<>();
            while (true) {
                ZMsg answer = ZMsg.recvMsg(dealer);
                if (answer == null) {
                    return null;
                }
                assertEquals(0, answer.pop().size(), "the envelope's empty frame");
                assertEquals(3, answer.size(), "topic, sequence, payload");
                String topic = answer.pop().getString(StandardCharsets.UTF_8);
                byte[] sequence = answer.pop().getData();
                byte[] payload = answer.pop().getData();
                if (ByteBuffer.wrap(sequence).getLong() == -1) {
                    assertEquals(0, payload.length);
                    return batches;
                }
                batches.add(decode(topic, sequence, payload));
            }
        } catch (org.zeromq.ZMQException e) {
            throw new IOException(e);
        }
    }

    static KvBlocks blocks(long... hashes) {
        KvBlocks.Builder b = KvBlocks.newBuilder().setBlockSize(2);
        for (long h : hashes) {
            b.addBlockHashes(h).addTokenIds(1).addTokenIds(2);
        }
        return b.build();
    }

    static TierWriter.ObjectSource object(String key, KvBlocks blocks) {
        TierWriter.ObjectSource source = new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(key.getBytes(StandardCharsets.UTF_8))));
        return blocks == null ? source : source.withKvBlocks(blocks);
    }

    @Test
    void commits_removals_and_overwrites_are_announced_once_each_in_order_and_a_restart_continues_the_sequence() throws Exception {
        int[] ports = FreePorts.distinct(2);
        int pub = ports[0];
        int replayPort = ports[1];
        BucketLayout layout = TierCluster.smallLayout(root, 4);
        MasterServer.Options options = TierCluster.options(layout, Map.of("kv_events_endpoint", "tcp://127.0.0.1:" + pub,
                "kv_events_replay_endpoint", "tcp://127.0.0.1:" + replayPort));
        String replayEndpoint = "tcp://127.0.0.1:" + replayPort;
        List<Batch> firstRun = new ArrayList<>();
        try (ZContext context = new ZContext()) {
            try (TierCluster tier = TierCluster.start(options, 1)) {
                TierWriter writer = tier.node(0).writer();
                List<TierWriter.Outcome> outcomes = writer.offload("default", List.of(object("a", blocks(1, 2)), object("plain", null),
                        object("b", blocks(-5L))), false);
                outcomes.forEach(o -> assertEquals(ErrorCode.OK, o.code(), o.message()));
                tier.node(0).client().remove("default", "a");
                tier.node(0).client().remove("default", "plain");
                writer.offload("default", List.of(object("b", blocks(7))), true).forEach(o -> assertEquals(ErrorCode.OK, o.code()));
                writer.offload("other", List.of(object("c", blocks(9))), false).forEach(o -> assertEquals(ErrorCode.OK, o.code()));
                List<String> events = new ArrayList<>();
                long expected = 0;
                List<Batch> replayed = awaitEvents(context, replayEndpoint, 5);
                firstRun.addAll(replayed);
                for (Batch batch : replayed) {
                    assertEquals("kv@pool:mcctl@default", batch.topic());
                    assertEquals(expected++, batch.sequence(), "batches are numbered 0, 1, 2, ... in the tenant's stream");
                    events.addAll(batch.events());
                }
                assertEquals(List.of("BlockStored 1 2", "BlockStored 18446744073709551611", "BlockRemoved 1 2 removed",
                        "BlockRemoved 18446744073709551611 overwritten", "BlockStored 7"), events,
                        "every commit and removal of an object with blocks, once, in order; the object without blocks not at all; "
                                + "the other tenant's not in this tenant's stream");
            }
            // A restart: the sequence goes on after the last batch the log holds, and replay still answers the batches before.
            try (TierCluster tier = TierCluster.start(options, 1)) {
                List<Batch> before = replay(context, replayEndpoint, 0);
                assertEquals(firstRun, before, "the batches before the restart are rebuilt from the log, the same numbers and events");
                long last = before.get(before.size() - 1).sequence();
                tier.node(0).client().remove("default", "b");
                List<Batch> after = awaitEvents(context, replayEndpoint, before.stream().mapToInt(b -> b.events().size()).sum() + 1);
                Batch newest = after.get(after.size() - 1);
                assertEquals(last + 1, newest.sequence(), "the first batch after the restart follows the last one logged");
                assertEquals(List.of("BlockRemoved 7 removed"), newest.events());
            }
        }
    }

    /** Replays from 0 until the tenant's stream holds {@code events} events (the publisher sends a batch once its group is durable). */
    static List<Batch> awaitEvents(ZContext context, String endpoint, int events) throws Exception {
        List<Batch> batches = List.of();
        for (int attempt = 0; attempt < 200; attempt++) {
            batches = replay(context, endpoint, 0);
            if (batches.stream().mapToInt(b -> b.events().size()).sum() >= events) {
                return batches;
            }
            Thread.sleep(50);
        }
        return batches;
    }

    @Test
    void a_snapshot_keeps_the_block_hashes_and_the_batch_numbers_for_the_master_that_starts_from_it() throws Exception {
        int[] ports = FreePorts.distinct(2);
        int replayPort = ports[1];
        String replayEndpoint = "tcp://127.0.0.1:" + replayPort;
        MasterServer.Options options = TierCluster.options(TierCluster.smallLayout(root, 4), Map.of("kv_events_endpoint",
                "tcp://127.0.0.1:" + ports[0], "kv_events_replay_endpoint", replayEndpoint));
        try (ZContext context = new ZContext()) {
            long last;
            try (TierCluster tier = TierCluster.start(options, 1)) {
                tier.node(0).writer().offload("default", List.of(object("x", blocks(11, 12)), object("y", blocks(13))), false)
                        .forEach(o -> assertEquals(ErrorCode.OK, o.code(), o.message()));
                tier.node(0).client().remove("default", "y");
                List<Batch> batches = awaitEvents(context, replayEndpoint, 3);
                last = batches.get(batches.size() - 1).sequence();
                tier.master().snapshot();
            }
            java.nio.file.Files.list(root.resolve("master")).filter(p -> p.getFileName().toString().startsWith("wal-"))
                    .forEach(p -> p.toFile().delete()); // the snapshot alone: what it holds is all the next master knows
            try (TierCluster tier = TierCluster.start(options, 1)) {
                tier.node(0).client().remove("default", "x");
                List<Batch> after = awaitEvents(context, replayEndpoint, 1);
                assertEquals(1, after.size(), "the batches before the snapshot are not in its log any more");
                assertEquals(last + 1, after.get(0).sequence(), "numbered after the last batch the snapshot recorded");
                assertEquals(List.of("BlockRemoved 11 12 removed"), after.get(0).events(), "the hashes came back from the snapshot");
            }
        }
    }

    @Test
    void an_endpoint_that_cannot_be_bound_refuses_the_start_in_one_line() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            MasterServer.Options options = TierCluster.options(TierCluster.smallLayout(root, 2),
                    Map.of("kv_events_endpoint", "tcp://127.0.0.1:" + taken.getLocalPort()));
            IOException refused = assertThrows(IOException.class, () -> MasterServer.start(options).close());
            assertTrue(refused.getMessage().startsWith("kv_events_endpoint: cannot bind tcp://127.0.0.1:" + taken.getLocalPort()),
                    refused.getMessage());
            assertTrue(!refused.getMessage().contains("\n"), refused.getMessage());
        }
    }

    @Test
    void events_need_the_write_ahead_log() {
        MasterServer.Options options = MasterServer.Options.builder(TierCluster.smallLayout(root, 2)).fsType("test")
                .allocationDeadline(java.time.Duration.ofSeconds(60)).readLease(java.time.Duration.ofSeconds(5))
                .durability(io.mcctl.master.server.MasterSettings.Durability.snapshot).snapshotInterval(null)
                .settings(Map.of("kv_events_endpoint", "tcp://127.0.0.1:5557")).build();
        IOException refused = assertThrows(IOException.class, () -> MasterServer.start(options).close());
        assertTrue(refused.getMessage().contains("needs durability wal"), refused.getMessage());
    }
}
