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
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.BucketFiles;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import java.io.IOException;
import java.net.InetSocketAddress;
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

    /** What a master needs to start. Port 0 picks a free port. */
    public record Options(BucketLayout layout, String fsType, String bindHost, int port, int metricsPort,
                          Duration allocationDeadline, Duration readLease) {
    }

    private final Options options;
    private final PageService pages;
    private final LayoutFile.Record layoutRecord;
    private final BucketFiles.InitResult init;
    private final Server server;
    private final HTTPServer metricsServer;
    private final ScheduledExecutorService reaper;

    private MasterServer(Options options, PageService pages, BucketFiles.InitResult init, Server server, HTTPServer metricsServer,
                         ScheduledExecutorService reaper) {
        this.options = options;
        this.pages = pages;
        this.init = init;
        this.layoutRecord = init.layout();
        this.server = server;
        this.metricsServer = metricsServer;
        this.reaper = reaper;
    }

    public static MasterServer start(Options options) throws IOException {
        BucketFiles.InitResult init = BucketFiles.initialise(options.layout());
        LOG.info("root {}: {} bucket files created, {} extended, {} already in place (cluster {})", options.layout().root(),
                init.created(), init.extended(), init.unchanged(), init.layout().clusterId());
        PageService pages = new PageService(options.layout(), options.allocationDeadline(), options.readLease());
        MasterMetrics metrics = new MasterMetrics(pages);
        MasterGrpcService service = new MasterGrpcService(pages, init.layout(), options.fsType());
        // Handlers never block (no IO, short lock holds), so they run on the transport threads: no hand-off per call.
        Server server = NettyServerBuilder.forAddress(new InetSocketAddress(options.bindHost(), options.port()))
                .directExecutor()
                .addService(ServerInterceptors.intercept(service, new StatusExceptions(), metrics.interceptor()))
                .build();
        try {
            server.start();
        } catch (IOException e) {
            throw new IOException("cannot listen on " + options.bindHost() + ":" + options.port() + " for gRPC: " + rootMessage(e), e);
        }
        HTTPServer metricsServer;
        try {
            metricsServer = HTTPServer.builder().hostname(options.bindHost()).port(options.metricsPort())
                    .registry(metrics.registry()).buildAndStart();
        } catch (IOException e) {
            server.shutdownNow();
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
        return new MasterServer(options, pages, init, server, metricsServer, reaper);
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
    }
}
