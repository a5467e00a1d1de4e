package io.mcctl.cli.bench;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.master.proto.v1.TenantStats;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The tier as a cache, from one client: a key trace replayed with a mapping lookup per request and an offload on each
 * miss; offloads of fresh keys with lookups running beside them; lookups alone. An offload is BatchAllocate then
 * Notify of one key with no data written, so the figures are the master's and its evictor's, not the disk's.
 */
public final class CacheBenchmark {

    /** How a replayed trace fared: hits, offloads the master refused, and the mean objects the tier held once warm. */
    public record TraceResult(long requests, long hits, long offloadFailures, double meanResidentObjects) {
        public double hitRatio() {
            return requests == 0 ? 0 : (double) hits / requests;
        }
    }

    /** Fresh-key offloads with lookups beside them: the offloads' rate, the lookups' latencies, what was evicted meanwhile. */
    public record LoadResult(long offloads, double seconds, long offloadFailures, LatencyRecorder lookups, long lookupMisses,
                             long evictedKeys) {
        public double offloadsPerSecond() {
            return offloads / seconds;
        }
    }

    /** Requests between two looks at the tier's resident objects during a replay. */
    static final int RESIDENT_SAMPLE_EVERY = 1000;

    private final MasterClient client;
    private final long objectSize;
    private final long objectSizeMax;

    public CacheBenchmark(MasterClient client, long objectSize) {
        this(client, objectSize, objectSize);
    }

    /** Objects of {@code objectSize} to {@code objectSizeMax} bytes, each key's size fixed by the key (uniform over the range). */
    public CacheBenchmark(MasterClient client, long objectSize, long objectSizeMax) {
        this.client = client;
        this.objectSize = objectSize;
        this.objectSizeMax = Math.max(objectSize, objectSizeMax);
    }

    /** The size of {@code key}'s object: the same on every offload of it. */
    long sizeOf(String key) {
        if (objectSizeMax == objectSize) {
            return objectSize;
        }
        long mixed = key.hashCode() * 0x9E3779B97F4A7C15L;
        return objectSize + Math.floorMod(mixed ^ (mixed >>> 29), objectSizeMax - objectSize + 1);
    }

    /** Called every so many requests of a replay with the number of requests done. */
    @FunctionalInterface
    public interface Progress {
        Progress NONE = done -> { };

        void at(long requestsDone);
    }

    /** One key offloaded (allocated, then notified as written); false when the master refused it. */
    public boolean offload(String tenant, String key) {
        AllocationResult allocated = client.batchAllocate(List.of(key), List.of(tenant), List.of(sizeOf(key)), false).getResults(0);
        if (allocated.getStatus().getError() != ErrorCode.OK) {
            return false;
        }
        return client.notifySuccess(List.of(key), List.of(tenant), List.of(allocated.getDistributedDisk())).getResults(0).getError()
                == ErrorCode.OK;
    }

    /** One mapping lookup: true on a hit, false when the key is not there. */
    public boolean lookup(String tenant, String key) {
        MappingResult result = client.batchGetMapping(List.of(key), List.of(tenant)).getResults(0);
        ErrorCode code = result.getStatus().getError();
        if (code != ErrorCode.OK && code != ErrorCode.OBJECT_NOT_FOUND) {
            throw new IllegalStateException("lookup of " + key + " failed: " + code + " " + result.getStatus().getMessage());
        }
        return code == ErrorCode.OK;
    }

    /**
     * Replays {@code trace} (key ranks) in {@code tenant}: a lookup per request, an offload on each miss. The tenant's
     * resident objects are sampled every {@value #RESIDENT_SAMPLE_EVERY} requests over the second half of the trace.
     */
    public TraceResult replay(String tenant, String keyPrefix, int[] trace) {
        return replay(tenant, keyPrefix, trace, 0, Progress.NONE);
    }

