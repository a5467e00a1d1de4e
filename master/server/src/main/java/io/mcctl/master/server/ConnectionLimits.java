package io.mcctl.master.server;

import io.mcctl.storage.config.DurationParser;
import io.mcctl.storage.mount.MountValidator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.OptionalLong;

/**
 * How many client connections the master's gRPC port holds open at once, and how long one without a call in progress
 * lives: {@link MasterSettings#MAX_CONNECTIONS} and {@link MasterSettings#CONNECTION_IDLE_TIMEOUT}. Every connection
 * takes a file descriptor, and so do the master's own files; the limit keeps {@link #reserve} of the process's
 * open-file limit for those, so that a crowd of connections cannot make a log segment or a snapshot fail to open.
 *
 * @param maxConnections connections held open at once; one more is closed as soon as it is accepted
 * @param idleTimeout how long a connection with no call in progress is kept
 * @param derivation how {@code maxConnections} was arrived at, for the start-up log
 */
public record ConnectionLimits(int maxConnections, Duration idleTimeout, String derivation) {

    /**
     * Descriptors kept from connections for the master's own use: bucket files (at most 256 open at once, when the
     * layout grows or fsck reads them), write-ahead log segments and snapshots being written and read, the state lock
     * and layout record, the metrics server and its scrapers, etcd under {@code --ha}, and the JVM's own (jars, epoll,
     * pipes); an idle master uses about 30 of them.
     */
    public static final int FD_RESERVE = 512;
    /** The most auto allows, whatever the open-file limit: each connection costs memory, and no deployment needs more. */
    public static final int MAX_AUTO_CONNECTIONS = 10_000;
    /** The largest value {@link MasterSettings#MAX_CONNECTIONS} takes. */
    public static final int LARGEST = 1_000_000;
    /** Auto where the open-file limit cannot be read (no /proc: not Linux). */
    static final int AUTO_WITHOUT_LIMIT = 1024;
    static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(300);
    private static final Path LIMITS = Path.of("/proc/self/limits");

    /** The descriptors kept for the master's own files under an open-file limit of {@code limit}: half of a small one. */
    public static long reserve(long limit) {
        return Math.min(FD_RESERVE, limit / 2);
    }

    /**
     * The limits the settings in force give this process ({@link MasterServer.Options#settings}).
     *
     * @throws IllegalArgumentException (one line) when max_connections leaves too few descriptors for the master's own files
     */
    public static ConnectionLimits inForce(Map<String, String> settings) {
        return inForce(settings, null);
    }

    /** {@link #inForce(Map)}, whose refusal names where max_connections came from ({@code source}; null: it does not). */
    public static ConnectionLimits inForce(Map<String, String> settings, String source) {
        return of(settings, openFileLimit(), source);
    }

    /** This process's soft open-file limit ({@link Long#MAX_VALUE}: unlimited), empty where it cannot be read. */
    public static OptionalLong openFileLimit() {
        try {
            return MountValidator.openFilesSoftLimit(Files.readAllLines(LIMITS));
        } catch (IOException e) {
            return OptionalLong.empty();
        }
    }

    static ConnectionLimits of(Map<String, String> settings, OptionalLong openFileLimit, String source) {
        String idle = settings.get(MasterSettings.CONNECTION_IDLE_TIMEOUT.key());
        Duration idleTimeout = idle == null ? DEFAULT_IDLE_TIMEOUT : MasterSettings.positive(DurationParser.parse(idle));
        String max = settings.get(MasterSettings.MAX_CONNECTIONS.key());
        int configured = max == null || max.trim().equals("auto") ? MasterSettings.AUTO : Integer.parseInt(max.trim());
        if (openFileLimit.isEmpty()) {
            return configured == MasterSettings.AUTO
                    ? new ConnectionLimits(AUTO_WITHOUT_LIMIT, idleTimeout, "auto; the open-file limit cannot be read here")
                    : new ConnectionLimits(configured, idleTimeout, "set by max_connections; the open-file limit cannot be read here");
        }
        long limit = openFileLimit.getAsLong();
        long reserve = reserve(limit);
        long room = limit - reserve;
        String limitText = limit == Long.MAX_VALUE ? "unlimited" : Long.toString(limit);
        if (configured == MasterSettings.AUTO) {
            int auto = (int) Math.min(room, MAX_AUTO_CONNECTIONS);
            return new ConnectionLimits(auto, idleTimeout, "auto: the open-file limit " + limitText + " less " + reserve
                    + " descriptors kept for the master's own files" + (room > MAX_AUTO_CONNECTIONS ? ", at most " + MAX_AUTO_CONNECTIONS : ""));
        }
        if (configured > room) {
            throw new IllegalArgumentException("max_connections " + configured + (source == null ? "" : " (from " + source + ")")
                    + " leaves too few of the open-file limit " + limitText + " for the master's own files: allowed is at most " + room
                    + " (the limit less " + reserve + " descriptors kept for the write-ahead log, snapshots, bucket files, metrics and "
                    + "etcd); lower max_connections, or raise the limit (LimitNOFILE= in the master's systemd unit, ulimit -n in its shell)");
        }
        return new ConnectionLimits(configured, idleTimeout, "set by max_connections, under the open-file limit " + limitText + " less "
                + reserve + " descriptors kept for the master's own files");
    }
}
