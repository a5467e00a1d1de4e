package io.mcctl.master.client;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/** Client-side metrics of the data path, with the design RFC's names. */
public final class ClientMetrics {

    private final PrometheusRegistry registry;
    final Counter reads;
    final Histogram readLatency;
    final Counter pagesWritten;
    final Counter leaksPrevented;
    final Counter checksumFailures;
    final Counter memoryReads;
    final Counter memoryFallbacks;
    final Counter staleFileRewrites;

    public ClientMetrics(PrometheusRegistry registry) {
        this.registry = registry;
        // No exemplars on the per-object metrics: without tracing they only cost the read path a clock sample.
        reads = Counter.builder().name("mooncake_client_distributed_disk_reads_total")
                .help("Objects read from bucket files by direct pread").withoutExemplars().register(registry);
        readLatency = Histogram.builder().name("mooncake_client_distributed_disk_read_latency_seconds")
                .help("Time to pread and check one object").classicOnly().withoutExemplars().register(registry);
        pagesWritten = Counter.builder().name("mooncake_dsb_batch_offload_pages_written_total")
                .help("Pages of objects written and committed by offload").register(registry);
        leaksPrevented = Counter.builder().name("mooncake_dsb_batch_offload_page_leaks_prevented_total")
                .help("Allocations freed at once because their write failed").register(registry);
        checksumFailures = Counter.builder().name("mcctl_client_checksum_failures_total")
                .help("Objects whose bytes failed their CRC32C on read").register(registry);
        memoryReads = Counter.builder().name("mcctl_client_memory_reads_total")
                .help("Objects read from a MEMORY replica in a node's DRAM segment").withoutExemplars().register(registry);
        memoryFallbacks = Counter.builder().name("mcctl_client_memory_fallbacks_total")
                .help("Objects with MEMORY replicas none of whose nodes could serve them: read by pread instead").register(registry);
        staleFileRewrites = Counter.builder().name("mcctl_client_stale_bucket_file_rewrites_total")
                .help("Objects written again before their notify because their bucket file was replaced under the writer's open file")
                .register(registry);
    }

    public ClientMetrics() {
        this(new PrometheusRegistry());
    }

    public PrometheusRegistry registry() {
        return registry;
    }

    public long readsTotal() { return (long) reads.get(); }

    public long pagesWrittenTotal() { return (long) pagesWritten.get(); }

    public long leaksPreventedTotal() { return (long) leaksPrevented.get(); }

    public long checksumFailuresTotal() { return (long) checksumFailures.get(); }

    public long memoryReadsTotal() { return (long) memoryReads.get(); }

    public long memoryFallbacksTotal() { return (long) memoryFallbacks.get(); }

    public long staleFileRewritesTotal() { return (long) staleFileRewrites.get(); }
}
