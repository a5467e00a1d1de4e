package io.mcctl.cli.chaos;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The history of a chaos run as JSON lines: for every operation an {@code invoke} line (what is asked, and for a write
 * the CRC32C, size and content tag of its bytes) before it is sent and a {@code complete} line (outcome ok, refused,
 * unknown or, for reads and removes, miss) when it returns; an operation with no complete line is unknown. Faults are
 * {@code fault} lines. Each writer of the run (this JVM, each Python worker) has its own file.
 *
 * <p>Thread-safe: lines are written under this object's monitor and flushed one by one.
 */
public final class ChaosHistory implements AutoCloseable {

    static final ObjectMapper JSON = new ObjectMapper();

    private final BufferedWriter out;
    private final AtomicLong serial = new AtomicLong();
    private final String prefix;

    public ChaosHistory(Path file, String prefix) throws IOException {
        this.out = Files.newBufferedWriter(file, StandardCharsets.UTF_8);
        this.prefix = prefix;
    }

    /** Records an invocation and returns its id for {@link #complete}. */
    public String invoke(String worker, String op, String tenant, String key, Map<String, Object> fields) {
        String id = prefix + "." + serial.incrementAndGet();
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("type", "invoke");
        line.put("id", id);
        line.put("worker", worker);
        line.put("op", op);
        line.put("tenant", tenant);
        line.put("key", key);
        line.put("time_ms", System.currentTimeMillis());
        line.putAll(fields);
        write(line);
        return id;
    }

    public void complete(String id, String outcome, Map<String, Object> fields) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("type", "complete");
        line.put("id", id);
        line.put("outcome", outcome);
        line.put("time_ms", System.currentTimeMillis());
        line.putAll(fields);
        write(line);
    }

    /** A fault's start or end, or any other event of the nemesis. */
    public void fault(String phase, String kind, String target, Map<String, Object> fields) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("type", "fault");
        line.put("phase", phase);
        line.put("kind", kind);
        line.put("target", target);
        line.put("time_ms", System.currentTimeMillis());
        line.putAll(fields);
        write(line);
    }

    private synchronized void write(Map<String, Object> line) {
        try {
            out.write(JSON.writeValueAsString(line));
            out.write('\n');
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException("writing the chaos history: " + e.getMessage(), e);
        }
    }

    @Override
    public synchronized void close() throws IOException {
        out.close();
    }
}
