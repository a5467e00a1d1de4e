package io.mcctl.storage.mount;

/**
 * The layout a node must match to join a cluster, as the cluster's master reports it (the caller fetches
 * it; this package does not talk to a network).
 */
public record ExpectedLayout(String rootDir, int bucketCount, long pageSize, long bucketSize, String clusterId, String fsType) {
}
