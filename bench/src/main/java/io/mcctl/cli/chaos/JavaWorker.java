package io.mcctl.cli.chaos;

import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.ErrorCode;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A Java client of a chaos run (TierWriter and TierReader over a client that follows the leader through etcd) on a
 * thread of its own: offloads of single objects and batches, overwrites, pinned offloads, gets, removes, replica list
 * lookups and promotions over its own keys ({@code <worker>/k<n>} in a few tenants), so that one key's writes never
 * overlap in time. Every operation goes into the history before it is sent and when it returns.
 *
 * <p>Not thread-safe: one thread runs it.
 */
final class JavaWorker implements Runnable {

    /** Keys per tenant of one worker: few enough that keys are overwritten, read and removed often. */
    static final int KEYS = 80;
    static final List<String> TENANTS = List.of("ja", "jb", "jc");

    private final String name;
    private final String master;
    private final ChaosHistory history;
    private final SplittableRandom random;
    private final AtomicBoolean stop;
    private final int maxObjectBytes;
    private long tags;

    JavaWorker(String name, String master, ChaosHistory history, long seed, AtomicBoolean stop, int maxObjectBytes) {
        this.name = name;
        this.master = master;
        this.history = history;
        this.random = new SplittableRandom(seed);
        this.stop = stop;
        this.maxObjectBytes = maxObjectBytes;
    }

    @Override
    public void run() {
        while (!stop.get()) {
            try (MasterClient client = new MasterClient(master, Duration.ofSeconds(3));
                 TierNode node = TierNode.connect(client, true, new ClientMetrics())) {
                TierWriter writer = new TierWriter(node);
                TierReader reader = new TierReader(node, 2);
                while (!stop.get()) {
                    step(client, writer, reader);
                }
            } catch (Exception e) {
                // connecting needs the master's layout: it is unreachable now, so try again after a pause
                sleep(300);
            }
        }
    }

    private void step(MasterClient client, TierWriter writer, TierReader reader) {
        String tenant = TENANTS.get(random.nextInt(TENANTS.size()));
        double roll = random.nextDouble();
        if (roll < 0.40) {
            put(writer, tenant, 1 + (random.nextInt(4) == 0 ? random.nextInt(4) : 0), false);
        } else if (roll < 0.45) {
            put(writer, tenant, 1, true);
        } else if (roll < 0.80) {
            get(reader, tenant, 1 + random.nextInt(3));
        } else if (roll < 0.90) {
            remove(client, tenant);
        } else if (roll < 0.96) {
            replicaList(client, tenant);
        } else {
            promote(client, tenant);
        }
    }

    private String key() {
        return name + "/k" + random.nextInt(KEYS);
    }

    private int size() {
        int pick = random.nextInt(20);
        if (pick == 0) {
            return 1;
        }
        if (pick == 1) {
            return 1 + random.nextInt(maxObjectBytes);
        }
        if (pick < 6) {
            return 4096 * (1 + random.nextInt(4));
        }
        return 1 + random.nextInt(64 << 10);
    }

    private void put(TierWriter writer, String tenant, int count, boolean pin) {
        List<String> keys = new ArrayList<>();
        while (keys.size() < count) {
            String key = key();
            if (!keys.contains(key)) {
                keys.add(key);
            }
        }
        List<TierWriter.ObjectSource> objects = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        for (String key : keys) {
            String tag = name + "." + (++tags);
            byte[] data = ChaosContent.of(tag, size());
            Map<String, Object> fields = new LinkedHashMap<>();
            fields.put("size", data.length);
            fields.put("crc", ChaosContent.crc(data, 0, data.length));
            fields.put("tag", tag);
            fields.put("overwrite", true);
            fields.put("pin", pin);
            fields.put("batch", count);
            ids.add(history.invoke(name, "put", tenant, key, fields));
            objects.add(new TierWriter.ObjectSource(key, List.of(ByteBuffer.wrap(data))));
        }
        try {
            List<TierWriter.Outcome> outcomes = writer.offload(tenant, objects, true, pin);
            for (int i = 0; i < outcomes.size(); i++) {
                TierWriter.Outcome outcome = outcomes.get(i);
                Map<String, Object> fields = new LinkedHashMap<>();
                if (outcome.descriptor() != null) {
                    fields.put("offset", outcome.descriptor().getOffset());
                    fields.put("bucket", outcome.descriptor().hasBucket() ? outcome.descriptor().getBucket() : -1);
                }
                if (!outcome.ok()) {
                    fields.put("code", outcome.code().name());
                    fields.put("error", shorten(outcome.message()));
                }
                history.complete(ids.get(i), outcome.ok() ? "ok" : "refused", fields);
            }
        } catch (MasterException e) {
            for (String id : ids) {
                history.complete(id, failedWrite(e), Map.of("code", e.code().name(), "error", shorten(e.getMessage())));
            }
        } catch (RuntimeException e) {
            for (String id : ids) {
                history.complete(id, "unknown", Map.of("error", shorten(e.toString())));
            }
        }
    }

