package io.mcctl.master.server;

import io.mcctl.storage.config.DurationParser;
import io.mcctl.storage.config.Setting;
import java.time.Duration;
import java.util.List;

/** The master's own settings; the tier's are in {@link io.mcctl.storage.config.StorageSettings}. */
public final class MasterSettings {

    public static final Setting<Integer> PORT = Setting.of("port", "MCCTL_MASTER_PORT", "--port", "50051",
            text -> parsePort(text, true), String::valueOf, "a TCP port from 0 to 65535 (0 picks a free one)",
            "gRPC port of the master");

    public static final Setting<Integer> METRICS_PORT = Setting.of("metrics_port", "MCCTL_METRICS_PORT", "--metrics-port", "9003",
            text -> parsePort(text, true), String::valueOf, "a TCP port from 0 to 65535 (0 picks a free one)",
            "HTTP port for Prometheus metrics (/metrics) and health (/-/healthy)");

    public static final Setting<String> BIND = Setting.of("bind", "MCCTL_MASTER_BIND", "--bind", "0.0.0.0",
            MasterSettings::parseHost, s -> s, "an IP address or host name", "address the master listens on");

    public static final Setting<Duration> ALLOCATION_DEADLINE = Setting.of("allocation_deadline", "MCCTL_ALLOCATION_DEADLINE",
            "--allocation-deadline", "60s", text -> positive(DurationParser.parse(text)), DurationParser::format,
            "a positive duration (" + DurationParser.ALLOWED + ")",
            "time a writer has between allocate and notify before its pages are reclaimed");

    public static final Setting<Duration> ALLOCATION_GRACE = Setting.of("allocation_grace", "MCCTL_ALLOCATION_GRACE",
            "--allocation-grace", "10s", MasterSettings::parseGrace, DurationParser::format,
            "a positive duration (" + DurationParser.ALLOWED + ")",
            "how long past its deadline an expired or dropped allocation's pages are kept from reuse (its writer may still be writing)");

    public static final Setting<Duration> READ_LEASE = Setting.of("read_lease", "MCCTL_READ_LEASE", "--read-lease", "5s",
            text -> positive(DurationParser.parse(text)), DurationParser::format,
            "a positive duration (" + DurationParser.ALLOWED + ")",
            "how long a mapping lookup keeps the object's pages from reuse after a remove or overwrite");

    /** How acknowledged changes survive a crash. */
    public enum Durability { wal, snapshot }

    public static final Setting<Durability> DURABILITY = Setting.of("durability", "MCCTL_DURABILITY", "--durability", "wal",
            MasterSettings::parseDurability, Durability::name,
            "wal (every change logged and fsynced before it is acknowledged) or snapshot (periodic snapshots only, as the design RFC)",
            "how acknowledged changes survive a crash of the master");

    public static final Setting<String> STATE_DIR = Setting.of("state_dir", "MCCTL_STATE_DIR", "--state-dir", "",
            text -> text.isEmpty() ? "" : java.nio.file.Path.of(text).toAbsolutePath().normalize().toString(), s -> s.isEmpty() ? "<root>/master" : s,
            "a directory path (empty: <root>/master)", "where the master keeps its write-ahead log and snapshots");

    public static final Setting<Duration> SNAPSHOT_INTERVAL = Setting.of("snapshot_interval", "MCCTL_SNAPSHOT_INTERVAL",
            "--snapshot-interval", "600s", text -> positive(DurationParser.parse(text)), DurationParser::format,
            "a positive duration (" + DurationParser.ALLOWED + ")", "time between periodic snapshots");

    public static final Setting<Duration> BUCKET_CHECK_INTERVAL = Setting.of("bucket_check_interval", "MCCTL_BUCKET_CHECK_INTERVAL",
            "--bucket-check-interval", "5s", text -> positive(DurationParser.parse(text)), DurationParser::format,
            "a positive duration (" + DurationParser.ALLOWED + ")",
            "time between the master's checks that every bucket file is still the one it laid out (one stat each); a bucket "
                    + "whose file is missing or replaced takes no allocations. A bucket where a node's write failed is checked at once");

    public static final Setting<Integer> SNAPSHOT_RETENTION = Setting.of("snapshot_retention", "MCCTL_SNAPSHOT_RETENTION",
            "--snapshot-retention", "2", text -> {
                int n;
                try {
                    n = Integer.parseInt(text);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("");
                }
                if (n < 1 || n > 100) {
                    throw new IllegalArgumentException("");
                }
                return n;
            }, String::valueOf, "a whole number from 1 to 100", "snapshots kept (older ones and the log they cover are deleted)");

