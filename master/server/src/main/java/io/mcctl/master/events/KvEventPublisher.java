package io.mcctl.master.events;

import io.mcctl.master.service.Change;
import io.mcctl.master.service.KvEventBatcher;
import io.mcctl.master.service.KvEventHistory;
import io.mcctl.master.service.KvEventSink;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;

/**
 * Publishes what the shared tier holds as KV events for routers (docs/wire-protocol.md, "KV events"): each published
 * tenant on its own ZeroMQ PUB socket with vLLM's framing (topic, 8-byte big-endian batch sequence, msgpack payload),
 * and its own ROUTER socket answering replay requests from its last batches.
 *
 * <p>Where a batch comes from. The write-ahead log numbers the batches: every group commit whose records announce
 * events ends with a {@code KvEventsSealed} record naming, per tenant, the batch number and how many events it holds
 * ({@link #appended} and {@link #seal}, under the log's lock). The serving path hands each announcing change to
 * {@link #changed} right after applying it (under the key's lock: it only queues, bounded and lock-free; a change that
 * finds the queue full is dropped and counted). Once the group is durable ({@link #durable}), this thread collects
 * the group's changes and sends each tenant's batch. So a batch holds exactly the durable records it is numbered for,
 * the same a restart or a standby rebuilds from the log ({@link KvEventHistory}), and its number is never used for
 * another batch: after a restart or a fail-over the next batch follows the last one logged. A batch missing an event
 * (dropped) is not sent, so subscribers see the gap.
 *
 * <p>Threads and locks: {@link #appended}, {@link #seal} run under the log's lock (which guards {@link #open},
 * {@link #openFirst} and {@link #next}); {@link #changed} on serving threads (lock-free); {@link #durable} on the log's
 * writer (lock-free); everything else, every socket included, on the one publisher thread.
 */
