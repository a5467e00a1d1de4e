package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.CacheBenchmark;
import io.mcctl.cli.bench.ExactLru;
import io.mcctl.cli.bench.LatencyRecorder;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.bench.TierFragmentation;
import io.mcctl.cli.bench.ZipfTrace;
import io.mcctl.cli.util.FileTrees;
import io.mcctl.cli.util.Rounding;
import io.mcctl.cli.util.SizeArguments;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.master.proto.v1.GetStatsResponse;
import io.mcctl.master.server.MasterServer;
import io.mcctl.master.server.MasterSettings;
import io.mcctl.master.service.eviction.EvictionPolicy;
import io.mcctl.storage.config.DurationParser;
import io.mcctl.storage.config.SizeParser;
import io.mcctl.storage.layout.BucketLayout;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl bench cache}: the evicting tier's hit ratio against exact LRU, and what eviction costs offloads and lookups. */
@Command(name = "cache", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Replay a trace of keys drawn from a Zipf distribution over a key space three times the tier's capacity,",
                "a mapping lookup per request and an offload (BatchAllocate + Notify, no data) on each miss, against an",
                "evicting master; replay the same trace through an exact LRU cache of the same capacity in objects; report",
                "both hit ratios. In the same run: offloads of fresh keys into the empty tier and into the full tier (the",
                "evictor at work), with lookups beside them, and lookups alone. One client thread throughout, so the master",
                "sees the trace in the model's order.",
                "The embedded master is small so that it fills at once: --buckets x --bucket-size, --page-size pages, the",
                "eviction watermarks given (default: the master's), --durability, on a temporary root; one fresh master per --zipf exponent."})
public final class BenchCacheCommand implements Callable<Integer> {