    public static final Setting<Long> WAL_SEGMENT_SIZE = Setting.of("wal_segment_size", "MCCTL_WAL_SEGMENT_SIZE", "--wal-segment-size",
            "64MiB", text -> {
                long size = io.mcctl.storage.config.SizeParser.parse(text);
                if (size < (1 << 20)) {
                    throw new IllegalArgumentException("");
                }
                return size;
            }, io.mcctl.storage.config.SizeParser::format, "at least 1MiB", "size at which a write-ahead log segment is closed and a new one begun");

    public static final Setting<Boolean> EVICTION = Setting.of("eviction", "MCCTL_EVICTION", "--eviction", "true",
            io.mcctl.storage.config.StorageSettings::parseBoolean, String::valueOf, "true or false",
            "evict least recently used objects when the tier fills (false: a full tier refuses allocations with NO_AVAILABLE_HANDLE)");

    public static final Setting<Double> EVICTION_HIGH_WATERMARK = Setting.of("eviction_high_watermark", "MCCTL_EVICTION_HIGH_WATERMARK",
            "--eviction-high-watermark", "0.90", MasterSettings::parseFraction, MasterSettings::formatFraction,
            "a fraction above 0 and at most 1", "used share of all pages above which the evictor starts (pages in quarantine not counted)");

    public static final Setting<Double> EVICTION_LOW_WATERMARK = Setting.of("eviction_low_watermark", "MCCTL_EVICTION_LOW_WATERMARK",
            "--eviction-low-watermark", "0.70", MasterSettings::parseFraction, MasterSettings::formatFraction,
            "a fraction above 0 and at most the high watermark", "used share of all pages the evictor brings the tier down to");

    /** The longest {@link #BUSY_POLL}: past it the polling costs a core's worth at any but the lightest load. */
    public static final Duration MAX_BUSY_POLL = Duration.ofMillis(1);

    public static final Setting<Duration> BUSY_POLL = Setting.of("busy_poll", "MCCTL_BUSY_POLL", "--busy-poll", "0s",
            MasterSettings::parseBusyPoll, DurationParser::format, "a duration from 0s (off) to 1ms, e.g. 50us",
            "how long a transport thread keeps polling its connections after its last work before it sleeps: less latency per "
                    + "call where waking a sleeping CPU is slow (virtual machines), for up to this much CPU after each burst of calls");

    /** @throws IllegalArgumentException when {@code text} is not a duration from 0 to {@link #MAX_BUSY_POLL} */
    public static Duration parseBusyPoll(String text) {
        Duration poll = DurationParser.parseWithMicros(text);
        if (poll.isNegative() || poll.compareTo(MAX_BUSY_POLL) > 0) {
            throw new IllegalArgumentException("");
        }
        return poll;
    }

    /** The busy poll in force ({@link #BUSY_POLL}); off when the settings do not name it. */
    public static Duration busyPoll(java.util.Map<String, String> settings) {
        String text = settings.get(BUSY_POLL.key());
        return text == null ? Duration.ZERO : parseBusyPoll(text);
    }

    // ---- what clients can make the master hold: connections, and answers they do not read ----

    /** {@link #MAX_CONNECTIONS}'s value for auto: derived from the open-file limit ({@link ConnectionLimits}). */
    public static final int AUTO = 0;

    public static final Setting<Integer> MAX_CONNECTIONS = Setting.of("max_connections", "MCCTL_MAX_CONNECTIONS", "--max-connections", "auto",
            text -> text.equals("auto") ? AUTO : wholeNumber(text, 1, ConnectionLimits.LARGEST),
            n -> n == AUTO ? "auto" : String.valueOf(n), "auto, or a whole number from 1 to " + ConnectionLimits.LARGEST,
            "most client connections the gRPC port holds open at once; one more is closed as soon as it is accepted. auto: the "
                    + "open-file limit less " + ConnectionLimits.FD_RESERVE + " descriptors kept for the master's own files (half the limit "
                    + "below " + 2 * ConnectionLimits.FD_RESERVE + "), at most " + ConnectionLimits.MAX_AUTO_CONNECTIONS);