public final class KvEventPublisher implements KvEventSink, KvEventBatcher, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(KvEventPublisher.class);
    private static final byte[] END_SEQUENCE = ByteBuffer.allocate(8).putLong(-1).array();
    /** How long a stream may be quiet before its newest batch is sent again (a duplicate by sequence, showing gaps). */
    static final long IDLE_RESEND_NANOS = 10_000_000_000L;
    /** How long the publisher sleeps with nothing to publish: the longest a replay request waits for its answer. */
    private static final long IDLE_PARK_NANOS = 10_000_000L;
    /** How long a durable group may wait for a change the serving path has not queued yet before it is taken as dropped. */
    private static final long LATE_CHANGE_NANOS = 2_000_000_000L;

    private final KvEventSettings settings;
    private final KvEventHistory history;
    private final String ownership;
    private final KvEventEncoder.Fragments encoder;

    // ---- numbering: guarded by the log's lock ----
    private final Map<String, Long> next = new HashMap<>();
    private final LinkedHashMap<String, int[]> open = new LinkedHashMap<>();
    private long openFirst;

    // ---- hand-offs to the publisher thread ----
    private final ConcurrentLinkedQueue<KvEventHistory.Event> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();
    /** Changes dropped from a full queue, by log sequence: their batches are not sent. */
    private final ConcurrentHashMap<Long, String> dropped = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Sealed> sealed = new ConcurrentLinkedQueue<>();

    private record Sealed(Change.EventsSealed batches, long sequence, long durableNanos) {
    }

    // ---- the publisher thread's own ----
    private final TreeMap<Long, Change> pending = new TreeMap<>();
    private final Map<String, Stream> streams = new LinkedHashMap<>();
    private final ZContext context;
    private final Thread thread;
    private volatile boolean running = true;

    // ---- metrics ----
    private final LongAdder eventsPublished = new LongAdder();
    private final LongAdder batchesPublished = new LongAdder();
    private final LongAdder eventsDropped = new LongAdder();
    private final LongAdder batchesDropped = new LongAdder();
    private final LongAdder replayRequests = new LongAdder();

    /** One tenant's stream: its sockets and its last batches. Publisher thread only. */
    private static final class Stream {
        final String tenant;
        final byte[] topic;
        final ZMQ.Socket pub;
        final ZMQ.Socket replay;
        final ArrayDeque<Object[]> buffer = new ArrayDeque<>(); // {Long number, byte[] payload}
        long lastSentNanos = System.nanoTime();

        Stream(String tenant, byte[] topic, ZMQ.Socket pub, ZMQ.Socket replay) {
            this.tenant = tenant;
            this.topic = topic;
            this.pub = pub;
            this.replay = replay;
        }
    }

    /**
     * Binds every published tenant's sockets and starts publishing.
     *
     * @param history   what the log says: each tenant's last batch number, and its last batches, answered to replay requests
     * @param clusterId the tier's cluster id, in each event's {@code ownership}
     * @throws IOException when an endpoint cannot be bound (one line naming it and why)
     */
    public KvEventPublisher(KvEventSettings settings, KvEventHistory history, String clusterId) throws IOException {
        this.settings = settings;
        this.history = history;
        this.ownership = "mcctl:" + clusterId;
        this.encoder = new KvEventEncoder.Fragments(ownership);
        history.lastBatches().forEach((tenant, last) -> next.put(tenant, last + 1));
        String problem = settings.problem();
        if (problem != null) {
            throw new IOException(problem);
        }
        context = new ZContext(1);
        try {
            for (int i = 0; i < settings.tenants().size(); i++) {
                String tenant = settings.tenants().get(i);
                ZMQ.Socket pub = bind(SocketType.PUB, settings.endpointOf(i), "kv_events_endpoint", tenant);
                pub.setSndHWM(100_000);
                String replayEndpoint = settings.replayEndpointOf(i);
                ZMQ.Socket replay = replayEndpoint == null ? null : bind(SocketType.ROUTER, replayEndpoint, "kv_events_replay_endpoint", tenant);
                Stream stream = new Stream(tenant, settings.topicOf(tenant).getBytes(StandardCharsets.UTF_8), pub, replay);
                for (KvEventHistory.Batch batch : history.kept(tenant)) {
                    keep(stream, batch.number(), encode(batch.events(), sealedMsOf(batch)));
                }
                streams.put(tenant, stream);
            }
        } catch (IOException | RuntimeException e) {
            context.close();
            throw e;
        }
        thread = new Thread(this::run, "mcctl-kv-events");
        thread.setDaemon(true);
        thread.start();
        LOG.info("KV events: {} tenants on {} (replay {}), topic {}, next batches {}", settings.tenants().size(), settings.endpoint(),
                settings.replayEndpoint().isEmpty() ? "off" : settings.replayEndpoint(), settings.topic(), next.isEmpty() ? "from 0" : next);
    }

    private ZMQ.Socket bind(SocketType type, String endpoint, String setting, String tenant) throws IOException {
        ZMQ.Socket socket = context.createSocket(type);
        socket.setLinger(0);
        try {
            socket.bind(endpoint);
        } catch (ZMQException e) {
            throw new IOException(setting + ": cannot bind " + endpoint + " for the KV events of tenant " + tenant + ": "
                    + e.getMessage() + " (is the port free? give a free port or an address of this host)", e);
        }
        return socket;
    }

    // ---- numbering, under the log's lock ----

    @Override
    public void appended(String tenant, long sequence) {
        if (openFirst == 0) {
            openFirst = sequence;
        }
        open.computeIfAbsent(tenant, t -> new int[1])[0]++;
    }

    @Override
    public Change.EventsSealed seal() {
        if (open.isEmpty()) {
            return null;
        }
        List<Change.TenantBatch> batches = new ArrayList<>(open.size());
        for (Map.Entry<String, int[]> entry : open.entrySet()) {
            long number = next.getOrDefault(entry.getKey(), 0L);
            next.put(entry.getKey(), number + 1);
            history.noteSealed(entry.getKey(), number);
            batches.add(new Change.TenantBatch(entry.getKey(), number, entry.getValue()[0]));
        }
        Change.EventsSealed sealedGroup = new Change.EventsSealed(openFirst, batches, System.currentTimeMillis());
        open.clear();
        openFirst = 0;
        return sealedGroup;
    }

    @Override
    public void durable(Change.EventsSealed batches, long sequence) {
        sealed.add(new Sealed(batches, sequence, System.nanoTime()));
        LockSupport.unpark(thread);
    }

    // ---- the serving path ----

    @Override
    public void changed(Change change, long sequence) {
        if (queued.incrementAndGet() > settings.queueEvents()) {
            queued.decrementAndGet();
            dropped.put(sequence, KvEventHistory.tenantOf(change));
            eventsDropped.increment();
            return;
        }
        queue.add(new KvEventHistory.Event(sequence, change));
    }

    // ---- the publisher thread ----

    private void run() {
        while (running) {
            boolean worked = false;
            try {
                // Changes queued alone are no reason to loop: they wait here for their group to be durable, whose
                // durable() wakes this thread; looping on each would spin beside the serving threads.
                drainQueue();
                worked |= publishDurableGroups();
                for (Stream stream : streams.values()) {
                    worked |= answerReplay(stream);
                    resendWhenIdle(stream);
                }
            } catch (RuntimeException e) {
                if (!running) {
                    return;
                }
                LOG.warn("KV events: {}", e.toString());
            }
            if (!worked) {
                // A group waiting for a change not queued yet is looked at again soon; otherwise the next durable
                // group wakes this thread, and the timeout only bounds how long a replay request waits.
                LockSupport.parkNanos(sealed.isEmpty() ? IDLE_PARK_NANOS : 1_000_000L);
            }
        }
    }

    private boolean drainQueue() {
        boolean any = false;
        for (KvEventHistory.Event event; (event = queue.poll()) != null; ) {
            queued.decrementAndGet();
            pending.put(event.sequence(), event.change());
            any = true;
        }
        return any;
    }

    /** Sends every durable group whose changes have all come (or were dropped), oldest first. */
    private boolean publishDurableGroups() {
        boolean any = false;
        for (Sealed head; (head = sealed.peek()) != null; ) {
            Sealed group = head;
            long first = group.batches().firstSequence();
            SortedMap<Long, Change> range = pending.subMap(first, group.sequence());
            Map<String, List<KvEventHistory.Event>> byTenant = KvEventHistory.byTenant(range);
            Map<String, Integer> droppedByTenant = new HashMap<>();
            dropped.forEach((sequence, tenant) -> {
                if (sequence >= first && sequence < group.sequence()) {
                    droppedByTenant.merge(tenant, 1, Integer::sum);
                }
            });
            boolean whole = true;
            for (Change.TenantBatch batch : group.batches().batches()) {
                int have = byTenant.getOrDefault(batch.tenant(), List.of()).size() + droppedByTenant.getOrDefault(batch.tenant(), 0);
                whole &= have >= batch.events();
            }
            boolean late = System.nanoTime() - group.durableNanos() > LATE_CHANGE_NANOS;
            if (!whole && !late) {
                return any; // a serving thread has logged a change of the group and not queued it yet: moments
            }
            sealed.poll();
            for (Change.TenantBatch batch : group.batches().batches()) {
                List<KvEventHistory.Event> events = byTenant.getOrDefault(batch.tenant(), List.of());
                Stream stream = streams.get(batch.tenant());
                if (events.size() != batch.events()) {
                    // Dropped under load (or never queued): the batch is not sent, and subscribers see its number missing.
                    batchesDropped.increment();
                    if (stream != null) {
                        LOG.warn("KV events: batch {} of tenant {} lost {} of its {} events (the queue of {} was full): not sent; "
                                + "subscribers see the gap", batch.batch(), batch.tenant(), batch.events() - events.size(), batch.events(),
                                settings.queueEvents());
                    }
                    continue;
                }
                if (stream != null) {
                    byte[] payload = encode(events, group.batches().sealedMs());
                    send(stream, batch.batch(), payload);
                    keep(stream, batch.batch(), payload);
                    eventsPublished.add(KvEventEncoder.eventCount(events));
                    batchesPublished.increment();
                }
            }
            range.clear();
            pending.headMap(first).clear(); // changes of records no group seals (none while serving; defensive)
            long end = group.sequence();
            dropped.keySet().removeIf(sequence -> sequence < end);
            any = true;
        }
        return any;
    }

    private byte[] encode(List<KvEventHistory.Event> events, long sealedMs) {
        return encoder.batch(sealedMs, events);
    }

    private static long sealedMsOf(KvEventHistory.Batch batch) {
        return batch.sealedMs();
    }

    private static byte[] sequenceBytes(long number) {
        return ByteBuffer.allocate(8).putLong(number).array();
    }

    private void send(Stream stream, long number, byte[] payload) {
        stream.pub.sendMore(stream.topic);
        stream.pub.sendMore(sequenceBytes(number));
        stream.pub.send(payload);
        stream.lastSentNanos = System.nanoTime();
    }

    private void keep(Stream stream, long number, byte[] payload) {
        stream.buffer.addLast(new Object[] {number, payload});
        while (stream.buffer.size() > settings.bufferBatches()) {
            stream.buffer.removeFirst();
        }
    }

    /**
     * Answers the replay requests waiting on {@code stream}'s ROUTER, as vLLM's publisher does: a request is the 8-byte
     * big-endian sequence to start from (after the REQ or DEALER envelope); the answer is every kept batch from there, each
     * as (topic, sequence, payload), then (topic, -1, empty).
     */
    private boolean answerReplay(Stream stream) {
        if (stream.replay == null) {
            return false;
        }
        boolean any = false;
        for (org.zeromq.ZMsg request; (request = org.zeromq.ZMsg.recvMsg(stream.replay, ZMQ.DONTWAIT)) != null; ) {
            any = true;
            replayRequests.increment();
            byte[] identity = request.pop().getData();
            boolean delimited = request.size() >= 2 && request.peekFirst().size() == 0;
            byte[] start = request.isEmpty() ? new byte[0] : request.getLast().getData();
            if (start.length != 8) {
                LOG.debug("KV events: a replay request of tenant {} whose last frame is {} bytes, not an 8-byte sequence: ignored",
                        stream.tenant, start.length);
                continue;
            }
            long from = ByteBuffer.wrap(start).getLong();
            for (Object[] kept : stream.buffer) {
                if ((Long) kept[0] >= from) {
                    reply(stream, identity, delimited, sequenceBytes((Long) kept[0]), (byte[]) kept[1]);
                }
            }
            reply(stream, identity, delimited, END_SEQUENCE, new byte[0]);
        }
        return any;
    }

    private static void reply(Stream stream, byte[] identity, boolean delimited, byte[] sequence, byte[] payload) {
        stream.replay.sendMore(identity);
        if (delimited) {
            stream.replay.sendMore(new byte[0]);
        }
        stream.replay.sendMore(stream.topic);
        stream.replay.sendMore(sequence);
        stream.replay.send(payload);
    }

    /** A quiet stream sends its newest batch again: a subscriber that missed the last batches sees the gap without waiting for traffic. */
    private void resendWhenIdle(Stream stream) {
        if (!stream.buffer.isEmpty() && System.nanoTime() - stream.lastSentNanos > IDLE_RESEND_NANOS) {
            Object[] newest = stream.buffer.peekLast();
            send(stream, (Long) newest[0], (byte[]) newest[1]);
        }
    }

    // ---- metrics ----

    public long eventsPublished() {
        return eventsPublished.sum();
    }

    public long batchesPublished() {
        return batchesPublished.sum();
    }

    /** Events dropped because the queue to the publisher was full (their batches were not sent). */
    public long eventsDropped() {
        return eventsDropped.sum();
    }

    /** Batches not sent because an event of theirs was dropped. */
    public long batchesDropped() {
        return batchesDropped.sum();
    }

    public long replayRequests() {
        return replayRequests.sum();
    }

    /** Events queued for the publisher thread now. */
    public int queuedEvents() {
        return Math.max(0, queued.get());
    }

    @Override
    public void close() {
        running = false;
        LockSupport.unpark(thread);
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        context.close();
    }
}
