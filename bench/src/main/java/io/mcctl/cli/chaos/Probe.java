package io.mcctl.cli.chaos;

import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Whether the cluster serves: an offload of one object through a client that follows the leader, and its read back,
 * byte-exact. Its operations go into the history like any worker's.
 *
 * <p>Not thread-safe: the nemesis thread uses it.
 */
final class Probe implements AutoCloseable {

    static final String TENANT = "probe";

    private final String master;
    private final ChaosHistory history;
    private MasterClient client;
    private TierNode node;
    private long serial;
    private String lastFailure;

    Probe(String master, ChaosHistory history) {
        this.master = master;
        this.history = history;
    }

    String lastFailure() {
        return lastFailure;
    }

    /** Tries until one offload and its read succeed, at most {@code limit}; true when one did. */
    boolean awaitServing(Duration limit) throws InterruptedException {
        long end = System.nanoTime() + limit.toNanos();
        while (System.nanoTime() - end < 0) {
            if (once()) {
                return true;
            }
            Thread.sleep(100);
        }
        return false;
    }

    /** One offload and read back; false (with {@link #lastFailure()}) when either failed. */
    boolean once() {
        String key = "probe/k" + (serial++ % 50);
        String tag = "probe." + serial;
        byte[] data = ChaosContent.of(tag, 4096);
        String crc = ChaosContent.crc(data, 0, data.length);
        try {
            if (node == null) {
                client = new MasterClient(master, Duration.ofSeconds(3));
                node = TierNode.connect(client, true, new ClientMetrics());
            }
            Map<String, Object> fields = new LinkedHashMap<>();
            fields.put("size", data.length);
            fields.put("crc", crc);
            fields.put("tag", tag);
            fields.put("overwrite", true);
            String id = history.invoke("probe", "put", TENANT, key, fields);
            TierWriter.Outcome written;
            try {
                written = new TierWriter(node).offload(TENANT, List.of(new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(data)))), true).get(0);
            } catch (io.mcctl.master.client.MasterException e) {
                history.complete(id, JavaWorker.failedWrite(e), Map.of("code", e.code().name(), "error", JavaWorker.shorten(e.getMessage())));
                throw e;
            } catch (RuntimeException e) {
                history.complete(id, "unknown", Map.of("error", JavaWorker.shorten(e.toString())));
                throw e;
            }
            history.complete(id, written.ok() ? "ok" : "refused", written.ok() ? Map.of() : Map.of("code", written.code().name()));
            if (!written.ok()) {
                lastFailure = "offload: " + written.code() + " " + written.message();
                return false;
            }
            String readId = history.invoke("probe", "get", TENANT, key, Map.of());
            TierReader.Outcome read;
            try {
                read = new TierReader(node, 1).get(TENANT, List.of(key)).get(0);
            } catch (RuntimeException e) {
                history.complete(readId, "unknown", Map.of("error", JavaWorker.shorten(e.toString())));
                throw e;
            }
            history.complete(readId, JavaWorker.readOutcome(read), JavaWorker.readFields(read));
            if (!read.ok() || !ChaosContent.crc(read.data()).equals(crc)) {
                lastFailure = "read back: " + read.status() + " " + read.message();
                return false;
            }
            return true;
        } catch (Exception e) {
            lastFailure = e.toString();
            closeQuietly();
            return false;
        }
    }

    private void closeQuietly() {
        try {
            if (node != null) {
                node.close();
            }
        } catch (Exception e) {
            // a broken client: a new one is made at the next try
        }
        if (client != null) {
            client.close();
        }
        node = null;
        client = null;
    }

    @Override
    public void close() {
        closeQuietly();
    }
}
