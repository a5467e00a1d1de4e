package io.mcctl.cli.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.TreeMap;

/**
 * Checks a chaos run's history against the master's write-ahead log (as {@code mcctl snapshot wal dump -o json} prints
 * it), the final reads and {@code mcctl fsck --deep}:
 * <ol>
 * <li>every acknowledged write is committed in the log, and every key reads back at the end exactly as the log says it
 * is (the last commit's bytes, or a miss after a logged remove or eviction), unless a planted fault damaged it;</li>
 * <li>no read returns bytes that were not written for that (tenant, key), nor those of a write that was refused;</li>
 * <li>the log's leader epochs never go back (no deposed leader appended after its successor);</li>
 * <li>every write of unknown outcome is either committed in the log or not, and a refused write never is;</li>
 * <li>fsck finds no leak, overlap, false-free page or other error but the objects and files the nemesis damaged, and
 * it names every object the nemesis surely damaged;</li>
 * <li>(recovery is measured by the nemesis.)</li>
 * </ol>
 * A remove the log records as done by a client must match a remove some client asked for.
 *
 * <p>Not thread-safe.
 */
final class ChaosChecker {

    /** Violations named in full in the report; the counts are always complete. */
    static final int MAX_NAMED = 50;

    record Op(String id, String worker, String op, String tenant, String key, long invokeMs, long completeMs, String outcome,
              String crc, long size) {
    }

    record Commit(long sequence, long timeMs, int bucket, long offset, long size, String crc) {
    }

    /** A key's commits and removes in log order. */
    private static final class KeyLog {
        final List<Commit> commits = new ArrayList<>();
        /** sequence -> true for a commit, false for a remove (any reason) */
        final TreeMap<Long, Boolean> events = new TreeMap<>();
        final Map<Long, String> removeReasons = new HashMap<>();
        final Map<Long, Long> timeMs = new HashMap<>();

        /** The last commit or remove logged by {@code whenMs}: what a read completed then must find. */
        Map.Entry<Long, Boolean> lastBy(long whenMs) {
            for (Map.Entry<Long, Boolean> event : events.descendingMap().entrySet()) {
                if (timeMs.get(event.getKey()) <= whenMs) {
                    return event;
                }
            }
            return null;
        }
    }

    /** A range of a bucket file the nemesis damaged, affecting objects whose bytes were written before {@code beforeMs}. */
    record Damage(String kind, int bucket, long from, long to, long beforeMs, long surelyBeforeMs) {
    }

    private final Map<String, Integer> opsByKindAndOutcome = new TreeMap<>();
    private final Map<String, Integer> counts = new LinkedHashMap<>();
    private final List<String> violations = new ArrayList<>();
    private int violationCount;

    Map<String, Integer> opsByKindAndOutcome() {
        return opsByKindAndOutcome;
    }

    Map<String, Integer> counts() {
        return counts;
    }

    List<String> violations() {
        return violations;
    }

    int violationCount() {
        return violationCount;
    }

    private void violation(String kind, String what) {
        violationCount++;
        counts.merge(kind, 1, Integer::sum);
        if (violations.size() < MAX_NAMED) {
            violations.add(kind + ": " + what);
        }
    }

    private static String id(String tenant, String key) {
        return tenant + "/" + key;
    }

    /**
     * The JSON lines of {@code files} in order, each parsed only when the walk reaches it: a long run's history and log
     * dump are gigabytes of JSON, far more than the heap holds as trees at once. Blank lines are skipped, and so is a
     * line that does not parse (the last line of a worker killed while writing it). Each walk reads the files again.
     */
    static Iterable<JsonNode> readLines(List<Path> files) {
        return () -> new Iterator<>() {
            private final Iterator<Path> remaining = files.iterator();
            private BufferedReader reader;
            private JsonNode next;

            @Override
            public boolean hasNext() {
                try {
                    while (next == null) {
                        String line = reader == null ? null : reader.readLine();
                        if (line == null) {
                            if (reader != null) {
                                reader.close();
                                reader = null;
                            }
                            Path file = nextExisting();
                            if (file == null) {
                                return false;
                            }
                            reader = Files.newBufferedReader(file, StandardCharsets.UTF_8);
                            continue;
                        }
                        if (!line.isBlank()) {
                            try {
                                next = ChaosHistory.JSON.readTree(line);
                            } catch (IOException torn) {
                                // the last line of a worker killed while writing it
                            }
                        }
                    }
                    return true;
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }

            private Path nextExisting() {
                while (remaining.hasNext()) {
                    Path file = remaining.next();
                    if (Files.exists(file)) {
                        return file;
                    }
                }
                return null;
            }

            @Override
            public JsonNode next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                JsonNode line = next;
                next = null;
                return line;
            }
        };
    }

