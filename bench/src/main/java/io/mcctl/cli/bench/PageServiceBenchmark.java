package io.mcctl.cli.bench;

import io.mcctl.master.service.PageService;
import io.mcctl.master.protocol.Placement;
import io.mcctl.master.service.Result;
import io.mcctl.master.service.Tenant;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The master's page service on its own, in this JVM: no transport, no log, no other process. What an offload cycle
 * (allocate then notify) and a mapping lookup cost per key in the service's own tables once they hold many
 * mappings, and how much of it the collector takes. The figures are the floor under {@code bench master}'s per-key
 * CPU: whatever the master spends beyond them goes to gRPC, the write-ahead log and waking threads.
 *
 * <p>One thread drives the service in batches, as a master's transport thread does for one connection. A key is a
 * fresh string when the service sees it, as one decoded off the wire is.
 */
public final class PageServiceBenchmark {

    /** Figures of one phase; CPU is this process's (every thread), GC CPU the collector's threads' share of it. */
    public record Phase(String name, long keys, long mappingsAtEnd, double seconds, long cpuNanos, long gcCpuNanos, long failures) {
        public double keysPerSecond() {
            return keys / seconds;
        }

        public double cpuNanosPerKey() {
            return (double) cpuNanos / keys;
        }

        public double gcShare() {
            return cpuNanos == 0 ? 0 : (double) gcCpuNanos / cpuNanos;
        }
    }

    private static final String TENANT = "bench";
    private static final long OBJECT_SIZE = 4096;

    private final PageService pages;
    private final int batch;
    /**
     * The numbers of the committed keys (key {@code n} is {@link #keyOf}): numbers rather than strings, so that what
     * the benchmark itself keeps of millions of keys gives the collector nothing to copy or trace.
     */
    private long[] committed = new long[1024];
    private int committedCount;
    private final SplittableRandom random = new SplittableRandom(42);
    private long nextKey;

    /** The shortest and longest {@code keyLength}: room for the prefix and a digit; a key's bytes stay far under the limit. */
    public static final int MIN_KEY_LENGTH = 8;
    public static final int MAX_KEY_LENGTH = 1024;
    private static final String KEY_PREFIX = "run/t0/";

    /** Characters of each key, its number padded with zeros; 0: the number as it is. */
    private final int keyLength;
    /** By the count of a number's digits: the prefix and the zeros in front of it. */
    private final String[] paddedPrefixes;

    /**
     * A service over 256 buckets of 4 GiB in 64 KiB pages (no files: the service never opens them), driven in batches of
     * {@code batch} keys of {@code keyLength} characters (0: as short as their numbers).
     */
    public PageServiceBenchmark(int batch, int keyLength) {
        if (keyLength != 0 && (keyLength < MIN_KEY_LENGTH || keyLength > MAX_KEY_LENGTH)) {
            throw new IllegalArgumentException("key length " + keyLength + " is not 0 or " + MIN_KEY_LENGTH + " to " + MAX_KEY_LENGTH);
        }
        BucketLayout layout = new BucketLayout(Path.of("/nonexistent/mcctl-bench-pages"), 256, 64 * 1024, 4L << 30);
        this.pages = PageService.builder(layout).allocationDeadline(Duration.ofSeconds(60)).readLease(Duration.ofSeconds(5)).build();
        this.batch = batch;
        this.keyLength = keyLength;
        this.paddedPrefixes = new String[20];
        for (int digits = 0; digits < paddedPrefixes.length; digits++) {
            paddedPrefixes[digits] = KEY_PREFIX + "0".repeat(Math.max(0, keyLength - KEY_PREFIX.length() - digits));
        }
    }

    /** Offload cycles until the table holds {@code mappings} mappings. */
    public Phase fill(long mappings) {
        return measure("offload cycle, filling the table", () -> {
            long keys = 0;
            long failures = 0;
            while (committedCount < mappings) {
                failures += offloadBatch();
                keys += batch;
            }
            return new long[] {keys, failures};
        });
    }

    /** Offload cycles of new keys for {@code seconds}, into the table as it is. */
    public Phase offloadFor(double seconds) {
        return measure("offload cycle", timed(seconds, this::offloadBatch));
    }

    /** Lookups of keys drawn at random from every committed key, for {@code seconds}. */
    public Phase lookupAllFor(double seconds) {
        return measure("lookup, any committed key", timed(seconds, () -> lookupBatch(committedCount)));
    }

    /** Lookups of keys drawn from the first {@code workingSet} committed keys (which stay in the caches), for {@code seconds}. */
    public Phase lookupFewFor(int workingSet, double seconds) {
        return measure("lookup, " + workingSet + " keys", timed(seconds, () -> lookupBatch(Math.min(workingSet, committedCount))));
    }

    public long mappings() {
        return committedCount;
    }