    static final String TRACE_TENANT = "bench-trace";
    static final String LOAD_TENANT = "bench-load";
    static final String PROBE_TENANT = "bench-probe";

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--master", paramLabel = "HOST:PORT",
            description = "Benchmark this running, evicting master (best empty; the benchmark's keys are removed after) instead of embedded ones.")
    String master;

    @Option(names = "--zipf", paramLabel = "S", split = ",", defaultValue = "0.8,1.1",
            description = "Zipf exponents, one run each, above 0 and at most 3 (default: ${DEFAULT-VALUE}).")
    List<Double> exponents;

    @Option(names = "--requests", paramLabel = "N", defaultValue = "50000", description = "Requests of each trace (default: ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--object-size", paramLabel = "SIZE", defaultValue = "16KiB", description = "Bytes of each object (default: ${DEFAULT-VALUE}).")
    String objectSize;

    @Option(names = "--object-size-max", paramLabel = "SIZE",
            description = "Largest object: each key's size is drawn once, uniformly from --object-size to this (default: --object-size, all alike).")
    String objectSizeMax;

    @Option(names = "--fragmentation-every", paramLabel = "N", defaultValue = "0",
            description = "Sample the tier's fragmentation score (from every bucket's bitmap) every N requests of each trace and at its end "
                    + "(default: ${DEFAULT-VALUE}, a tenth of --requests).")
    int fragmentationEvery;

    @Option(names = "--buckets", paramLabel = "N", defaultValue = "8", description = "Buckets of the embedded master (default: ${DEFAULT-VALUE}).")
    int buckets;

    @Option(names = "--bucket-size", paramLabel = "SIZE", defaultValue = "4MiB",
            description = "Bucket size of the embedded master (default: ${DEFAULT-VALUE}).")
    String bucketSize;

    @Option(names = "--page-size", paramLabel = "SIZE", defaultValue = "4KiB", description = "Page size of the embedded master (default: ${DEFAULT-VALUE}).")
    String pageSize;

    @Option(names = "--read-lease", paramLabel = "DURATION", defaultValue = "5s",
            description = "Read lease of the embedded master: an evicted object's pages wait this long in quarantine (default: ${DEFAULT-VALUE}).")
    String readLease;

    @Option(names = "--durability", paramLabel = "MODE", defaultValue = "wal",
            description = "Durability of the embedded master: ${COMPLETION-CANDIDATES}; wal fsyncs every change, evictions included (default: ${DEFAULT-VALUE}).")
    MasterSettings.Durability durability;

    @Option(names = "--eviction-high-watermark", paramLabel = "FRACTION",
            description = "Used share of all pages above which the embedded master's evictor starts (default: the master's, 0.90).")
    Double highWatermarkOption;

    @Option(names = "--eviction-low-watermark", paramLabel = "FRACTION",
            description = "Used share of all pages the embedded master's evictor brings the tier down to (default: the master's, 0.70).")
    Double lowWatermarkOption;

    @Option(names = "--lookups", paramLabel = "N", defaultValue = "20000",
            description = "Lookups of the lookups-alone phase (default: ${DEFAULT-VALUE}).")
    int idleLookups;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "1", description = "Seed of the traces (default: ${DEFAULT-VALUE}).")
    long seed;

    @Override
    public Integer call() throws Exception {
        long object = SizeArguments.positive("--object-size", objectSize);
        long objectMax = objectSizeMax == null ? object : SizeArguments.positive("--object-size-max", objectSizeMax);
        if (objectMax < object) {
            throw new CliException(ExitCodes.USAGE, "invalid --object-size-max " + objectSizeMax + ": allowed is at least --object-size " + objectSize);
        }
        if (fragmentationEvery < 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --fragmentation-every " + fragmentationEvery + ": allowed is 0 (a tenth of --requests) or more");
        }
        Duration lease = duration("--read-lease", readLease);
        double highWatermark = highWatermarkOption != null ? highWatermarkOption
                : Double.parseDouble(MasterSettings.EVICTION_HIGH_WATERMARK.defaultText());
        double lowWatermark = lowWatermarkOption != null ? lowWatermarkOption
                : Double.parseDouble(MasterSettings.EVICTION_LOW_WATERMARK.defaultText());
        if (!(highWatermark > 0 && highWatermark <= 1)) {
            throw new CliException(ExitCodes.USAGE, "invalid --eviction-high-watermark " + highWatermark + ": allowed is above 0 and at most 1");
        }
        if (!(lowWatermark > 0 && lowWatermark <= highWatermark)) {
            throw new CliException(ExitCodes.USAGE, "invalid --eviction-low-watermark " + lowWatermark
                    + ": allowed is above 0 and at most --eviction-high-watermark " + highWatermark);
        }
        for (double s : exponents) {
            if (!(s > 0 && s <= 3)) {
                throw new CliException(ExitCodes.USAGE, "invalid --zipf " + s + ": allowed is above 0 and at most 3");
            }
        }
        if (requests < 1) {
            throw new CliException(ExitCodes.USAGE, "invalid --requests " + requests + ": allowed is 1 or more");
        }
        if (idleLookups < 1) {
            throw new CliException(ExitCodes.USAGE, "invalid --lookups " + idleLookups + ": allowed is 1 or more");
        }
        BucketLayout layout = null;
        if (master == null) {
            if (buckets < 1 || buckets > 4096) {
                throw new CliException(ExitCodes.USAGE, "invalid --buckets " + buckets + ": allowed is 1 to 4096");
            }
            try {
                layout = new BucketLayout(Path.of("/"), buckets, SizeArguments.positive("--page-size", pageSize), SizeArguments.positive("--bucket-size", bucketSize));
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCodes.USAGE, "invalid tier: " + e.getMessage());
            }
            if (layout.pagesPerBucket() < layout.pagesFor(objectMax)) {
                throw new CliException(ExitCodes.USAGE, "invalid --object-size" + (objectMax > object ? "-max " + objectSizeMax : " " + objectSize)
                        + ": allowed is at most --bucket-size " + bucketSize);
            }
        }
        List<Map<String, Object>> runs = new ArrayList<>();
        Map<String, Object> tier = null;
        for (double s : exponents) {
            Path root = null;
            MasterServer embedded = null;
            String target;
            if (master != null) {
                target = MasterClient.checkTarget(master);
            } else {
                root = Files.createTempDirectory("mcctl-bench-cache");
                embedded = MasterServer.start(MasterServer.Options.builder(new BucketLayout(root, layout.bucketCount(), layout.pageSize(),
                        layout.bucketSize()))
                        .readLease(lease).durability(durability).snapshotInterval(null)
                        .eviction(new EvictionPolicy(true, highWatermark, lowWatermark)).build());
                target = "127.0.0.1:" + embedded.port();
            }
            try (MasterClient client = new MasterClient(target, Duration.ofSeconds(30))) {
                GetLayoutResponse geometry = client.layout();
                GetStatsResponse before = client.stats();
                if (!before.getEviction()) {
                    throw new CliException(ExitCodes.USAGE, "the master at " + target + " does not evict (eviction false): a cache benchmark needs it on");
                }
                // Objects of a range of sizes: the tier holds about as many as of the mean size, in pages.
                long meanObject = (object + objectMax) / 2;
                long pagesPerObject = (meanObject + geometry.getPageSize() - 1) / geometry.getPageSize();
                long perBucket = geometry.getBucketSize() / geometry.getPageSize() / pagesPerObject;
                int capacity = (int) Math.min(Integer.MAX_VALUE / 4, perBucket * geometry.getBucketCount());
                if (capacity < 10) {
                    throw new CliException(ExitCodes.USAGE, "the tier holds " + capacity + " objects of " + objectSize + ": allowed is at least 10");
                }
                tier = tierReport(geometry, before, object, capacity, lease, target);
                tier.put("object_size_max", objectMax);
                runs.add(run(client, s, capacity, object, objectMax, lease));
            } finally {
                if (embedded != null) {
                    embedded.close();
                }
                if (root != null) {
                    FileTrees.deleteTree(root);
                }
            }
        }
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("benchmark", "cache");
        report.put("machine", MachineInfo.describe());
        report.put("tier", tier);
        report.put("runs", runs);
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(report));
        } else {
            out.println(String.format(Locale.ROOT, "tier: %s, %d objects of %s (key space %d), %d requests per trace, read lease %s",
                    tier.get("master"), tier.get("capacity_objects"), SizeParser.format(object), tier.get("key_space"), requests,
                    DurationParser.format(lease)));
            Table table = new Table("ZIPF", "TIER HIT", "LRU HIT", "TIER/LRU", "LRU@RESIDENT", "TIER/LRU@RESIDENT", "OFFLOAD/S EMPTY", "FULL", "FULL/EMPTY",
                    "LOOKUP p99 us IDLE", "EVICTING", "EVICTING/IDLE");
            for (Map<String, Object> r : runs) {
                table.row(r.get("zipf"), r.get("tier_hit_ratio"), r.get("lru_hit_ratio"), r.get("hit_ratio_over_lru"), r.get("lru_at_resident_hit_ratio"),
                        r.get("hit_ratio_over_lru_at_resident"), r.get("offload_empty_per_second"), r.get("offload_full_per_second"),
                        r.get("offload_full_over_empty"), r.get("lookup_idle_p99_us"), r.get("lookup_evicting_p99_us"), r.get("lookup_evicting_p99_over_idle"));
            }
            out.print(table.render());
            for (Map<String, Object> r : runs) {
                @SuppressWarnings("unchecked")
                Map<String, Object> end = (Map<String, Object>) r.get("fragmentation_end");
                out.println(String.format(Locale.ROOT, "zipf %s: fragmentation %s at the end (buckets: mean %s, worst %s), used %s, "
                                + "longest free run %s to %s pages; %s of the trace's offloads refused", r.get("zipf"), end.get("fragmentation_score"),
                        end.get("bucket_score_mean"), end.get("bucket_score_worst"), end.get("used_share"), end.get("largest_free_run_pages_min"),
                        end.get("largest_free_run_pages_max"), r.get("trace_offload_failures")));
            }
        }
        out.flush();
        return ExitCodes.OK;
    }

    /**
     * One exponent: the probes looked up alone, and fresh-key offloads into the empty tier with lookups of the probes
     * beside them (after a warm-up pass of the same); all of that removed again; the trace; then fresh-key offloads into the now full tier with lookups
     * of the trace's hottest keys beside them.
     */
    private Map<String, Object> run(MasterClient client, double exponent, int capacity, long object, long objectMax, Duration lease)
            throws Exception {
        CacheBenchmark bench = new CacheBenchmark(client, object, objectMax);
        String run = UUID.randomUUID().toString().substring(0, 8) + "/";
        Duration drainLimit = lease.plus(MasterServer.Options.DEFAULT_ALLOCATION_GRACE).plusSeconds(30);
        int fresh = capacity / 2; // with the probes, at most 0.6 of the tier: under the low watermark, so nothing is evicted
        LatencyRecorder idle = null;
        CacheBenchmark.LoadResult empty = null;
        // Twice: the first pass only warms up the client, gRPC and the master (compiled code), and is thrown away.
        for (String pass : List.of("warm", "empty")) {
            List<String> probes = CacheBenchmark.keys(run + pass + "-probe", Math.max(1, Math.min(100, capacity / 10)));
            for (String probe : probes) {
                bench.offload(PROBE_TENANT, probe);
            }
            idle = bench.lookups(PROBE_TENANT, probes, idleLookups);
            empty = bench.offloadWithLookups(LOAD_TENANT, run + pass, fresh, PROBE_TENANT, probes);
            bench.removeAndDrain(PROBE_TENANT, probes, drainLimit);
            bench.removeAndDrain(LOAD_TENANT, CacheBenchmark.keys(run + pass, fresh), drainLimit);
        }

        int keySpace = 3 * capacity;
        int[] trace = ZipfTrace.draw(keySpace, exponent, requests, seed);
        String tracePrefix = run + "k";
        // How fragmentation evolves as eviction picks whole objects out of the buckets, request after request.
        List<Map<String, Object>> fragmentation = new ArrayList<>();
        PrintWriter progress = spec.commandLine().getOut();
        CacheBenchmark.TraceResult replay = bench.replay(TRACE_TENANT, tracePrefix, trace,
                fragmentationEvery > 0 ? fragmentationEvery : Math.max(1, requests / 10), done -> {
                    TierFragmentation sample = TierFragmentation.sample(client, done);
                    fragmentation.add(sample.json());
                    if (!output.json()) {
                        progress.println(String.format(Locale.ROOT, "zipf %s, request %d: fragmentation %.4f (buckets: mean %.4f, worst %.4f), used %.3f, "
                                        + "longest free run %d to %d pages", exponent, done, sample.score(), sample.meanBucketScore(),
                                sample.worstBucketScore(), sample.usedShare(), sample.smallestLargestFreeRun(), sample.largestFreeRun()));
                        progress.flush();
                    }
                });
        long lruHits = ExactLru.hits(trace, capacity);
        int resident = (int) Math.max(1, Math.round(replay.meanResidentObjects()));
        long lruAtResidentHits = ExactLru.hits(trace, resident);

        List<String> hottest = CacheBenchmark.keys(tracePrefix, Math.min(100, keySpace));
        CacheBenchmark.LoadResult full = bench.offloadWithLookups(LOAD_TENANT, run + "full", fresh, TRACE_TENANT, hottest);
        if (master != null) {
            bench.removeAndDrain(TRACE_TENANT, CacheBenchmark.keys(tracePrefix, keySpace), drainLimit);
            bench.removeAndDrain(LOAD_TENANT, CacheBenchmark.keys(run + "full", fresh), drainLimit);
        }

        Map<String, Object> row = new LinkedHashMap<>();
        row.put("zipf", exponent);
        row.put("requests", replay.requests());
        row.put("key_space", keySpace);
        row.put("tier_hits", replay.hits());
        row.put("tier_hit_ratio", Rounding.round(replay.hitRatio(), 4));
        row.put("lru_hits", lruHits);
        row.put("lru_hit_ratio", Rounding.round((double) lruHits / requests, 4));
        row.put("hit_ratio_over_lru", lruHits == 0 ? null : Rounding.round((double) replay.hits() / lruHits, 4));
        row.put("mean_resident_objects", Math.round(replay.meanResidentObjects()));
        row.put("lru_at_resident_hit_ratio", Rounding.round((double) lruAtResidentHits / requests, 4));
        row.put("hit_ratio_over_lru_at_resident", lruAtResidentHits == 0 ? null : Rounding.round((double) replay.hits() / lruAtResidentHits, 4));
        row.put("trace_offload_failures", replay.offloadFailures());
        row.put("fragmentation", fragmentation);
        row.put("fragmentation_end", fragmentation.get(fragmentation.size() - 1));
        row.put("fresh_offloads", fresh);
        row.put("offload_empty_per_second", Math.round(empty.offloadsPerSecond()));
        row.put("offload_full_per_second", Math.round(full.offloadsPerSecond()));
        row.put("offload_full_over_empty", Rounding.round(full.offloadsPerSecond() / empty.offloadsPerSecond(), 4));
        row.put("offload_failures_empty", empty.offloadFailures());
        row.put("offload_failures_full", full.offloadFailures());
        row.put("evicted_during_full_offloads", full.evictedKeys());
        row.put("lookup_idle_p50_us", Rounding.round(idle.percentileMicros(0.5), 2));
        row.put("lookup_idle_p99_us", Rounding.round(idle.percentileMicros(0.99), 2));
        row.put("lookup_offloading_empty_p99_us", Rounding.round(empty.lookups().percentileMicros(0.99), 2));
        row.put("lookup_evicting_p50_us", Rounding.round(full.lookups().percentileMicros(0.5), 2));
        row.put("lookup_evicting_p99_us", Rounding.round(full.lookups().percentileMicros(0.99), 2));
        row.put("lookups_evicting", full.lookups().count());
        row.put("lookup_misses_evicting", full.lookupMisses());
        row.put("lookup_evicting_p99_over_idle", Rounding.round(full.lookups().percentileMicros(0.99) / idle.percentileMicros(0.99), 4));
        row.put("lookup_evicting_p99_over_offloading_empty",
                Rounding.round(full.lookups().percentileMicros(0.99) / empty.lookups().percentileMicros(0.99), 4));
        return row;
    }

    private Map<String, Object> tierReport(GetLayoutResponse geometry, GetStatsResponse stats, long object, int capacity, Duration lease,
                                           String target) {
        Map<String, Object> tier = new LinkedHashMap<>();
        tier.put("master", master != null ? target : "embedded (" + geometry.getBucketCount() + " x " + SizeParser.format(geometry.getBucketSize())
                + " buckets, " + SizeParser.format(geometry.getPageSize()) + " pages, " + durability + " durability, temporary root)");
        tier.put("buckets", geometry.getBucketCount());
        tier.put("bucket_size", geometry.getBucketSize());
        tier.put("page_size", geometry.getPageSize());
        tier.put("object_size", object);
        tier.put("capacity_objects", capacity);
        tier.put("key_space", 3 * capacity);
        tier.put("requests", requests);
        tier.put("seed", seed);
        tier.put("eviction_high_watermark", stats.getEvictionHighWatermark());
        tier.put("eviction_low_watermark", stats.getEvictionLowWatermark());
        tier.put("read_lease_ms", master != null ? null : lease.toMillis());
        return tier;
    }

    private static Duration duration(String option, String text) {
        try {
            return DurationParser.parse(text);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid " + option + " '" + text + "': allowed is " + DurationParser.ALLOWED);
        }
    }
}