    void check(Iterable<JsonNode> history, Iterable<JsonNode> wal, JsonNode fsck, long inFlightAtEnd) {
        Map<String, Op> ops = new LinkedHashMap<>();
        Map<String, JsonNode> invokes = new HashMap<>();
        List<JsonNode> faults = new ArrayList<>();
        // One pass: a worker writes an operation's completion after its invocation, in its own file, so an invocation
        // is held only while its operation is open.
        for (JsonNode line : history) {
            switch (line.path("type").asText()) {
                case "invoke" -> invokes.put(line.get("id").asText(), line);
                case "fault" -> faults.add(line);
                case "complete" -> {
                    JsonNode in = invokes.remove(line.get("id").asText());
                    if (in != null) {
                        ops.put(in.get("id").asText(), op(in, line));
                    }
                }
                default -> {
                }
            }
        }
        for (JsonNode in : invokes.values()) {
            ops.put(in.get("id").asText(), op(in, null));
        }
        for (Op op : ops.values()) {
            opsByKindAndOutcome.merge(op.op() + " " + op.outcome(), 1, Integer::sum);
        }

        // The log, by key; the allocation time of each placement.
        Map<String, KeyLog> logs = new HashMap<>();
        Map<String, Long> allocatedMs = new HashMap<>();
        long lastEpoch = Long.MIN_VALUE;
        String lastSegment = null;
        for (JsonNode line : wal) {
            String type = line.path("type").asText();
            if (type.equals("segment") && !line.has("leader_epoch")) {
                continue; // no header (a segment left empty when its header could not be written): it holds no record to order
            }
            if (type.equals("segment")) {
                long epoch = line.path("leader_epoch").asLong();
                if (epoch < lastEpoch) {
                    violation("epoch_back", "segment " + line.path("segment").asText() + " has leader epoch " + epoch + " after " + lastSegment
                            + " of epoch " + lastEpoch + ": a deposed leader appended after its successor");
                }
                lastEpoch = Math.max(lastEpoch, epoch);
                lastSegment = line.path("segment").asText();
                continue;
            }
            if (type.equals("end")) {
                if (!line.path("error").isNull() && !line.path("error").isMissingNode()) {
                    violation("log_unreadable", "the log does not read to its end: " + line.path("error"));
                }
                Long oldest = line.path("oldest_available").isNumber() ? line.path("oldest_available").asLong() : null;
                if (oldest != null && oldest > 1) {
                    violation("log_truncated", "the log no longer starts at record 1 (oldest " + oldest + "): the check needs all of it");
                }
                continue;
            }
            if (!type.equals("record") || !line.has("key")) {
                continue;
            }
            String change = line.path("change").asText();
            String key = id(line.get("tenant").asText(), line.get("key").asText());
            JsonNode place = line.path("placement");
            long sequence = line.get("sequence").asLong();
            switch (change) {
                case "allocated" -> allocatedMs.putIfAbsent(placeId(key, place), line.get("time_ms").asLong());
                case "committed" -> {
                    KeyLog log = logs.computeIfAbsent(key, k -> new KeyLog());
                    log.commits.add(new Commit(sequence, line.get("time_ms").asLong(), place.get("bucket").asInt(), place.get("offset").asLong(),
                            place.get("size").asLong(), place.get("crc32c").asText()));
                    log.events.put(sequence, true);
                    log.timeMs.put(sequence, line.get("time_ms").asLong());
                }
                case "removed" -> {
                    KeyLog log = logs.computeIfAbsent(key, k -> new KeyLog());
                    log.events.put(sequence, false);
                    log.timeMs.put(sequence, line.get("time_ms").asLong());
                    log.removeReasons.put(sequence, line.path("reason").asText());
                }
                default -> {
                }
            }
        }

        List<Damage> damage = damage(faults);
        Set<Integer> damagedBuckets = new java.util.HashSet<>();
        for (Damage d : damage) {
            if (!d.kind().equals("flip_byte")) {
                damagedBuckets.add(d.bucket());
            }
        }

        // Writes and reads, by key.
        Map<String, List<Op>> puts = new HashMap<>();
        Map<String, Integer> removesAsked = new HashMap<>();
        for (Op op : ops.values()) {
            String key = id(op.tenant(), op.key());
            if (op.op().equals("put")) {
                puts.computeIfAbsent(key, k -> new ArrayList<>()).add(op);
            } else if (op.op().equals("remove")) {
                removesAsked.merge(key, 1, Integer::sum);
            }
        }

        int acked = 0;
        int unknownCommitted = 0;
        int unknownNot = 0;
        for (Map.Entry<String, List<Op>> entry : puts.entrySet()) {
            KeyLog log = logs.get(entry.getKey());
            for (Op put : entry.getValue()) {
                boolean committed = log != null && log.commits.stream().anyMatch(c -> c.crc().equals(put.crc()) && c.size() == put.size());
                switch (put.outcome()) {
                    case "ok" -> {
                        acked++;
                        if (!committed) {
                            violation("lost", "acknowledged write " + put.id() + " of " + entry.getKey() + " (crc " + put.crc() + ", " + put.size()
                                    + " bytes) is not committed in the log");
                        }
                    }
                    case "unknown" -> {
                        if (committed) {
                            unknownCommitted++;
                        } else {
                            unknownNot++;
                        }
                    }
                    case "refused" -> {
                        boolean twin = entry.getValue().stream().anyMatch(o -> o != put && !o.outcome().equals("refused")
                                && put.crc().equals(o.crc()) && o.size() == put.size());
                        if (committed && !twin) {
                            violation("refused_committed", "write " + put.id() + " of " + entry.getKey() + " was refused but the log commits it");
                        }
                    }
                    default -> {
                    }
                }
            }
        }
        counts.put("acknowledged_writes", acked);
        counts.put("unknown_writes_committed", unknownCommitted);
        counts.put("unknown_writes_not_committed", unknownNot);

        // Removes a client did must have been asked for.
        for (Map.Entry<String, KeyLog> entry : logs.entrySet()) {
            for (Map.Entry<Long, String> reason : entry.getValue().removeReasons.entrySet()) {
                if (reason.getValue().equals("removed") && !removesAsked.containsKey(entry.getKey())) {
                    violation("phantom_remove", "the log removes " + entry.getKey() + " (record " + reason.getKey() + ") as a client's remove, "
                            + "but no client asked to remove it");
                }
            }
        }

        // (2): every read's bytes were written for that key, by a write that was not refused.
        int readsWithData = 0;
        for (Op read : ops.values()) {
            if (!read.op().equals("get") || !read.outcome().equals("ok")) {
                continue;
            }
            readsWithData++;
            String key = id(read.tenant(), read.key());
            List<Op> candidates = puts.getOrDefault(key, List.of()).stream()
                    .filter(p -> p.crc().equals(read.crc()) && p.size() == read.size() && p.invokeMs() <= read.completeMs()).toList();
            if (candidates.isEmpty()) {
                violation("wrong_bytes", "read " + read.id() + " of " + key + " returned " + read.size() + " bytes with crc " + read.crc()
                        + " that no write of that key wrote");
            } else if (candidates.stream().allMatch(p -> p.outcome().equals("refused"))) {
                violation("wrong_bytes", "read " + read.id() + " of " + key + " returned the bytes of refused write " + candidates.get(0).id());
            }
        }
        counts.put("reads_with_data", readsWithData);

        // (1): the final read of every key agrees with the log.
        int finalPresent = 0;
        int finalAbsent = 0;
        int finalDamaged = 0;
        Map<String, Commit> lastCommit = new HashMap<>();
        for (Op read : ops.values()) {
            if (!read.worker().equals("final")) {
                continue;
            }
            String key = id(read.tenant(), read.key());
            KeyLog log = logs.get(key);
            // Every state the key was in while the read ran: the one at its start, and each logged after it began.
            List<Commit> states = new ArrayList<>();
            boolean absentSometime = false;
            String lastRemoveReason = "never committed";
            if (log == null) {
                absentSometime = true;
            } else {
                Map.Entry<Long, Boolean> atStart = log.lastBy(read.invokeMs());
                List<Long> sequences = new ArrayList<>();
                if (atStart != null) {
                    sequences.add(atStart.getKey());
                } else {
                    absentSometime = true;
                }
                for (Map.Entry<Long, Boolean> event : log.events.entrySet()) {
                    long t = log.timeMs.get(event.getKey());
                    if (t > read.invokeMs() && t <= read.completeMs()) {
                        sequences.add(event.getKey());
                    }
                }
                for (long sequence : sequences) {
                    if (log.events.get(sequence)) {
                        Commit commit = log.commits.stream().filter(c -> c.sequence() == sequence).findFirst().orElseThrow();
                        states.add(commit);
                        lastCommit.put(key, commit);
                    } else {
                        absentSometime = true;
                        lastRemoveReason = log.removeReasons.get(sequence);
                        lastCommit.remove(key);
                    }
                }
            }
            boolean damaged = states.stream().anyMatch(c -> damaged(c, allocatedMs.get(placeId(key, c)), damage, false));
            switch (read.outcome()) {
                case "ok" -> {
                    if (states.stream().anyMatch(c -> c.crc().equals(read.crc()) && c.size() == read.size())) {
                        finalPresent++;
                    } else {
                        violation("undurable_read", "final read of " + key + " returned " + read.size() + " bytes (crc " + read.crc()
                                + ") but the log " + (states.isEmpty() ? "holds no such object (" + lastRemoveReason + ")"
                                : "'s commit then has crc " + states.get(states.size() - 1).crc()));
                    }
                }
                case "miss", "corrupt" -> {
                    if (absentSometime) {
                        finalAbsent++;
                    } else if (damaged) {
                        finalDamaged++;
                    } else if (read.outcome().equals("corrupt")) {
                        Commit expected = states.get(states.size() - 1);
                        violation("wrong_bytes_on_disk", "final read of " + key + " fails its checksum at bucket " + expected.bucket() + " offset "
                                + expected.offset() + ", which no fault touched");
                    } else {
                        Commit expected = states.get(states.size() - 1);
                        violation("lost", "final read of " + key + " misses, but the log's last word on it is commit " + expected.sequence()
                                + " (crc " + expected.crc() + ")");
                    }
                }
                default -> violation("final_read_failed", "final read of " + key + " failed after recovery: " + read.outcome());
            }
        }
        counts.put("final_present", finalPresent);
        counts.put("final_absent", finalAbsent);
        counts.put("final_damaged_by_faults", finalDamaged);

        // (5): fsck --deep and what stays in flight.
        if (inFlightAtEnd != 0) {
            violation("in_flight", inFlightAtEnd + " allocations are still in flight after every deadline and grace passed");
        }
        if (fsck == null) {
            violation("fsck", "fsck --deep did not run");
            return;
        }
        JsonNode master = fsck.path("master");
        for (String field : List.of("leaked_pages", "false_free_pages", "overlap_pages")) {
            if (master.path(field).asLong(0) != 0) {
                violation("fsck", field + " = " + master.path(field).asLong());
            }
        }
        java.util.Set<String> namedCorrupt = new java.util.HashSet<>();
        boolean truncatedList = false;
        for (JsonNode error : fsck.path("errors")) {
            String check = error.path("check").asText();
            String message = error.path("message").asText();
            if (check.equals("object") && error.hasNonNull("key")) {
                String key = id(error.get("tenant").asText(), error.get("key").asText());
                namedCorrupt.add(key);
                Commit commit = lastCommit.get(key);
                if (commit == null || !damaged(commit, allocatedMs.get(placeId(key, commit)), damage, false)) {
                    violation("fsck", "object " + key + " fails fsck, but no fault touched it: " + message);
                }
            } else if (check.equals("object")) {
                truncatedList = true;
                if (damage.isEmpty()) {
                    violation("fsck", message);
                }
            } else if (check.equals("bucket_file") && damagedBucket(error.path("file").asText(), damagedBuckets)) {
                continue; // the file the nemesis truncated or deleted
            } else {
                violation("fsck", check + ": " + message);
            }
        }
        // The planted faults must show: every object surely damaged (written before the fault) is named by fsck.
        int planted = 0;
        for (Map.Entry<String, Commit> entry : lastCommit.entrySet()) {
            Commit commit = entry.getValue();
            if (damaged(commit, allocatedMs.get(placeId(entry.getKey(), commit)), damage, true)) {
                planted++;
                if (!truncatedList && !namedCorrupt.contains(entry.getKey())) {
                    violation("planted_not_found", entry.getKey() + " was damaged by a fault (bucket " + commit.bucket() + " offset " + commit.offset()
                            + ") but fsck --deep does not report it");
                }
            }
        }
        counts.put("planted_damage_found_by_fsck", planted);
    }