    public static final Setting<Duration> CONNECTION_IDLE_TIMEOUT = Setting.of("connection_idle_timeout", "MCCTL_CONNECTION_IDLE_TIMEOUT",
            "--connection-idle-timeout", "300s", text -> positive(DurationParser.parse(text)), DurationParser::format,
            "a positive duration (" + DurationParser.ALLOWED + ")",
            "a connection with no call in progress for this long is closed (a client connects again at its next call); a "
                    + "connection that never sends a call is closed after it too");

    /** {@link #SESSION_BACKLOG}'s default: 16 MiB, a few hundred thousand keys' answers. */
    public static final long SESSION_BACKLOG_DEFAULT = 16L << 20;
    /** {@link #SESSION_BACKLOG_TOTAL}'s default. */
    public static final long SESSION_BACKLOG_TOTAL_DEFAULT = 256L << 20;

    public static final Setting<Long> SESSION_BACKLOG = Setting.of("session_backlog", "MCCTL_SESSION_BACKLOG", "--session-backlog",
            io.mcctl.storage.config.SizeParser.format(SESSION_BACKLOG_DEFAULT), text -> sizeBetween(text, 64L << 10, 1L << 30),
            io.mcctl.storage.config.SizeParser::format, "a size from 64KiB to 1GiB",
            "most bytes of answers a Session stream holds that its client has not taken; an answer past it cancels the stream "
                    + "with RESOURCE_EXHAUSTED (the stream stops being read long before, while its client takes nothing)");

    public static final Setting<Long> SESSION_BACKLOG_TOTAL = Setting.of("session_backlog_total", "MCCTL_SESSION_BACKLOG_TOTAL",
            "--session-backlog-total", io.mcctl.storage.config.SizeParser.format(SESSION_BACKLOG_TOTAL_DEFAULT),
            text -> sizeBetween(text, 1L << 20, 1L << 40), io.mcctl.storage.config.SizeParser::format, "a size from 1MiB to 1TiB",
            "most bytes of answers all Session streams together hold that their clients have not taken; an answer past it, to a "
                    + "client not taking answers, cancels that stream with RESOURCE_EXHAUSTED");

    static long sizeBetween(String text, long min, long max) {
        long size = io.mcctl.storage.config.SizeParser.parse(text);
        if (size < min || size > max) {
            throw new IllegalArgumentException("");
        }
        return size;
    }

    /** The {@link #SESSION_BACKLOG} and {@link #SESSION_BACKLOG_TOTAL} in force: per stream, then in all. */
    public static long[] sessionBacklog(java.util.Map<String, String> settings) {
        String perStream = settings.get(SESSION_BACKLOG.key());
        String total = settings.get(SESSION_BACKLOG_TOTAL.key());
        return new long[] {perStream == null ? SESSION_BACKLOG_DEFAULT : io.mcctl.storage.config.SizeParser.parse(perStream),
                total == null ? SESSION_BACKLOG_TOTAL_DEFAULT : io.mcctl.storage.config.SizeParser.parse(total)};
    }

    // ---- who may do what (docs/security.md): empty means off ----

    public static final Setting<String> TLS_CERT = Setting.of("tls_cert", "MCCTL_MASTER_TLS_CERT", "--tls-cert", "",
            MasterSettings::optionalPath, s -> s, "a PEM file path (empty: plaintext)",
            "PEM certificate chain the master serves gRPC and metrics with; needs tls_key");

    public static final Setting<String> TLS_KEY = Setting.of("tls_key", "MCCTL_MASTER_TLS_KEY", "--tls-key", "",
            MasterSettings::optionalPath, s -> s, "a PEM file path, PKCS#8 (BEGIN PRIVATE KEY)", "private key of tls_cert");

    public static final Setting<String> TLS_CLIENT_CA = Setting.of("tls_client_ca", "MCCTL_MASTER_TLS_CLIENT_CA", "--tls-client-ca", "",
            MasterSettings::optionalPath, s -> s, "a PEM file path (empty: no client certificates)",
            "CA certificates a gRPC client's certificate must chain to (mutual TLS); needs tls_cert");

    public static final Setting<String> TOKENS_FILE = Setting.of("tokens_file", "MCCTL_MASTER_TOKENS_FILE", "--tokens-file", "",
            MasterSettings::optionalPath, s -> s, "a YAML file path (empty: no tokens)",
            "tenant tokens (SHA-256 hashes) and their tenants and roles; read at start and on SIGHUP");

    // ---- nodes (mcctl node start) ----

