package io.mcctl.master.etcd;

import java.util.ArrayList;
import java.util.List;

/**
 * Where the etcd cluster is and under which prefix mcctl keeps its keys: {@code etcd://h1:2379,h2:2379[/prefix]},
 * with Mooncake's {@code ;} accepted between endpoints too. The keys of one mcctl cluster (one root, named by the
 * cluster id of its layout record) live under {@code <prefix>/mcctl/<cluster id>/}.
 */
public record EtcdTarget(List<String> endpoints, String prefix) {

    public static final String SCHEME = "etcd://";

    /** Whether {@code text} names etcd rather than a master's host:port. */
    public static boolean names(String text) {
        return text != null && text.startsWith(SCHEME);
    }

    /** @throws IllegalArgumentException one line naming the value and what is allowed */
    public static EtcdTarget parse(String text) {
        String allowed = "allowed is etcd://host:port[,host:port...][/prefix], e.g. etcd://10.0.0.1:2379,10.0.0.2:2379/mooncake";
        if (!names(text)) {
            throw new IllegalArgumentException("invalid etcd address '" + text + "': " + allowed);
        }
        String rest = text.substring(SCHEME.length());
        int slash = rest.indexOf('/');
        String hosts = slash < 0 ? rest : rest.substring(0, slash);
        String prefix = slash < 0 ? "" : rest.substring(slash);
        while (prefix.endsWith("/")) {
            prefix = prefix.substring(0, prefix.length() - 1);
        }
        List<String> endpoints = new ArrayList<>();
        for (String endpoint : hosts.split("[,;]")) {
            String trimmed = endpoint.trim();
            int colon = trimmed.lastIndexOf(':');
            boolean ok = colon > 0 && colon < trimmed.length() - 1;
            if (ok) {
                try {
                    int port = Integer.parseInt(trimmed.substring(colon + 1));
                    ok = port > 0 && port <= 65535;
                } catch (NumberFormatException e) {
                    ok = false;
                }
            }
            if (!ok) {
                throw new IllegalArgumentException("invalid etcd endpoint '" + trimmed + "' in '" + text + "': " + allowed);
            }
            endpoints.add(trimmed);
        }
        return new EtcdTarget(List.copyOf(endpoints), prefix);
    }

    /** The folder of one mcctl cluster's keys, ending in '/'. */
    public String clusterKeys(String clusterId) {
        return prefix + "/mcctl/" + clusterId + "/";
    }

    /** The key the leader holds, with its gRPC address as the value, under its lease. */
    public String leaderKey(String clusterId) {
        return clusterKeys(clusterId) + "leader";
    }

    /** The folder where every master, leader or standby, says where it is and how far it has applied the log. */
    public String membersKey(String clusterId) {
        return clusterKeys(clusterId) + "members/";
    }

    @Override
    public String toString() {
        return SCHEME + String.join(",", endpoints) + prefix;
    }
}
