package io.mcctl.cli.bench;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.MappingResult;
import io.mcctl.master.proto.v1.NotifyDistributedDiskSuccessResponse;
import io.mcctl.master.protocol.PackedPlacements;
import io.mcctl.master.protocol.Placement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Master throughput as clients see it: client threads each run offload cycles (BatchAllocate then Notify, no
 * data written) and then mapping lookups (BatchGetDistributedPageMapping) over the keys they wrote, over the
 * client's transport (the Session stream or unary calls). Phases run for a number of keys or for a fixed time;
 * with a CPU counter of the master's process, each phase also says what it cost the master per key.
 */
public final class MasterBenchmark {

    /**
     * Figures of one phase. {@code serverCpuNanos}: CPU the master's process used during it (-1 when unknown);
     * {@code clientCpuNanos}: CPU this process used (the callers, their gRPC client, and whatever else runs here).
     */
    public record Phase(String name, String transport, int threads, int batch, long keys, long calls, double seconds, double keysPerSecond,
                        double p50Micros, double p99Micros, long failures, long serverCpuNanos, long clientCpuNanos,
                        Map<String, Long> serverCpuNanosByThread) {
        public double serverMicrosPerKey() {
            return serverCpuNanos < 0 ? Double.NaN : serverCpuNanos / 1000.0 / keys;
        }

        public double serverMicrosPerCall() {
            return serverCpuNanos < 0 ? Double.NaN : serverCpuNanos / 1000.0 / calls;
        }

        public double clientCores() {
            return clientCpuNanos / 1e9 / seconds;
        }

        public double serverCores() {
            return serverCpuNanos < 0 ? Double.NaN : serverCpuNanos / 1e9 / seconds;
        }

        /** The master's CPU per key of each of its thread groups ({@link ProcessCpu#THREAD_GROUPS}); empty when unknown. */
        public Map<String, Double> serverMicrosPerKeyByThread() {
            Map<String, Double> perKey = new LinkedHashMap<>();
            serverCpuNanosByThread.forEach((group, nanos) -> perKey.put(group, nanos / 1000.0 / keys));
            return perKey;
        }
    }

    /** CPU of the master's process so far in nanoseconds, or -1 when it cannot be read (a master elsewhere). */
    private java.util.function.LongSupplier serverCpu = () -> -1;
    /** CPU of each of the master's thread groups so far in nanoseconds; empty when it cannot be read. */
    private java.util.function.Supplier<Map<String, Long>> serverCpuByThread = Map::of;

    private final MasterClient client;
    private final int threads;
    private final long objectSize;
    private final String runId;
    /** Offload phases run so far: each writes under a prefix of its own, so that a second one offloads new keys too. */
    private final java.util.concurrent.atomic.AtomicInteger offloadPhases = new java.util.concurrent.atomic.AtomicInteger();

    public MasterBenchmark(MasterClient client, int threads, long objectSize, String runId) {
        this.client = client;
        this.threads = threads;
        this.objectSize = objectSize;
        this.runId = runId;
    }

    /** Reads the master's CPU from {@code serverCpu} before and after each phase. */
    /** What each offloaded object's notify attaches (null: nothing), as an engine connector attaches its KV blocks. */
    private io.mcctl.master.proto.v1.KvBlocks kvBlocks;

    /**
     * Attaches engine KV blocks to every object offloaded (one block of 16 tokens, as a connector would), so that a master
     * with KV events on announces each commit.
     */
    public MasterBenchmark withKvBlocks(boolean attach) {
        if (attach) {
            io.mcctl.master.proto.v1.KvBlocks.Builder b = io.mcctl.master.proto.v1.KvBlocks.newBuilder().addBlockHashes(0x1234_5678_9abc_def0L)
                    .setParentBlockHash(42).setBlockSize(16);
            for (int t = 0; t < 16; t++) {
                b.addTokenIds(1000 + t);
            }
            kvBlocks = b.build();
        }
        return this;
    }

    private List<io.mcctl.master.proto.v1.KvBlocks> kvBlocksFor(int keys) {
        return kvBlocks == null ? null : Collections.nCopies(keys, kvBlocks);
    }

    public MasterBenchmark withServerCpu(java.util.function.LongSupplier serverCpu) {
        this.serverCpu = serverCpu;
        return this;
    }

    /** Reads the master's CPU by thread group from {@code byThread} before and after each phase, too. */
    public MasterBenchmark withServerCpuByThread(java.util.function.Supplier<Map<String, Long>> byThread) {
        this.serverCpuByThread = byThread;
        return this;
    }

    /**
     * Offload cycles of {@code batch} keys per call for {@code seconds} on every thread; each thread's list in
     * {@code written} then holds the newest {@code keepPerThread} keys it has committed, over this phase and those
     * before it, for the lookup phases: on a tier that fills, the oldest are the evictor's first victims, so a lookup of
     * them would measure misses.
     */
    public Phase offloadFor(int batch, double seconds, List<List<String>> written, int keepPerThread) throws Exception {
        return offloadFor(batch, seconds, written, keepPerThread, false);
    }