    public static final Setting<Duration> CLIENT_TTL = Setting.of("client_ttl", "MCCTL_CLIENT_TTL", "--client-ttl", "10s",
            text -> positive(DurationParser.parse(text)), DurationParser::format, "a positive duration (" + DurationParser.ALLOWED + ")",
            "a node the master has not heard from (Ping) within this long is dead: its MEMORY and LOCAL_DISK replicas are removed "
                    + "(Mooncake's client_ttl)");

    public static final Setting<Integer> PROMOTION_READS = Setting.of("promotion_reads", "MCCTL_PROMOTION_READS", "--promotion-reads", "3",
            text -> wholeNumber(text, 0, 1_000_000), String::valueOf, "a whole number from 0 to 1000000",
            "reads of a DISTRIBUTED_DISK object within the admission window (about the last 262144 lookups) that queue it for "
                    + "promotion into a node's DRAM segment; 0: only mcctl promote queues objects");

    public static final Setting<Integer> PROMOTION_MAX_TASKS = Setting.of("promotion_max_tasks", "MCCTL_PROMOTION_MAX_TASKS",
            "--promotion-max-tasks", "1024", text -> wholeNumber(text, 1, 1_000_000), String::valueOf, "a whole number from 1 to 1000000",
            "most promotion tasks queued or in progress at once; admitted objects past it wait for the next admission");

