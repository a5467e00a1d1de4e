package io.mcctl.master.server;

import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.ServiceMappingTable;
import io.mcctl.master.durability.Snapshotter;
import io.mcctl.master.durability.StateRecovery;
import io.mcctl.master.durability.WriteAheadLog;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.BucketFiles;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running master: lays out the root, then serves the page RPCs over gRPC and metrics over HTTP, with a
 * reaper that reclaims expired allocations and releases quarantine.
 */
public final class MasterServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(MasterServer.class);
    private static final long REAP_INTERVAL_MILLIS = 50;

    /** The largest request the master reads: room for a full batch of the longest keys. */
    public static final int MAX_REQUEST_BYTES = 64 << 20;

    /**
     * What a master needs to start. Port 0 picks a free port. {@code stateDir} null means
     * {@code <root>/master}; {@code snapshotInterval} null means no periodic snapshots.
     */
    public record Options(BucketLayout layout, String fsType, String bindHost, int port, int metricsPort,
                          Duration allocationDeadline, Duration readLease, MasterSettings.Durability durability, Path stateDir,
                          Duration snapshotInterval, int snapshotRetention, long walSegmentBytes, java.util.Map<String, String> settings) {

        /** WAL durability under {@code <root>/master}, snapshots every 10 minutes, two kept. */
        public Options(BucketLayout layout, String fsType, String bindHost, int port, int metricsPort, Duration allocationDeadline,
                       Duration readLease) {
            this(layout, fsType, bindHost, port, metricsPort, allocationDeadline, readLease, MasterSettings.Durability.wal, null,
                    Duration.ofMinutes(10), 2, 64L << 20, java.util.Map.of());
        }

        public Path resolvedStateDir() {
            return stateDir != null ? stateDir : layout.root().resolve("master");
        }
    }

    private final Options options;
    private final PageService pages;
    private final LayoutFile.Record layoutRecord;
    private final BucketFiles.InitResult init;
    private final Server server;
    private final HTTPServer metricsServer;
    private final ScheduledExecutorService reaper;
    private final WriteAheadLog wal;
    private final Snapshotter snapshotter;
    private final StateRecovery.Recovered recovered;

    private MasterServer(Options options, PageService pages, BucketFiles.InitResult init, Server server, HTTPServer metricsServer,
                         ScheduledExecutorService reaper, WriteAheadLog wal, Snapshotter snapshotter, StateRecovery.Recovered recovered) {
        this.options = options;
        this.pages = pages;
        this.init = init;
        this.layoutRecord = init.layout();
        this.server = server;
        this.metricsServer = metricsServer;
        this.reaper = reaper;
        this.wal = wal;
        this.snapshotter = snapshotter;
        this.recovered = recovered;
    }

    public static MasterServer start(Options options) throws IOException {
        BucketFiles.InitResult init = BucketFiles.initialise(options.layout());
        LOG.info("root {}: {} bucket files created, {} extended, {} already in place (cluster {})", options.layout().root(),
                init.created(), init.extended(), init.unchanged(), init.layout().clusterId());
        Path stateDir = options.resolvedStateDir();
        Files.createDirectories(stateDir);
        boolean walMode = options.durability() == MasterSettings.Durability.wal;
        long started = System.nanoTime();
        // Straight into the tables the master serves from: a fresh service for each snapshot recovery tries.
        StateRecovery.Recovered recovered = StateRecovery.recover(stateDir, options.layout(), walMode,
                () -> new ServiceMappingTable(new PageService(options.layout(), options.allocationDeadline(), options.readLease(),
                        MasterSettings.allocationGrace(options.settings()))));
        for (String warning : recovered.warnings) {
            LOG.warn("recovery: {}", warning);
        }
        ServiceMappingTable table = (ServiceMappingTable) recovered.table;
        PageService pages = table.pages();
        try {
            table.restorer().finish(recovered.pending, recovered.quarantine.values());
        } catch (IllegalStateException e) {
            throw new CorruptStateException(stateDir, 0, "recovered state is inconsistent: " + e.getMessage());
        }
        LOG.info("state {}: {} mappings, {} in flight, {} quarantined ranges from {} and {} log records, in {} ms "
                        + "(snapshot {} ms, log {} ms, bitmaps and tables {} ms)", stateDir,
                pages.mappingCount(), pages.inFlightCount(), recovered.quarantine.size(),
                recovered.snapshot == null ? "no snapshot" : recovered.snapshot.getFileName(), recovered.replayed,
                (System.nanoTime() - started) / 1_000_000, recovered.snapshotMillis, recovered.replayMillis,
                (System.nanoTime() - started) / 1_000_000 - recovered.snapshotMillis - recovered.replayMillis);
        WriteAheadLog wal = walMode
                ? new WriteAheadLog(stateDir, recovered.lastSequence, options.walSegmentBytes(), System::currentTimeMillis) : null;
        if (wal != null) {
            pages.setChangeLog(wal.changeLog());
        }
        Snapshotter snapshotter = new Snapshotter(pages, wal, stateDir, init.layout(), options.snapshotRetention(), options.settings(),
                recovered.lastSequence);
        MasterMetrics metrics = new MasterMetrics(pages, wal);
        MasterGrpcService service = new MasterGrpcService(pages, init.layout(), options.fsType(),
                wal == null ? () -> java.util.concurrent.CompletableFuture.completedFuture(null) : wal::whenDurable, snapshotter);
        // Handlers never block (no IO, short lock holds), so they run on the transport threads: no hand-off per call.
        Server server = NettyServerBuilder.forAddress(new InetSocketAddress(options.bindHost(), options.port()))
                .directExecutor()
                // A batch at its limits (MAX_BATCH keys of KeyRules.MAX_KEY_BYTES) is about 42 MiB: it must reach the
                // handler, which answers per key, instead of failing whole as RESOURCE_EXHAUSTED at the default 4 MiB.
                .maxInboundMessageSize(MAX_REQUEST_BYTES)
                .addService(ServerInterceptors.intercept(service, new StatusExceptions(), metrics.interceptor()))
                .build();
        try {
            server.start();
        } catch (IOException e) {
            closeQuietly(wal);
            throw new IOException("cannot listen on " + options.bindHost() + ":" + options.port() + " for gRPC: " + rootMessage(e), e);
        }
        HTTPServer metricsServer;
        try {
            metricsServer = HTTPServer.builder().hostname(options.bindHost()).port(options.metricsPort())
                    .registry(metrics.registry()).buildAndStart();
        } catch (IOException e) {
            server.shutdownNow();
            closeQuietly(wal);
            throw new IOException("cannot listen on " + options.bindHost() + ":" + options.metricsPort() + " for metrics: " + rootMessage(e), e);
        }
        ScheduledExecutorService reaper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "mcctl-master-reaper");
            thread.setDaemon(true);
            return thread;
        });
        reaper.scheduleWithFixedDelay(() -> {
            try {
                pages.reap();
            } catch (RuntimeException e) {
                LOG.error("reaper failed; will retry", e);
            }
        }, REAP_INTERVAL_MILLIS, REAP_INTERVAL_MILLIS, TimeUnit.MILLISECONDS);
        if (options.snapshotInterval() != null) {
            long every = options.snapshotInterval().toMillis();
            reaper.scheduleWithFixedDelay(() -> {
                try {
                    snapshotter.take();
                } catch (IOException | RuntimeException e) {
                    LOG.error("periodic snapshot failed; will retry at the next interval", e);
                }
            }, every, every, TimeUnit.MILLISECONDS);
        }
        return new MasterServer(options, pages, init, server, metricsServer, reaper, wal, snapshotter, recovered);
    }

    /**
     * Sends the status and trailers of a {@link StatusRuntimeException} thrown by a handler (WireErrors), which
     * grpc-java would otherwise turn into UNKNOWN "Application error processing RPC", losing the Mooncake code.
     * Sits inside the metrics interceptor, so such calls are counted as failures with their real code.
     */
    static final class StatusExceptions implements ServerInterceptor {
        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
            return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(next.startCall(call, headers)) {
                @Override
                public void onMessage(Q message) {
                    closeOnStatusException(() -> super.onMessage(message));
                }

                @Override
                public void onHalfClose() {
                    closeOnStatusException(super::onHalfClose);
                }

                private void closeOnStatusException(Runnable step) {
                    try {
                        step.run();
                    } catch (StatusRuntimeException e) {
                        call.close(e.getStatus(), e.getTrailers() == null ? new Metadata() : e.getTrailers());
                    }
                }
            };
        }
    }

    private static void closeQuietly(WriteAheadLog wal) {
        if (wal != null) {
            try {
                wal.close();
            } catch (IOException e) {
                LOG.warn("closing the write-ahead log after a failed start failed too", e);
            }
        }
    }

    private static String rootMessage(Throwable e) {
        Throwable cause = e;
        while (cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
    }

    public int port() {
        return server.getPort();
    }

    public int metricsPort() {
        return metricsServer.getPort();
    }

    public PageService pages() {
        return pages;
    }

    /** Writes a snapshot now. */
    public Snapshotter.Taken snapshot() throws IOException {
        return snapshotter.take();
    }

    /** The log under WAL durability, else null. */
    public WriteAheadLog wal() {
        return wal;
    }

    /** What recovery found at start. */
    public StateRecovery.Recovered recovered() {
        return recovered;
    }

    public LayoutFile.Record layoutRecord() {
        return layoutRecord;
    }

    public BucketFiles.InitResult init() {
        return init;
    }

    public Options options() {
        return options;
    }

    /** Blocks until the server has stopped. */
    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
    }

    @Override
    public void close() {
        server.shutdown();
        try {
            if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
                server.shutdownNow();
                server.awaitTermination(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        }
        reaper.shutdownNow();
        metricsServer.stop();
        if (wal != null) {
            try {
                wal.close();
            } catch (IOException e) {
                LOG.warn("closing the write-ahead log failed", e);
            }
        }
    }
}