    /** {@link #replay(String, String, int[])}, calling {@code progress} every {@code every} requests (0: never) and at the end. */
    public TraceResult replay(String tenant, String keyPrefix, int[] trace, int every, Progress progress) {
        long hits = 0;
        long failures = 0;
        long residentSum = 0;
        long residentSamples = 0;
        for (int i = 0; i < trace.length; i++) {
            String key = keyPrefix + trace[i];
            if (lookup(tenant, key)) {
                hits++;
            } else if (!offload(tenant, key)) {
                failures++;
            }
            if (i >= trace.length / 2 && i % RESIDENT_SAMPLE_EVERY == 0) {
                residentSum += tenantKeys(client.stats(), tenant);
                residentSamples++;
            }
            if (every > 0 && (i + 1) % every == 0 && i + 1 < trace.length) {
                progress.at(i + 1);
            }
        }
        progress.at(trace.length);
        double meanResident = residentSamples == 0 ? tenantKeys(client.stats(), tenant) : (double) residentSum / residentSamples;
        return new TraceResult(trace.length, hits, failures, meanResident);
    }

    /** Offloads {@code count} fresh keys while another thread looks up {@code probes} round and round until they are done. */
    public LoadResult offloadWithLookups(String tenant, String keyPrefix, int count, String probeTenant, List<String> probes)
            throws Exception {
        long evictedBefore = client.stats().getEvictedKeys();
        AtomicBoolean done = new AtomicBoolean();
        ExecutorService lookups = Executors.newSingleThreadExecutor();
        try {
            LatencyRecorder latencies = new LatencyRecorder();
            Future<Long> misses = lookups.submit(() -> {
                long missed = 0;
                for (int i = 0; i == 0 || !done.get(); i++) { // at least one, however quickly the offloads finish
                    long start = System.nanoTime();
                    boolean hit = lookup(probeTenant, probes.get(i % probes.size()));
                    latencies.record(System.nanoTime() - start);
                    missed += hit ? 0 : 1;
                }
                return missed;
            });
            long failures = 0;
            long start = System.nanoTime();
            try {
                for (int i = 0; i < count; i++) {
                    if (!offload(tenant, keyPrefix + i)) {
                        failures++;
                    }
                }
            } finally {
                done.set(true);
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            long missed = misses.get();
            return new LoadResult(count, seconds, failures, latencies, missed, client.stats().getEvictedKeys() - evictedBefore);
        } finally {
            lookups.shutdownNow();
        }
    }

    /** {@code count} lookups of {@code keys} round and round, nothing else running. */
    public LatencyRecorder lookups(String tenant, List<String> keys, int count) {
        LatencyRecorder latencies = new LatencyRecorder();
        for (int i = 0; i < count; i++) {
            long start = System.nanoTime();
            lookup(tenant, keys.get(i % keys.size()));
            latencies.record(System.nanoTime() - start);
        }
        return latencies;
    }

    /**
     * Removes {@code keys} of {@code tenant} and waits, at most {@code limit}, until no page is in quarantine (the removed
     * keys' read leases have run out) so that what follows starts from a tier without them.
     */
    public void removeAndDrain(String tenant, List<String> keys, Duration limit) throws InterruptedException {
        for (int from = 0; from < keys.size(); from += 1000) {
            List<String> chunk = keys.subList(from, Math.min(keys.size(), from + 1000));
            client.batchRemove(chunk, java.util.Collections.nCopies(chunk.size(), tenant));
        }
        long deadline = System.nanoTime() + limit.toNanos();
        while (client.stats().getQuarantinedPages() > 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("pages still in quarantine " + limit.toSeconds() + " s after removing the benchmark's keys");
            }
            Thread.sleep(50);
        }
    }

    static long tenantKeys(GetStatsResponse stats, String tenant) {
        for (TenantStats t : stats.getTenantStatsList()) {
            if (t.getTenantId().equals(tenant)) {
                return t.getKeys();
            }
        }
        return 0;
    }

    /** {@code count} keys {@code prefix0, prefix1, ...}. */
    public static List<String> keys(String prefix, int count) {
        List<String> keys = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            keys.add(prefix + i);
        }
        return keys;
    }
}
