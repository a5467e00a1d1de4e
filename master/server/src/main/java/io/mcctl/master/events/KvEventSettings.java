package io.mcctl.master.events;

import io.mcctl.master.protocol.KeyRules;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The KV event publisher's settings in force (docs/configuration.md; the settings themselves are declared in
 * {@code MasterSettings}), and the endpoints each published tenant binds: the i-th tenant on the configured port plus
 * i, as vLLM offsets its data-parallel ranks' ports.
 *
 * @param endpoint       the PUB endpoint of the first tenant
 * @param replayEndpoint the ROUTER endpoint of the first tenant, or empty for no replay
 * @param topic          the topic template ({@code {tenant}} stands for the tenant)
 * @param tenants        the tenants published, in order
 * @param bufferBatches  batches kept per tenant for replay
 * @param queueEvents    events waiting to be published at most
 */
public record KvEventSettings(String endpoint, String replayEndpoint, String topic, List<String> tenants, int bufferBatches, int queueEvents) {

    public static final String DEFAULT_TOPIC = "kv@pool:mcctl@{tenant}";

    private static final Pattern TCP = Pattern.compile("tcp://(\\*|\\[[0-9A-Fa-f:.]+]|[A-Za-z0-9.\\-]+):([0-9]{1,5})");
    private static final int MAX_TENANTS = 64;

    /**
     * The settings in force from the master's settings map (keys as {@code MasterSettings} names them), or null when KV
     * events are off ({@code kv_events_endpoint} empty).
     */
    public static KvEventSettings from(Map<String, String> settings) {
        String endpoint = settings.getOrDefault("kv_events_endpoint", "");
        if (endpoint.isEmpty()) {
            return null;
        }
        return new KvEventSettings(endpoint, settings.getOrDefault("kv_events_replay_endpoint", ""),
                settings.getOrDefault("kv_events_topic", DEFAULT_TOPIC), parseTenants(settings.getOrDefault("kv_events_tenants", "default")),
                Integer.parseInt(settings.getOrDefault("kv_events_buffer", "1000")), Integer.parseInt(settings.getOrDefault("kv_events_queue", "65536")));
    }

    /** @throws IllegalArgumentException unless empty, tcp://host:port (host * for every address), ipc://path or inproc://name */
    public static String parseEndpoint(String text) {
        String t = text.trim();
        if (t.isEmpty()) {
            return "";
        }
        Matcher tcp = TCP.matcher(t);
        if (tcp.matches()) {
            int port = Integer.parseInt(tcp.group(2));
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("");
            }
            return t;
        }
        if ((t.startsWith("ipc://") && t.length() > 6) || (t.startsWith("inproc://") && t.length() > 9)) {
            if (t.chars().anyMatch(c -> c <= ' ')) {
                throw new IllegalArgumentException("");
            }
            return t;
        }
        throw new IllegalArgumentException("");
    }

    /** @throws IllegalArgumentException unless printable ASCII without spaces, at most 200 characters, with no brace but {tenant} */
    public static String parseTopic(String text) {
        if (text.length() > 200 || text.chars().anyMatch(c -> c <= ' ' || c > '~')) {
            throw new IllegalArgumentException("");
        }
        if (text.replace("{tenant}", "").chars().anyMatch(c -> c == '{' || c == '}')) {
            throw new IllegalArgumentException("");
        }
        return text;
    }

    /** @throws IllegalArgumentException unless tenant ids (each valid) separated by commas, at most 64, no repeats */
    public static List<String> parseTenants(String text) {
        LinkedHashSet<String> tenants = new LinkedHashSet<>();
        for (String part : text.split(",", -1)) {
            String tenant = part.trim();
            if (tenant.isEmpty() || KeyRules.checkTenant(tenant) != null || !tenants.add(tenant)) {
                throw new IllegalArgumentException("");
            }
        }
        if (tenants.size() > MAX_TENANTS) {
            throw new IllegalArgumentException("");
        }
        return List.copyOf(tenants);
    }

    /** The topic of {@code tenant}'s events. */
    public String topicOf(String tenant) {
        return topic.replace("{tenant}", tenant);
    }

    /** The PUB endpoint of the {@code index}-th tenant. */
    public String endpointOf(int index) {
        return offset(endpoint, index);
    }

    /** The ROUTER endpoint of the {@code index}-th tenant, or null without replay. */
    public String replayEndpointOf(int index) {
        return replayEndpoint.isEmpty() ? null : offset(replayEndpoint, index);
    }

    /**
     * Why these settings cannot be used (one line: what, which values, what is allowed), or null: every tenant's
     * endpoints must be distinct and within the port range.
     */
    public String problem() {
        List<String> all = new ArrayList<>();
        for (int i = 0; i < tenants.size(); i++) {
            String pub = endpointOf(i);
            String replay = replayEndpointOf(i);
            if (pub == null || (!replayEndpoint.isEmpty() && replay == null)) {
                return "kv_events_endpoint " + endpoint + (replayEndpoint.isEmpty() ? "" : " and kv_events_replay_endpoint " + replayEndpoint)
                        + " leave no port for tenant " + tenants.get(i) + " (the " + (i + 1) + "th of kv_events_tenants): the i-th tenant uses "
                        + "the port plus i, at most 65535";
            }
            all.add(pub);
            if (replay != null) {
                all.add(replay);
            }
        }
        if (new LinkedHashSet<>(all).size() != all.size()) {
            return "kv_events_endpoint " + endpoint + " and kv_events_replay_endpoint " + replayEndpoint + " overlap for the "
                    + tenants.size() + " tenants of kv_events_tenants (the i-th tenant uses each port plus i): leave at least "
                    + tenants.size() + " ports between them";
        }
        return null;
    }

    /** {@code endpoint} for the {@code index}-th tenant: its port plus index (tcp), or a suffix (ipc, inproc); null past port 65535. */
    static String offset(String endpoint, int index) {
        if (index == 0) {
            return endpoint;
        }
        Matcher tcp = TCP.matcher(endpoint);
        if (tcp.matches()) {
            int port = Integer.parseInt(tcp.group(2)) + index;
            return port > 65535 ? null : "tcp://" + tcp.group(1) + ":" + port;
        }
        return endpoint + "-" + index;
    }
}
