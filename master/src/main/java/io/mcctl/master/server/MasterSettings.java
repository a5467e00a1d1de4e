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

    public static final Setting<Duration> READ_LEASE = Setting.of("read_lease", "MCCTL_READ_LEASE", "--read-lease", "5s",
            text -> positive(DurationParser.parse(text)), DurationParser::format,
            "a positive duration (" + DurationParser.ALLOWED + ")",
            "how long a mapping lookup keeps the object's pages from reuse after a remove or overwrite");

    public static final List<Setting<?>> ALL = List.of(PORT, METRICS_PORT, BIND, ALLOCATION_DEADLINE, READ_LEASE);

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