    static int wholeNumber(String text, int min, int max) {
        int n;
        try {
            n = Integer.parseInt(text.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException("");
        }
        return n;
    }

    static String optionalPath(String text) {
        return text.isEmpty() ? "" : java.nio.file.Path.of(text).toAbsolutePath().normalize().toString();
    }

    public static final Setting<String> HA = Setting.of("ha", "MCCTL_HA", "--ha", "", text -> {
                if (!text.isEmpty()) {
                    io.mcctl.master.etcd.EtcdTarget.parse(text); // one line naming the value and the form allowed
                }
                return text;
            }, s -> s, "empty (one master, no election) or etcd://host:port[,host:port...][/prefix] (';' between endpoints too)",
            "run for leadership on etcd: the leader serves, standbys follow the shared state and take over (docs/ha.md)");

    public static final Setting<Duration> HA_LEASE_TTL = Setting.of("ha_lease_ttl", "MCCTL_HA_LEASE_TTL", "--ha-lease-ttl", "5s", text -> {
                Duration ttl = DurationParser.parse(text);
                if (ttl.toMillis() % 1000 != 0 || ttl.toSeconds() < 1 || ttl.toSeconds() > 600) {
                    throw new IllegalArgumentException("");
                }
                return ttl;
            }, DurationParser::format, "whole seconds from 1s to 600s",
            "the leader's etcd lease: a standby takes over about this long after the leader dies; the leader stops answering "
                    + "changes a quarter of it before the lease can expire");

    public static final Setting<Boolean> HA_START_EMPTY = Setting.of("ha_start_empty", "MCCTL_HA_START_EMPTY", "--ha-start-empty", "false",
            io.mcctl.storage.config.StorageSettings::parseBoolean, String::valueOf, "true or false",
            "with --ha: when the shared state cannot be read, move it aside into unreadable-<time>/ and start empty "
                    + "(every cached object is lost to the cache; docs/ha.md)");

    // ---- KV events for routers (docs/wire-protocol.md, "KV events"): off unless kv_events_endpoint is set ----

    public static final Setting<String> KV_EVENTS_ENDPOINT = Setting.of("kv_events_endpoint", "MCCTL_KV_EVENTS_ENDPOINT",
            "--kv-events-endpoint", "", io.mcctl.master.events.KvEventSettings::parseEndpoint, s -> s,
            "empty (off) or a ZeroMQ endpoint to bind: tcp://*:5557, tcp://host:port, ipc://path",
            "where the master publishes KV events (vLLM's schema, ZeroMQ PUB) for what the shared tier holds; the i-th tenant of "
                    + "kv_events_tenants publishes on the port plus i");

    public static final Setting<String> KV_EVENTS_REPLAY_ENDPOINT = Setting.of("kv_events_replay_endpoint", "MCCTL_KV_EVENTS_REPLAY_ENDPOINT",
            "--kv-events-replay-endpoint", "", io.mcctl.master.events.KvEventSettings::parseEndpoint, s -> s,
            "empty (no replay) or a ZeroMQ endpoint to bind: tcp://*:5657, tcp://host:port, ipc://path",
            "where a subscriber asks for the batches it missed (ZeroMQ ROUTER: it sends the 8-byte sequence to start from); the "
                    + "i-th tenant answers on the port plus i");

    public static final Setting<String> KV_EVENTS_TOPIC = Setting.of("kv_events_topic", "MCCTL_KV_EVENTS_TOPIC", "--kv-events-topic",
            io.mcctl.master.events.KvEventSettings.DEFAULT_TOPIC, io.mcctl.master.events.KvEventSettings::parseTopic, s -> s,
            "printable ASCII without spaces, at most 200 characters; {tenant} stands for the tenant",
            "the topic of each tenant's KV events (llm-d reads kv@<pod>@<model>: pool:<name> marks a tier shared by every pod)");

    public static final Setting<List<String>> KV_EVENTS_TENANTS = Setting.of("kv_events_tenants", "MCCTL_KV_EVENTS_TENANTS",
            "--kv-events-tenants", "default", io.mcctl.master.events.KvEventSettings::parseTenants, l -> String.join(",", l),
            "tenant ids separated by commas (at most 64, no repeats)",
            "the tenants whose KV events are published, each on its own endpoints (no subscriber of one learns another's keys)");

    public static final Setting<Integer> KV_EVENTS_BUFFER = Setting.of("kv_events_buffer", "MCCTL_KV_EVENTS_BUFFER", "--kv-events-buffer",
            "1000", text -> wholeNumber(text, 1, 1_000_000), String::valueOf, "a whole number from 1 to 1000000",
            "KV event batches kept per tenant for the replay endpoint (and rebuilt from the log after a restart or a fail-over)");

    public static final Setting<Integer> KV_EVENTS_QUEUE = Setting.of("kv_events_queue", "MCCTL_KV_EVENTS_QUEUE", "--kv-events-queue",
            "65536", text -> wholeNumber(text, 16, 16_777_216), String::valueOf, "a whole number from 16 to 16777216",
            "KV events waiting to be published at most; past it an event is dropped (counted, and its batch is not sent: "
                    + "subscribers see a gap in the sequence) rather than slowing the master");

    public static final List<Setting<?>> ALL = List.of(PORT, METRICS_PORT, BIND, ALLOCATION_DEADLINE, ALLOCATION_GRACE, READ_LEASE, DURABILITY, STATE_DIR,
            SNAPSHOT_INTERVAL, SNAPSHOT_RETENTION, BUCKET_CHECK_INTERVAL, WAL_SEGMENT_SIZE, BUSY_POLL, MAX_CONNECTIONS, CONNECTION_IDLE_TIMEOUT, SESSION_BACKLOG,
            SESSION_BACKLOG_TOTAL, EVICTION, EVICTION_HIGH_WATERMARK, EVICTION_LOW_WATERMARK, TLS_CERT, TLS_KEY, TLS_CLIENT_CA, TOKENS_FILE, HA, HA_LEASE_TTL, HA_START_EMPTY, CLIENT_TTL, PROMOTION_READS, PROMOTION_MAX_TASKS,
            KV_EVENTS_ENDPOINT, KV_EVENTS_REPLAY_ENDPOINT, KV_EVENTS_TOPIC, KV_EVENTS_TENANTS, KV_EVENTS_BUFFER, KV_EVENTS_QUEUE);

    static double parseFraction(String text) {
        double value;
        try {
            value = Double.parseDouble(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("");
        }
        if (!(value > 0 && value <= 1)) {
            throw new IllegalArgumentException("");
        }
        return value;
    }

    static String formatFraction(double value) {
        return String.format(java.util.Locale.ROOT, "%.2f", value);
    }

    static Duration parseGrace(String text) {
        return positive(DurationParser.parse(text));
    }

    static Durability parseDurability(String text) {
        try {
            return Durability.valueOf(text.toLowerCase(java.util.Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("");
        }
    }

    private MasterSettings() {
    }

    static int parsePort(String text, boolean allowZero) {
        int port;
        try {
            port = Integer.parseInt(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("");
        }
        if (port < (allowZero ? 0 : 1) || port > 65535) {
            throw new IllegalArgumentException("");
        }
        return port;
    }

    static String parseHost(String text) {
        if (text.isEmpty() || text.chars().anyMatch(Character::isWhitespace)) {
            throw new IllegalArgumentException("");
        }
        return text;
    }

    static Duration positive(Duration duration) {
        if (duration.isZero() || duration.isNegative()) {
            throw new IllegalArgumentException("must be more than zero");
        }
        return duration;
    }
}