    private static boolean damagedBucket(String file, Set<Integer> buckets) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("bucket_([0-9a-f]+)\\.data").matcher(file);
        return m.find() && buckets.contains(Integer.parseInt(m.group(1), 16));
    }

    private static String placeId(String key, JsonNode place) {
        return key + "@" + place.path("bucket").asInt() + "+" + place.path("offset").asLong();
    }

    private static String placeId(String key, Commit commit) {
        return key + "@" + commit.bucket() + "+" + commit.offset();
    }

    /**
     * Whether a fault may have damaged the committed object {@code c} (surely: its bytes were all written, and committed,
     * before the fault began; maybe: its allocation came before the fault ended).
     */
    private static boolean damaged(Commit c, Long allocated, List<Damage> damage, boolean surely) {
        long allocatedMs = allocated == null ? c.timeMs() - ChaosCluster.ALLOCATION_DEADLINE.toMillis() : allocated;
        for (Damage d : damage) {
            if (d.bucket() != c.bucket() || c.offset() + c.size() <= d.from() || c.offset() >= d.to()) {
                continue;
            }
            if (surely ? c.timeMs() < d.surelyBeforeMs() : allocatedMs <= d.beforeMs()) {
                return true;
            }
        }
        return false;
    }

    /** What the flips, truncations and deletions of the history damaged. */
    static List<Damage> damage(List<JsonNode> faults) {
        List<Damage> damage = new ArrayList<>();
        Map<String, JsonNode> open = new HashMap<>();
        List<JsonNode> started = new ArrayList<>();
        for (JsonNode fault : faults) {
            String phase = fault.path("phase").asText();
            String kind = fault.path("kind").asText();
            if (phase.equals("start") && Set.of("flip_byte", "truncate_bucket", "delete_bucket").contains(kind)) {
                started.add(fault);
            } else if (phase.equals("end")) {
                for (JsonNode s : List.copyOf(started)) {
                    if (s.path("kind").asText().equals(kind)) {
                        open.put(s.toString(), fault);
                        started.remove(s);
                        break;
                    }
                }
            }
        }
        for (JsonNode fault : faults) {
            if (!fault.path("phase").asText().equals("start")) {
                continue;
            }
            String kind = fault.path("kind").asText();
            long start = fault.path("time_ms").asLong();
            JsonNode end = open.get(fault.toString());
            long endMs = end == null ? Long.MAX_VALUE : end.path("time_ms").asLong();
            int bucket = fault.path("bucket").asInt(-1);
            switch (kind) {
                case "flip_byte" -> {
                    long at = fault.path("file_offset").asLong();
                    damage.add(new Damage(kind, bucket, at, at + 1, start, start));
                }
                case "truncate_bucket" -> damage.add(new Damage(kind, bucket, fault.path("length").asLong(), Long.MAX_VALUE, endMs, start));
                case "delete_bucket" -> damage.add(new Damage(kind, bucket, 0, Long.MAX_VALUE, endMs, start));
                default -> {
                }
            }
        }
        return damage;
    }

    private static Op op(JsonNode in, JsonNode complete) {
        String outcome = complete == null ? "unknown" : complete.path("outcome").asText();
        JsonNode data = in.get("op").asText().equals("put") ? in : complete;
        return new Op(in.get("id").asText(), in.path("worker").asText(), in.get("op").asText(), in.get("tenant").asText(), in.get("key").asText(),
                in.get("time_ms").asLong(), complete == null ? Long.MAX_VALUE : complete.get("time_ms").asLong(), outcome,
                data == null ? "" : data.path("crc").asText(""), data == null ? -1 : data.path("size").asLong(-1));
    }
}