    /**
     * {@link #offloadFor(int, double, List, int)}; with {@code packed}, each allocation is answered packed and each
     * notify sends the placements packed, as the Java writer does.
     */
    public Phase offloadFor(int batch, double seconds, List<List<String>> written, int keepPerThread, boolean packed) throws Exception {
        List<LatencyRecorder> recorders = new ArrayList<>();
        List<Callable<long[]>> tasks = new ArrayList<>();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        String prefix = runId + "/" + client.transport() + "/b" + batch + (packed ? "/packed" : "") + "/p" + offloadPhases.getAndIncrement() + "/";
        for (int t = 0; t < threads; t++) {
            LatencyRecorder recorder = new LatencyRecorder();
            recorders.add(recorder);
            while (written.size() <= t) {
                written.add(new ArrayList<>());
            }
            List<String> mine = written.get(t);
            String threadPrefix = prefix + "t" + t + "/";
            tasks.add(() -> {
                long failures = 0;
                long keys = 0;
                List<String> tenants = Collections.nCopies(batch, "bench");
                List<Long> sizes = Collections.nCopies(batch, objectSize);
                java.util.ArrayDeque<String> newest = new java.util.ArrayDeque<>(mine);
                // At least one batch, however late this thread starts on a busy machine: the lookup phases need keys.
                boolean first = true;
                while (first || System.nanoTime() < end) {
                    first = false;
                    List<String> batchKeys = new ArrayList<>(batch);
                    for (int i = 0; i < batch; i++) {
                        batchKeys.add(threadPrefix + (keys + i));
                    }
                    long start = System.nanoTime();
                    List<String> okKeys = packed ? packedCycle(batchKeys, tenants, sizes) : cycle(batchKeys, tenants, sizes);
                    recorder.record(System.nanoTime() - start);
                    failures += batch - okKeys.size();
                    keys += batch;
                    for (String committed : okKeys) {
                        newest.addLast(committed);
                        if (newest.size() > keepPerThread) {
                            newest.pollFirst();
                        }
                    }
                }
                mine.clear();
                mine.addAll(newest);
                return new long[] {keys, failures};
            });
        }
        return runTimed(packed ? "offload cycle, packed" : "offload cycle", batch, tasks, recorders, 2);
    }

    /**
     * Mapping lookups of {@code batch} keys per call, cycling over each thread's keys, for {@code seconds}; with
     * {@code packed}, answered packed (the placements of a batch in one array), as the Python client asks.
     */
    public Phase lookupFor(int batch, List<List<String>> keysPerThread, double seconds, boolean packed) throws Exception {
        List<LatencyRecorder> recorders = new ArrayList<>();
        List<Callable<long[]>> tasks = new ArrayList<>();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        for (int t = 0; t < threads; t++) {
            LatencyRecorder recorder = new LatencyRecorder();
            recorders.add(recorder);
            List<String> own = keysPerThread.get(t % keysPerThread.size());
            // A thread whose offloads committed fewer keys than a batch looks up every thread's.
            List<String> keys = own.size() >= batch ? List.copyOf(own) : keysPerThread.stream().flatMap(List::stream).toList();
            if (keys.size() < batch) {
                throw new IllegalStateException("the offload phases committed " + keys.size() + " keys, fewer than a lookup batch of " + batch);
            }
            tasks.add(() -> {
                long failures = 0;
                long looked = 0;
                List<String> tenants = Collections.nCopies(batch, "bench");
                int from = 0;
                while (System.nanoTime() < end) {
                    if (from + batch > keys.size()) {
                        from = 0;
                    }
                    long start = System.nanoTime();
                    List<String> asked = keys.subList(from, from + batch);
                    if (packed) {
                        BatchGetDistributedPageMappingResponse response = client.batchGetMappingPacked(asked, tenants);
                        recorder.record(System.nanoTime() - start);
                        PackedPlacements placements = PackedPlacements.of(response.getPlacements(), batch);
                        for (int k = 0; k < batch; k++) {
                            if (placements.error(k) != ErrorCode.OK) {
                                failures++;
                            }
                        }
                    } else {
                        BatchGetDistributedPageMappingResponse response = client.batchGetMapping(asked, tenants);
                        recorder.record(System.nanoTime() - start);
                        for (MappingResult r : response.getResultsList()) {
                            if (r.getStatus().getError() != ErrorCode.OK) {
                                failures++;
                            }
                        }
                    }
                    looked += batch;
                    from += batch;
                }
                return new long[] {looked, failures};
            });
        }
        return runTimed(packed ? "mapping lookup, packed" : "mapping lookup", batch, tasks, recorders, 1);
    }

