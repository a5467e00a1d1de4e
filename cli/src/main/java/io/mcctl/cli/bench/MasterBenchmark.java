package io.mcctl.cli.bench;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.AllocationResult;
import io.mcctl.master.proto.v1.BatchAllocateDistributedPageResponse;
import io.mcctl.master.proto.v1.BatchGetDistributedPageMappingResponse;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.MappingResult;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Master throughput as clients see it: client threads each run offload cycles (BatchAllocate then Notify, no
 * data written) and then mapping lookups (BatchGetDistributedPageMapping) over the keys they wrote.
 */
public final class MasterBenchmark {

    /** Figures of one batch size. */
    public record Phase(String name, int threads, int batch, long keys, double seconds, double keysPerSecond, double p50Micros, double p99Micros,
                        long failures) {
    }

    private final MasterClient client;
    private final int threads;
    private final long objectSize;
    private final String runId;

    public MasterBenchmark(MasterClient client, int threads, long objectSize, String runId) {
        this.client = client;
        this.threads = threads;
        this.objectSize = objectSize;
        this.runId = runId;
    }

    /** Offload cycles of {@code batch} keys per call, {@code keysPerThread} keys per thread; returns the keys written per thread. */
    public Phase offload(int batch, long keysPerThread, List<List<String>> written) throws Exception {
        List<LatencyRecorder> recorders = new ArrayList<>();
        List<Callable<Long>> tasks = new ArrayList<>();
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
                        keys.add(runId + "/b" + batch + "/t" + thread + "/" + (done + i));
                    }
                    long start = System.nanoTime();
                    BatchAllocateDistributedPageResponse allocated = client.batchAllocate(keys, tenants, sizes, false);
                    List<String> okKeys = new ArrayList<>(batch);
                    List<DistributedDiskDescriptor> places = new ArrayList<>(batch);
                    for (int i = 0; i < batch; i++) {
                        AllocationResult r = allocated.getResults(i);
                        if (r.getStatus().getError() == ErrorCode.OK) {
                            okKeys.add(keys.get(i));
                            places.add(r.getDistributedDisk());
                        } else {
                            failures++;
                        }
                    }
                    if (!okKeys.isEmpty()) {
                        client.notifySuccess(okKeys, Collections.nCopies(okKeys.size(), "bench"), places);
                    }
                    recorder.record(System.nanoTime() - start);
                    mine.addAll(okKeys);
                }
                return failures;
            });
        }
        return run("offload cycle", batch, (long) threads * keysPerThread, tasks, recorders);
    }

    /** Mapping lookups of {@code batch} keys per call over each thread's keys, {@code rounds} passes. */
    public Phase lookup(int batch, List<List<String>> keysPerThread, int rounds) throws Exception {
        List<LatencyRecorder> recorders = new ArrayList<>();
        List<Callable<Long>> tasks = new ArrayList<>();
        long total = 0;
        for (int t = 0; t < threads; t++) {
            LatencyRecorder recorder = new LatencyRecorder();
            recorders.add(recorder);
            List<String> keys = List.copyOf(keysPerThread.get(t));
            total += (long) rounds * (keys.size() / batch) * batch;
            tasks.add(() -> {
                long failures = 0;
                List<String> tenants = Collections.nCopies(batch, "bench");
                for (int round = 0; round < rounds; round++) {
                    for (int from = 0; from + batch <= keys.size(); from += batch) {
                        long start = System.nanoTime();
                        BatchGetDistributedPageMappingResponse response = client.batchGetMapping(keys.subList(from, from + batch), tenants);
                        recorder.record(System.nanoTime() - start);
                        for (MappingResult r : response.getResultsList()) {
                            if (r.getStatus().getError() != ErrorCode.OK) {
                                failures++;
                            }
                        }
                    }
                }
                return failures;
            });
        }
        return run("mapping lookup", batch, total, tasks, recorders);
    }

    private Phase run(String name, int batch, long keys, List<Callable<Long>> tasks, List<LatencyRecorder> recorders) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            long start = System.nanoTime();
            List<Future<Long>> futures = pool.invokeAll(tasks);
            long failures = 0;
            for (Future<Long> f : futures) {
                failures += f.get();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            LatencyRecorder all = LatencyRecorder.merge(recorders);
            return new Phase(name, threads, batch, keys, seconds, keys / seconds, all.percentileMicros(0.50), all.percentileMicros(0.99), failures);
        } finally {
            pool.shutdownNow();
        }
    }
}
