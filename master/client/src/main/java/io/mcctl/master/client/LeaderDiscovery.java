package io.mcctl.master.client;

import io.mcctl.master.etcd.EtcdClient;
import io.mcctl.master.etcd.EtcdTarget;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Where the leader of an mcctl cluster is, read from etcd: the value ({@code host:port}) of the key
 * {@code <prefix>/mcctl/<cluster id>/leader} that the leader holds under its lease (docs/ha.md). A client names
 * only the etcd cluster and the prefix; the cluster id is found under the prefix on the first lookup and kept, so
 * a later lookup is one read of one key. A prefix that holds several mcctl clusters is refused with their ids:
 * each root needs a prefix of its own for a client to tell them apart.
 *
 * <p>Thread-safe: the kept key is volatile; the etcd client is thread-safe.
 */
final class LeaderDiscovery implements AutoCloseable {

    private final EtcdTarget target;
    private final EtcdClient etcd;
    private volatile String leaderKey;

    LeaderDiscovery(EtcdTarget target, Duration callTimeout) {
        this.target = target;
        this.etcd = new EtcdClient(target, callTimeout);
    }

    EtcdTarget target() {
        return target;
    }

    /**
     * The leader's address now, or empty while no master holds the key (between a leader's death and its successor's
     * election, or before the first master started).
     *
     * @throws EtcdClient.EtcdUnavailableException etcd did not answer on any endpoint
     * @throws IllegalStateException the prefix holds more than one mcctl cluster
     */
    Optional<String> leader() throws EtcdClient.EtcdUnavailableException {
        String key = leaderKey;
        if (key != null) {
            return etcd.get(key).map(EtcdClient.Entry::value).filter(value -> !value.isEmpty());
        }
        String clusters = target.prefix() + "/mcctl/";
        List<EtcdClient.Entry> leaders = etcd.list(clusters).stream().filter(entry -> isLeaderKey(clusters, entry.key())).toList();
        if (leaders.size() > 1) {
            throw new IllegalStateException("etcd at " + target + " holds the leaders of " + leaders.size() + " mcctl clusters ("
                    + String.join(", ", leaders.stream().map(entry -> clusterOf(clusters, entry.key())).toList())
                    + "): give each root its own prefix (master start --ha etcd://.../PREFIX) and name it in the client's etcd address");
        }
        if (leaders.isEmpty()) {
            return Optional.empty();
        }
        leaderKey = leaders.get(0).key();
        return Optional.of(leaders.get(0).value()).filter(value -> !value.isEmpty());
    }

    /** {@code <clusters><id>/leader} with an id without '/': not a member's key, whose address could end in anything. */
    private static boolean isLeaderKey(String clusters, String key) {
        if (!key.startsWith(clusters) || !key.endsWith("/leader")) {
            return false;
        }
        String id = clusterOf(clusters, key);
        return !id.isEmpty() && id.indexOf('/') < 0;
    }

    private static String clusterOf(String clusters, String key) {
        return key.substring(clusters.length(), key.length() - "/leader".length());
    }

    @Override
    public void close() {
        etcd.close();
    }
}