    /** One offload cycle; the keys committed. */
    private List<String> cycle(List<String> keys, List<String> tenants, List<Long> sizes) {
        BatchAllocateDistributedPageResponse allocated = client.batchAllocate(keys, tenants, sizes, false);
        List<String> okKeys = new ArrayList<>(keys.size());
        List<DistributedDiskDescriptor> places = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            AllocationResult r = allocated.getResults(i);
            if (r.getStatus().getError() == ErrorCode.OK) {
                okKeys.add(keys.get(i));
                places.add(r.getDistributedDisk());
            }
        }
        if (okKeys.isEmpty()) {
            return okKeys;
        }
        NotifyDistributedDiskSuccessResponse notified = client.notifySuccess(okKeys, tenants.subList(0, okKeys.size()), places,
                kvBlocksFor(okKeys.size()));
        List<String> committed = new ArrayList<>(okKeys.size());
        for (int i = 0; i < okKeys.size(); i++) {
            if (notified.getResults(i).getError() == ErrorCode.OK) {
                committed.add(okKeys.get(i));
            }
        }
        return committed;
    }

    /** One offload cycle answered and notified packed; the keys committed. */
    private List<String> packedCycle(List<String> keys, List<String> tenants, List<Long> sizes) {
        BatchAllocateDistributedPageResponse allocated = client.batchAllocatePacked(keys, tenants, sizes, false, false);
        PackedPlacements placements = PackedPlacements.of(allocated.getPlacements(), keys.size());
        List<String> okKeys = new ArrayList<>(keys.size());
        List<Placement> places = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            if (placements.error(i) == ErrorCode.OK) {
                okKeys.add(keys.get(i));
                places.add(placements.placement(i));
            }
        }
        if (okKeys.isEmpty()) {
            return okKeys;
        }
        PackedPlacements toNotify = PackedPlacements.forKeys(okKeys.size());
        for (int k = 0; k < okKeys.size(); k++) {
            toNotify.place(k, places.get(k));
        }
        NotifyDistributedDiskSuccessResponse notified = client.notifySuccessPacked(okKeys, tenants.subList(0, okKeys.size()),
                toNotify.toByteString(), kvBlocksFor(okKeys.size()));
        List<String> committed = new ArrayList<>(okKeys.size());
        for (int k = 0; k < okKeys.size(); k++) {
            if (!notified.containsErrors(k)) {
                committed.add(okKeys.get(k));
            }
        }
        return committed;
    }

    /** Runs the tasks (each returns its keys and failures) and measures wall time, latencies and both sides' CPU. */
    private Phase runTimed(String name, int batch, List<Callable<long[]>> tasks, List<LatencyRecorder> recorders, int callsPerStep)
            throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            long serverBefore = serverCpu.getAsLong();
            Map<String, Long> byThreadBefore = serverCpuByThread.get();
            long clientBefore = ProcessCpu.ofThisProcess();
            long start = System.nanoTime();
            List<Future<long[]>> futures = pool.invokeAll(tasks);
            long keys = 0;
            long failures = 0;
            for (Future<long[]> f : futures) {
                keys += f.get()[0];
                failures += f.get()[1];
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            long clientCpu = ProcessCpu.ofThisProcess() - clientBefore;
            long serverAfter = serverCpu.getAsLong();
            long serverCpuNanos = serverBefore < 0 || serverAfter < 0 ? -1 : serverAfter - serverBefore;
            Map<String, Long> byThread = new LinkedHashMap<>();
            serverCpuByThread.get().forEach((group, nanos) -> byThread.put(group, nanos - byThreadBefore.getOrDefault(group, 0L)));
            LatencyRecorder all = LatencyRecorder.merge(recorders);
            return new Phase(name, client.transport().name().toLowerCase(java.util.Locale.ROOT), threads, batch, keys,
                    (long) all.count() * callsPerStep, seconds, keys / seconds, all.percentileMicros(0.50), all.percentileMicros(0.99), failures,
                    serverCpuNanos, clientCpu, byThread);
        } finally {
            pool.shutdownNow();
        }
    }

    /** Offload cycles of {@code batch} keys per call, {@code keysPerThread} keys per thread; returns the keys written per thread. */
    public Phase offload(int batch, long keysPerThread, List<List<String>> written) throws Exception {
        List<LatencyRecorder> recorders = new ArrayList<>();
        List<Callable<long[]>> tasks = new ArrayList<>();
        String prefix = runId + "/b" + batch + "/p" + offloadPhases.getAndIncrement() + "/";
        for (int t = 0; t < threads; t++) {
            LatencyRecorder recorder = new LatencyRecorder();
            recorders.add(recorder);
            List<String> mine = Collections.synchronizedList(new ArrayList<>());
            written.add(mine);
            int thread = t;
            tasks.add(() -> {
                long failures = 0;
                List<String> tenants = Collections.nCopies(batch, "bench");
                List<Long> sizes = Collections.nCopies(batch, objectSize);
                for (long done = 0; done < keysPerThread; done += batch) {
                    List<String> keys = new ArrayList<>(batch);
                    for (int i = 0; i < batch; i++) {
                        keys.add(prefix + "t" + thread + "/" + (done + i));
                    }
                    long start = System.nanoTime();
                    List<String> okKeys = cycle(keys, tenants, sizes);
                    recorder.record(System.nanoTime() - start);
                    failures += batch - okKeys.size();
                    mine.addAll(okKeys);
                }
                return new long[] {keysPerThread, failures};
            });
        }
        return runTimed("offload cycle", batch, tasks, recorders, 2);
    }
}