    /** Key {@code n}: a fresh string each time, as one decoded off the wire is. A number too long for the padding makes a longer key. */
    String keyOf(long n) {
        if (keyLength == 0) {
            return KEY_PREFIX + n;
        }
        int digits = 1;
        for (long rest = n / 10; rest > 0; rest /= 10) {
            digits++;
        }
        // One concatenation, as short keys take: the padded prefix for this many digits is made once.
        return paddedPrefixes[Math.min(digits, paddedPrefixes.length - 1)] + n;
    }

    private interface Step {
        /** One batch; its failed keys. */
        long run();
    }

    private interface Work {
        long[] run();
    }

    private Work timed(double seconds, Step step) {
        return () -> {
            long end = System.nanoTime() + (long) (seconds * 1e9);
            long keys = 0;
            long failures = 0;
            while (System.nanoTime() < end) {
                failures += step.run();
                keys += batch;
            }
            return new long[] {keys, failures};
        };
    }

    private long offloadBatch() {
        Tenant.Batch tenants = pages.batchTenants();
        String[] keys = new String[batch];
        long first = nextKey;
        Placement[] placements = new Placement[batch];
        long failures = 0;
        for (int i = 0; i < batch; i++) {
            keys[i] = keyOf(nextKey++);
        }
        List<Result<Placement>> allocated = pages.allocateAll(tenants, Collections.nCopies(batch, TENANT), java.util.Arrays.asList(keys),
                Collections.nCopies(batch, OBJECT_SIZE), false, false);
        for (int i = 0; i < batch; i++) {
            placements[i] = allocated.get(i).isOk() ? allocated.get(i).value() : null;
        }
        tenants = pages.batchTenants();
        for (int i = 0; i < batch; i++) {
            if (placements[i] != null && pages.notifySuccess(tenants.of(TENANT), keys[i], placements[i]).isOk()) {
                if (committedCount == committed.length) {
                    committed = java.util.Arrays.copyOf(committed, committedCount * 2);
                }
                committed[committedCount++] = first + i;
            } else {
                failures++;
            }
        }
        return failures;
    }

    /** One batch of lookups of random committed keys, as the master serves a lookup call: the batch's keys at once. */
    private long lookupBatch(int from) {
        // The batch's key numbers are drawn in a pass of their own: read from the list of committed keys, each is a cache
        // miss in an array as large as the table, and those misses then overlap instead of coming one after another
        // behind each key's making. The master, handed its keys off the wire, has none of them. While every key offloaded
        // was committed (numbers are handed out and committed in order), the n-th committed key is key n: no list is read.
        boolean everyKeyCommitted = committedCount == nextKey;
        long[] numbers = new long[batch];
        for (int i = 0; i < batch; i++) {
            int pick = random.nextInt(from);
            numbers[i] = everyKeyCommitted ? pick : committed[pick];
        }
        List<String> keys = new ArrayList<>(batch);
        for (int i = 0; i < batch; i++) {
            keys.add(keyOf(numbers[i])); // a new string, as off the wire
        }
        long failures = 0;
        for (Result<Placement> result : pages.getMappings(pages.batchTenants(), Collections.nCopies(batch, TENANT), keys)) {
            if (!result.isOk()) {
                failures++;
            }
        }
        return failures;
    }

    private Phase measure(String name, Work work) {
        long cpuBefore = ProcessCpu.ofThisProcess();
        long gcBefore = collectorCpuNanos();
        long start = System.nanoTime();
        long[] done = work.run();
        double seconds = (System.nanoTime() - start) / 1e9;
        long cpu = ProcessCpu.ofThisProcess() - cpuBefore;
        long gc = collectorCpuNanos() - gcBefore;
        return new Phase(name, done[0], committedCount, seconds, cpu, Math.max(0, gc), done[1]);
    }

    /**
     * CPU so far of this JVM's collector threads (HotSpot names them "GC Thread#n", "G1 Refine#n", "G1 Conc#n", "G1 Main
     * Marker", "G1 Service", ...), from /proc/self/task; -1 when /proc cannot be read. The VM thread, which also runs
     * parts of each pause, is not counted: the figure is a lower bound.
     */
    static long collectorCpuNanos() {
        long nanos = 0;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path task : tasks) {
                String comm;
                String stat;
                try {
                    comm = Files.readString(task.resolve("comm")).strip();
                    stat = Files.readString(task.resolve("stat"));
                } catch (IOException gone) {
                    continue; // the thread ended meanwhile
                }
                if (!isCollector(comm)) {
                    continue;
                }
                nanos += ProcessCpu.ofStat(stat);
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return nanos;
    }

    static boolean isCollector(String threadName) {
        return threadName.startsWith("GC Thread") || threadName.startsWith("G1 ") || threadName.startsWith("ZWorker")
                || threadName.startsWith("ZDriver");
    }
}