    /** A write that threw: refused when the master never got it or said no for a reason of its own, else unknown. */
    static String failedWrite(MasterException e) {
        if (e.notSent()) {
            return "refused";
        }
        ErrorCode code = e.code();
        boolean definite = code == ErrorCode.NO_AVAILABLE_HANDLE || code == ErrorCode.INVALID_PARAMS || code == ErrorCode.OBJECT_ALREADY_EXISTS
                || code == ErrorCode.REPLICA_IS_NOT_READY || code == ErrorCode.OBJECT_NOT_FOUND;
        return definite && !e.outcomeUnknown() ? "refused" : "unknown";
    }

    private void get(TierReader reader, String tenant, int count) {
        List<String> keys = new ArrayList<>();
        while (keys.size() < count) {
            String key = key();
            if (!keys.contains(key)) {
                keys.add(key);
            }
        }
        List<String> ids = new ArrayList<>();
        for (String key : keys) {
            ids.add(history.invoke(name, "get", tenant, key, Map.of()));
        }
        try {
            List<TierReader.Outcome> outcomes = reader.get(tenant, keys);
            for (int i = 0; i < outcomes.size(); i++) {
                history.complete(ids.get(i), readOutcome(outcomes.get(i)), readFields(outcomes.get(i)));
            }
        } catch (RuntimeException e) {
            for (String id : ids) {
                history.complete(id, "unknown", Map.of("error", shorten(e.toString())));
            }
        }
    }

    static String readOutcome(TierReader.Outcome outcome) {
        return switch (outcome.status()) {
            case OK -> "ok";
            case NOT_FOUND -> "miss";
            case CORRUPT -> "corrupt";
            default -> "unknown";
        };
    }

    static Map<String, Object> readFields(TierReader.Outcome outcome) {
        Map<String, Object> fields = new LinkedHashMap<>();
        if (outcome.ok()) {
            fields.put("size", outcome.data().remaining());
            fields.put("crc", ChaosContent.crc(outcome.data()));
        } else if (outcome.message() != null) {
            fields.put("error", shorten(outcome.message()));
        }
        if (outcome.descriptor() != null) {
            fields.put("bucket", outcome.descriptor().hasBucket() ? outcome.descriptor().getBucket() : -1);
            fields.put("offset", outcome.descriptor().getOffset());
        }
        return fields;
    }

    private void remove(MasterClient client, String tenant) {
        String key = key();
        String id = history.invoke(name, "remove", tenant, key, Map.of());
        try {
            client.remove(tenant, key);
            history.complete(id, "ok", Map.of());
        } catch (MasterException e) {
            String outcome = e.code() == ErrorCode.OBJECT_NOT_FOUND && !e.outcomeUnknown() ? "miss" : failedWrite(e);
            history.complete(id, outcome, Map.of("code", e.code().name(), "error", shorten(e.getMessage())));
        } catch (RuntimeException e) {
            history.complete(id, "unknown", Map.of("error", shorten(e.toString())));
        }
    }

    private void replicaList(MasterClient client, String tenant) {
        String key = key();
        String id = history.invoke(name, "replica_list", tenant, key, Map.of());
        try {
            int replicas = client.replicaList(tenant, key).getReplicasCount();
            history.complete(id, "ok", Map.of("replicas", replicas));
        } catch (MasterException e) {
            history.complete(id, e.code() == ErrorCode.OBJECT_NOT_FOUND ? "miss" : "unknown", Map.of("code", e.code().name()));
        } catch (RuntimeException e) {
            history.complete(id, "unknown", Map.of("error", shorten(e.toString())));
        }
    }

    private void promote(MasterClient client, String tenant) {
        String key = key();
        String id = history.invoke(name, "promote", tenant, key, Map.of());
        try {
            client.promote(tenant, key);
            history.complete(id, "ok", Map.of());
        } catch (MasterException e) {
            history.complete(id, e.code() == ErrorCode.OBJECT_NOT_FOUND ? "miss" : "refused", Map.of("code", e.code().name()));
        } catch (RuntimeException e) {
            history.complete(id, "unknown", Map.of("error", shorten(e.toString())));
        }
    }

    static String shorten(String message) {
        if (message == null) {
            return "";
        }
        return message.length() <= 300 ? message : message.substring(0, 300) + "…";
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
