package io.mcctl.master.server;

import io.mcctl.master.dram.Promoter;
import io.mcctl.master.protocol.GrpcServers;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.master.service.eviction.EvictionPolicy;
import io.grpc.ForwardingServerCallListener;
import io.grpc.HandlerRegistry;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.Snapshotter;
import io.mcctl.master.durability.StateCluster;
import io.mcctl.master.durability.StateInUseException;
import io.mcctl.master.durability.StateLock;
import io.mcctl.master.durability.StateRecovery;
import io.mcctl.master.durability.WriteAheadLog;
import io.mcctl.master.security.MasterSecurity;
import io.mcctl.master.protocol.SecurityConfigException;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.BucketFiles;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.mcctl.storage.layout.SpaceBacking;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import java.io.IOException;
import java.io.InputStream;
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
 * A running master: holds its state directory ({@link StateLock}), lays out the root, then serves the page RPCs over gRPC and metrics over HTTP, with a
 * reaper that reclaims expired allocations and releases quarantine.
 */
public final class MasterServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(MasterServer.class);
    private static final long REAP_INTERVAL_MILLIS = 50;
    /** Objects the evictor takes out per pass of the reaper: bounded, so expiry and releases are never held up long. */
    private static final int MAX_EVICTIONS_PER_PASS = 20_000;

    /** The largest request the master reads: room for a full batch of the longest keys. */
    public static final int MAX_REQUEST_BYTES = 64 << 20;

    /**
     * What a master needs to start, each setting named ({@link #builder}) with a default. Port 0 picks a free port.
     * {@code stateDir} null means {@code <root>/master}; {@code snapshotInterval} null means no periodic snapshots.
     */
    public static final class Options {

        /** How long an expired allocation's pages are held past its deadline unless set otherwise. */
        public static final Duration DEFAULT_ALLOCATION_GRACE = PageService.DEFAULT_ALLOCATION_GRACE;

        private final BucketLayout layout;
        private final String fsType;
        private final String bindHost;
        private final int port;
        private final int metricsPort;
        private final Duration allocationDeadline;
        private final Duration readLease;
        private final MasterSettings.Durability durability;
        private final Path stateDir;
        private final Duration snapshotInterval;
        private final int snapshotRetention;
        private final long walSegmentBytes;
        private final java.util.Map<String, String> settings;
        private final Duration allocationGrace;
        private final EvictionPolicy eviction;

        private Options(Builder b) {
            this.layout = java.util.Objects.requireNonNull(b.layout, "layout");
            this.fsType = b.fsType;
            this.bindHost = b.bindHost;
            this.port = b.port;
            this.metricsPort = b.metricsPort;
            this.allocationDeadline = b.allocationDeadline;
            this.readLease = b.readLease;
            this.durability = b.durability;
            this.stateDir = b.stateDir;
            this.snapshotInterval = b.snapshotInterval;
            this.snapshotRetention = b.snapshotRetention;
            this.walSegmentBytes = b.walSegmentBytes;
            this.settings = b.settings;
            this.allocationGrace = b.allocationGrace;
            this.eviction = b.eviction;
        }

        /**
         * Options for a master over {@code layout}: file system type "posix", on 127.0.0.1 with free ports, allocations
         * of 60 s, read leases of 5 s, WAL durability under {@code <root>/master}, snapshots every 10 minutes with two
         * kept, log segments of 64 MiB, no other settings, the default allocation grace, and eviction off (a full tier
         * answers NO_AVAILABLE_HANDLE).
         */
        public static Builder builder(BucketLayout layout) {
            return new Builder(layout);
        }

        /** A builder holding these options, to change some of them. */
        public Builder toBuilder() {
            return new Builder(layout).fsType(fsType).bindHost(bindHost).port(port).metricsPort(metricsPort)
                    .allocationDeadline(allocationDeadline).readLease(readLease).durability(durability).stateDir(stateDir)
                    .snapshotInterval(snapshotInterval).snapshotRetention(snapshotRetention).walSegmentBytes(walSegmentBytes)
                    .settings(settings).allocationGrace(allocationGrace).eviction(eviction);
        }

        /** The master's options, each named; see {@link Options#builder} for the defaults. */
        public static final class Builder {
            private BucketLayout layout;
            private String fsType = "posix";
            private String bindHost = "127.0.0.1";
            private int port;
            private int metricsPort;
            private Duration allocationDeadline = Duration.ofSeconds(60);
            private Duration readLease = Duration.ofSeconds(5);
            private MasterSettings.Durability durability = MasterSettings.Durability.wal;
            private Path stateDir;
            private Duration snapshotInterval = Duration.ofMinutes(10);
            private int snapshotRetention = 2;
            private long walSegmentBytes = 64L << 20;
            private java.util.Map<String, String> settings = java.util.Map.of();
            private Duration allocationGrace = DEFAULT_ALLOCATION_GRACE;
            private EvictionPolicy eviction = EvictionPolicy.OFF;

            private Builder(BucketLayout layout) {
                this.layout = layout;
            }

            public Builder layout(BucketLayout layout) {
                this.layout = layout;
                return this;
            }

            /** The file system type GetStats reports (posix, 3fs, test...). */
            public Builder fsType(String fsType) {
                this.fsType = fsType;
                return this;
            }

            public Builder bindHost(String bindHost) {
                this.bindHost = bindHost;
                return this;
            }

            /** The gRPC port; 0 picks a free one. */
            public Builder port(int port) {
                this.port = port;
                return this;
            }

            /** The metrics (HTTP) port; 0 picks a free one. */
            public Builder metricsPort(int metricsPort) {
                this.metricsPort = metricsPort;
                return this;
            }

            public Builder allocationDeadline(Duration allocationDeadline) {
                this.allocationDeadline = allocationDeadline;
                return this;
            }

            public Builder readLease(Duration readLease) {
                this.readLease = readLease;
                return this;
            }

            public Builder durability(MasterSettings.Durability durability) {
                this.durability = durability;
                return this;
            }

            /** Where the master keeps its state; null: {@code <root>/master}. */
            public Builder stateDir(Path stateDir) {
                this.stateDir = stateDir;
                return this;
            }

            /** How often a snapshot is written; null: never on a timer. */
            public Builder snapshotInterval(Duration snapshotInterval) {
                this.snapshotInterval = snapshotInterval;
                return this;
            }

            public Builder snapshotRetention(int snapshotRetention) {
                this.snapshotRetention = snapshotRetention;
                return this;
            }

            public Builder walSegmentBytes(long walSegmentBytes) {
                this.walSegmentBytes = walSegmentBytes;
                return this;
            }

            /** The settings in force by key (client_ttl, promotion_reads, max_connections...), as {@link MasterSettings} names them. */
            public Builder settings(java.util.Map<String, String> settings) {
                this.settings = settings;
                return this;
            }

            public Builder allocationGrace(Duration allocationGrace) {
                this.allocationGrace = allocationGrace;
                return this;
            }

            public Builder eviction(EvictionPolicy eviction) {
                this.eviction = eviction;
                return this;
            }

            public Options build() {
                return new Options(this);
            }
        }

        public BucketLayout layout() { return layout; }

        public String fsType() { return fsType; }

        public String bindHost() { return bindHost; }

        public int port() { return port; }

        public int metricsPort() { return metricsPort; }

        public Duration allocationDeadline() { return allocationDeadline; }

        public Duration readLease() { return readLease; }

        public MasterSettings.Durability durability() { return durability; }

        public Path stateDir() { return stateDir; }

        public Duration snapshotInterval() { return snapshotInterval; }

        public int snapshotRetention() { return snapshotRetention; }

        public long walSegmentBytes() { return walSegmentBytes; }

        public java.util.Map<String, String> settings() { return settings; }

        public Duration allocationGrace() { return allocationGrace; }

        public EvictionPolicy eviction() { return eviction; }

        public Path resolvedStateDir() {
            return stateDir != null ? stateDir : layout.root().resolve("master");
        }
    }

    private final Options options;
    /** Held from before the state directory is read until the log is closed. */
    private final StateLock owner;
    private final PageService pages;
    private final BucketFileWatch bucketFiles;
    private final LayoutFile.Record layoutRecord;
    private final BucketFiles.InitResult init;
    private final Server server;
    private final TransportLoops loops;
    private final HTTPServer metricsServer;
    private final ScheduledExecutorService reaper;
    private final WriteAheadLog wal;
    private final Snapshotter snapshotter;
    /** Publishes KV events (null when off). */
    private io.mcctl.master.events.KvEventPublisher kvEvents;
    private final StateRecovery.Recovered recovered;
    /** Set once by start, before the master is handed out. */
    private ClientRegistry clients;

    /** The client_ttl in the settings in force (see {@link MasterSettings#CLIENT_TTL}), else Mooncake's 10 s. */
    public static Duration clientTtl(Options options) {
        String text = options.settings().get(MasterSettings.CLIENT_TTL.key());
        return text == null ? ClientRegistry.DEFAULT_TTL : MasterSettings.positive(io.mcctl.storage.config.DurationParser.parse(text));
    }

    /** The bucket_check_interval in the settings in force (see {@link MasterSettings#BUCKET_CHECK_INTERVAL}), else its default. */
    public static Duration bucketCheckInterval(Options options) {
        String text = options.settings().get(MasterSettings.BUCKET_CHECK_INTERVAL.key());
        return MasterSettings.positive(io.mcctl.storage.config.DurationParser.parse(text == null ? MasterSettings.BUCKET_CHECK_INTERVAL.defaultText() : text));
    }

    /**
     * The watch over the bucket files, taking the files the start laid out as the master's (the page service built over
     * {@code pages}' state tells it of every failed write: {@link MasterAssembly}).
     * A bucket file that was missing at the start of a root laid out before has been created empty: said here, with what
     * that costs (the objects committed there read as misses: their checksums fail).
     */
    public static BucketFileWatch watchBucketFiles(PageService pages, BucketFiles.InitResult init) {
        for (int bucket : init.recreated()) {
            long allocated = pages.allocator(bucket).allocatedCount();
            LOG.warn("bucket file {} ({}) was missing at start and has been created empty: {}", bucket, pages.layout().bucketPath(bucket),
                    allocated == 0 ? "nothing was allocated there" : "the objects on its " + allocated + " allocated pages read as misses "
                            + "(their checksums fail) until they are evicted or removed; mcctl fsck --deep names them");
        }
        return new BucketFileWatch(pages);
    }

    /** The promotion settings in force ({@link MasterSettings#PROMOTION_READS}, {@link MasterSettings#PROMOTION_MAX_TASKS}). */
    public static int[] promotionSettings(Options options) {
        String reads = options.settings().get(MasterSettings.PROMOTION_READS.key());
        String max = options.settings().get(MasterSettings.PROMOTION_MAX_TASKS.key());
        return new int[] {reads == null ? Promoter.DEFAULT_ADMISSION_READS : Integer.parseInt(reads.trim()),
                max == null ? io.mcctl.master.service.Promotions.DEFAULT_MAX_TASKS : Integer.parseInt(max.trim())};
    }

    /**
     * The connection limits the settings in force give (see {@link ConnectionLimits}), logged once.
     *
     * @throws IllegalArgumentException (one line) when max_connections leaves too few descriptors for the master's own files
     */
    public static ConnectionLimits connectionLimits(Options options) {
        ConnectionLimits limits = ConnectionLimits.inForce(options.settings());
        LOG.info("connections: at most {} open at once ({}), each closed after {} without a call in progress", limits.maxConnections(),
                limits.derivation(), io.mcctl.storage.config.DurationParser.format(limits.idleTimeout()));
        return limits;
    }

    /** Bounds what {@code service}'s Session streams hold for clients that do not take their answers, as the settings say. */
    public static void limitSessions(MasterGrpcService service, Options options) {
        long[] backlog = MasterSettings.sessionBacklog(options.settings());
        service.limitSessions(backlog[0], backlog[1]);
    }

    /** The node registry and its owner-coupled replicas. */
    public ClientRegistry clients() {
        return clients;
    }

    private MasterServer(Options options, StateLock owner, PageService pages, BucketFileWatch bucketFiles, BucketFiles.InitResult init, Server server,
                         TransportLoops loops, HTTPServer metricsServer, ScheduledExecutorService reaper, WriteAheadLog wal,
                         Snapshotter snapshotter, StateRecovery.Recovered recovered) {
        this.options = options;
        this.owner = owner;
        this.pages = pages;
        this.bucketFiles = bucketFiles;
        this.init = init;
        this.layoutRecord = init.layout();
        this.server = server;
        this.loops = loops;
        this.metricsServer = metricsServer;
        this.reaper = reaper;
        this.wal = wal;
        this.snapshotter = snapshotter;
        this.recovered = recovered;
    }

    public static MasterServer start(Options options) throws IOException {
        return start(options, null, MasterSecurity.plaintext());
    }

    /** Starts with TLS and access control as {@code security} says (docs/security.md). */
    public static MasterServer start(Options options, MasterSecurity security) throws IOException {
        return start(options, null, security);
    }

    /** Starts on {@code lock}'s state directory, in plaintext; see {@link #start(Options, StateLock, MasterSecurity)}. */
    public static MasterServer start(Options options, StateLock lock) throws IOException {
        return start(options, lock, MasterSecurity.plaintext());
    }

    /**
     * Starts a master on {@code lock}'s state directory (null: locks it here). In this order, so that a start that
     * fails for want of the state directory or the port has changed nothing: lock the state directory, bind the gRPC
     * port (calls are answered UNAVAILABLE until recovery is done), check the state's cluster against the root's
     * layout record, lay out the root, recover, open the log.
     *
     * @throws StateInUseException when another master holds the state directory
     */
    public static MasterServer start(Options options, StateLock lock, MasterSecurity security) throws IOException {
        Path stateDir = options.resolvedStateDir();
        ConnectionLimits connections = connectionLimits(options); // a setting that cannot be used changes nothing
        StateLock owner = lock != null ? lock : StateLock.acquire(stateDir);
        Starting starting = new Starting();
        NettyServerBuilder serverBuilder = NettyServerBuilder.forAddress(new InetSocketAddress(options.bindHost(), options.port()));
        try {
            configureSecurity(security, serverBuilder, options.bindHost());
        } catch (IOException e) {
            closeQuietly(owner);
            throw e;
        }
        TransportLoops loops = TransportLoops.start("mcctl-master", MasterSettings.busyPoll(options.settings()), connections);
        Server server = loops.configure(serverBuilder)
                .directExecutor()
                // A batch at its limits (MAX_BATCH keys of KeyRules.MAX_KEY_BYTES) is about 42 MiB: it must reach the
                // handler, which answers per key, instead of failing whole as RESOURCE_EXHAUSTED at the default 4 MiB.
                .maxInboundMessageSize(MAX_REQUEST_BYTES)
                .fallbackHandlerRegistry(starting)
                .build();
        try {
            server.start();
        } catch (IOException e) {
            loops.close();
            closeQuietly(owner);
            throw new IOException("cannot listen on " + options.bindHost() + ":" + options.port() + " for gRPC: " + rootMessage(e), e);
        }
        WriteAheadLog wal = null;
        io.mcctl.master.events.KvEventPublisher kvEvents = null;
        try {
            io.mcctl.master.events.KvEventSettings kvEventSettings = kvEventSettings(options);
            owner.serving(options.bindHost() + ":" + server.getPort());
            BucketLayout layout = LayoutGrowth.inForce(options.layout());
            Path layoutFile = layout.layoutFile();
            StateCluster.require(stateDir, Files.exists(layoutFile) ? LayoutFile.read(layoutFile).clusterId() : null, layoutFile);
            BucketFiles.InitResult init = BucketFiles.initialise(layout);
            LOG.info("root {}: {} bucket files created, {} extended, {} already in place (cluster {})", layout.root(),
                    init.created(), init.extended(), init.unchanged(), init.layout().clusterId());
            StateCluster.require(stateDir, init.layout().clusterId(), layoutFile);
            SpaceBacking.measure(layout).warning(layout).ifPresent(warning -> LOG.warn("free space: {}", warning));
            boolean walMode = options.durability() == MasterSettings.Durability.wal;
            long started = System.nanoTime();
            // Straight into the tables the master serves from: a fresh service for each snapshot recovery tries.
            StateRecovery.Recovered recovered = StateRecovery.recover(stateDir, layout, walMode, init.layout().clusterId(),
                    () -> PageService.builder(layout).allocationDeadline(options.allocationDeadline()).readLease(options.readLease())
                            .allocationGrace(options.allocationGrace())
                            // Keeps the KV event batches replay finds when events are on.
                            .keepKvEventHistory(kvEventSettings == null ? 0 : kvEventSettings.bufferBatches()).build());
            for (String warning : recovered.warnings) {
                LOG.warn("recovery: {}", warning);
            }
            PageService restored = recovered.pages;
            LayoutGrowth.reconcile(restored.layout(), init.layout());
            LOG.info("state {}: {} mappings, {} in flight, {} quarantined ranges from {} and {} log records, in {} ms "
                            + "(snapshot {} ms, log {} ms, bitmaps and tables {} ms)", stateDir,
                    restored.mappingCount(), restored.inFlightCount(), restored.quarantinedRangeCount(),
                    recovered.snapshot == null ? "no snapshot" : recovered.snapshot.getFileName(), recovered.replayed,
                    (System.nanoTime() - started) / 1_000_000, recovered.snapshotMillis, recovered.replayMillis,
                    (System.nanoTime() - started) / 1_000_000 - recovered.snapshotMillis - recovered.replayMillis);
            wal = walMode ? new WriteAheadLog(stateDir, init.layout().clusterId(), recovered.lastSequence, options.walSegmentBytes(),
                    System::currentTimeMillis) : null;
            MasterAssembly.Assembled assembled = MasterAssembly.builder(options).restored(restored).bucketFiles(init).wal(wal)
                    .stateDir(stateDir, recovered.lastSequence).loops(loops).security(security)
                    .kvEvents(kvEventSettings, init.layout().clusterId()).build();
            kvEvents = assembled.kvEvents();
            loops.registerMetrics(assembled.metrics().registry());
            WriteAheadLog log = wal;
            MasterServer master;
            try {
                master = serve(options, security, owner, starting, server, loops, assembled, init, wal, recovered,
                        MasterStatusService.definition(security, () ->
                                io.mcctl.master.proto.v1.GetMasterStatusResponse.newBuilder()
                                        .setRole(io.mcctl.master.proto.v1.GetMasterStatusResponse.Role.SINGLE)
                                        .setAddress(options.bindHost() + ":" + server.getPort()).setClusterId(init.layout().clusterId())
                                        .setAppliedSequence(log == null ? 0 : log.lastDurable()).setLogSequence(log == null ? 0 : log.lastDurable())
                                        .build()));
            } catch (IOException | RuntimeException e) {
                assembled.clients().close();
                throw e;
            }
            master.clients = assembled.clients();
            master.kvEvents = kvEvents;
            return master;
        } catch (IOException | RuntimeException e) {
            server.shutdownNow();
            loops.close();
            if (kvEvents != null) {
                kvEvents.close();
            }
            closeQuietly(wal);
            closeQuietly(owner);
            throw e;
        }
    }

    /**
     * The KV event settings in force (null when off), checked before anything is laid out or recovered: the events are
     * numbered by the write-ahead log, so they need it.
     */
    public static io.mcctl.master.events.KvEventSettings kvEventSettings(Options options) throws IOException {
        io.mcctl.master.events.KvEventSettings settings = io.mcctl.master.events.KvEventSettings.from(options.settings());
        if (settings == null) {
            return null;
        }
        if (options.durability() != MasterSettings.Durability.wal) {
            throw new IOException("kv_events_endpoint " + settings.endpoint() + " needs durability wal (the log numbers the events), not "
                    + options.durability() + ": set durability wal, or leave kv_events_endpoint empty");
        }
        String problem = settings.problem();
        if (problem != null) {
            throw new IOException(problem);
        }
        return settings;
    }

    /** The rest of a start, once the state is recovered and the master assembled: metrics, the reaper, and the service on the bound port. */
    private static MasterServer serve(Options options, MasterSecurity security, StateLock owner, Starting starting, Server server,
                                      TransportLoops loops, MasterAssembly.Assembled assembled, BucketFiles.InitResult init, WriteAheadLog wal,
                                      StateRecovery.Recovered recovered, ServerServiceDefinition status)
            throws IOException {
        HTTPServer metricsServer;
        try {
            HTTPServer.Builder metricsBuilder = HTTPServer.builder().hostname(options.bindHost()).port(options.metricsPort())
                    .registry(assembled.metrics().registry()).defaultHandler(new HealthHandler(assembled.pages()));
            configureSecurity(security, metricsBuilder);
            metricsServer = metricsBuilder.buildAndStart();
        } catch (IOException e) {
            throw new IOException("cannot listen on " + options.bindHost() + ":" + options.metricsPort() + " for metrics: " + rootMessage(e), e);
        }
        starting.ready(assembled.served(), status);
        ScheduledExecutorService reaper = assembled.startHousekeeping();
        return new MasterServer(options, owner, assembled.pages(), assembled.bucketFiles(), init, server, loops, metricsServer, reaper, wal,
                assembled.snapshotter(), recovered);
    }

    /**
     * The page service as it is served: status exceptions sent with their trailers, then access control and metrics
     * around every call.
     */
    public static ServerServiceDefinition intercepted(io.grpc.BindableService service, MasterSecurity security, MasterMetrics metrics) {
        if (service instanceof MasterGrpcService master) {
            master.useMetrics(metrics); // the Session stream counts its requests by kind
        }
        return ServerInterceptors.intercept(service, new StatusExceptions(), security.interceptor(metrics.registry()), metrics.interceptor());
    }

    /**
     * The master's housekeeping thread: the reaper (expired allocations, quarantine releases, eviction, and a check of the
     * bucket files a failed write put in doubt) every {@link #REAP_INTERVAL_MILLIS}, a check of every bucket file every
     * {@code bucketCheckInterval} (both run on the watch's own thread), and a snapshot every {@code snapshotInterval}
     * (null: none). Stopped with shutdownNow.
     */
    public static ScheduledExecutorService housekeeping(PageService pages, BucketFileWatch bucketFiles, Duration bucketCheckInterval,
                                                        Snapshotter snapshotter, Duration snapshotInterval) {
        ScheduledExecutorService reaper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "mcctl-master-reaper");
            thread.setDaemon(true);
            return thread;
        });
        String[] lastReapFailure = {null};
        reaper.scheduleWithFixedDelay(() -> {
            try {
                bucketFiles.checkSuspectedSoon();
                pages.reap();
                pages.evictToWatermark(MAX_EVICTIONS_PER_PASS);
                lastReapFailure[0] = null;
            } catch (io.mcctl.master.service.ChangeLog.Refused e) {
                // The log failed: said once where it failed; the reaper does nothing until the restart.
            } catch (RuntimeException e) {
                // Once per distinct failure, not every REAP_INTERVAL_MILLIS.
                if (!String.valueOf(e).equals(lastReapFailure[0])) {
                    lastReapFailure[0] = String.valueOf(e);
                    LOG.error("reaper failed; will retry", e);
                }
            }
        }, REAP_INTERVAL_MILLIS, REAP_INTERVAL_MILLIS, TimeUnit.MILLISECONDS);
        long checkEvery = bucketCheckInterval.toMillis();
        reaper.scheduleWithFixedDelay(bucketFiles::checkAllSoon, checkEvery, checkEvery, TimeUnit.MILLISECONDS);
        if (snapshotInterval != null) {
            long every = snapshotInterval.toMillis();
            reaper.scheduleWithFixedDelay(() -> {
                try {
                    snapshotter.take();
                } catch (IOException | RuntimeException e) {
                    // One line: a full disk fails every interval, and the writer has already removed its temp file.
                    LOG.error("periodic snapshot failed ({}); will retry at the next interval", rootMessage(e));
                }
            }, every, every, TimeUnit.MILLISECONDS);
        }
        return reaper;
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
                    } catch (io.mcctl.master.service.ChangeLog.Refused e) {
                        // A mutation after the log failed: nothing was changed, and the caller should come back after a restart.
                        StatusRuntimeException refused = WireErrors.changesRefused(e.getMessage());
                        call.close(refused.getStatus(), refused.getTrailers());
                    }
                }
            };
        }
    }

    // ---- transport security: the settings were checked when MasterSecurity was made, so these fail only on a race ----

    private static void configureSecurity(MasterSecurity security, NettyServerBuilder builder, String bindHost) throws IOException {
        try {
            security.configure(builder, bindHost);
        } catch (SecurityConfigException e) {
            throw new IOException(e.getMessage(), e);
        }
    }

    private static void configureSecurity(MasterSecurity security, HTTPServer.Builder builder) throws IOException {
        try {
            security.configure(builder);
        } catch (SecurityConfigException e) {
            throw new IOException(e.getMessage(), e);
        }
    }

    private static void closeQuietly(StateLock lock) {
        try {
            lock.close();
        } catch (IOException e) {
            LOG.warn("releasing the state directory lock after a failed start failed too", e);
        }
    }

    /**
     * A method that answers every call with {@code status} and {@code trailers} without reading the request, marked as
     * not served ({@link WireErrors#NOT_SERVED_KEY}) so that a client may send a mutation again.
     */
    public static ServerMethodDefinition<?, ?> refusing(String methodName, Status status, Metadata refusal) {
        Metadata trailers = new Metadata();
        trailers.merge(refusal);
        trailers.put(WireErrors.NOT_SERVED_KEY, "true");
        MethodDescriptor<InputStream, InputStream> method = MethodDescriptor.<InputStream, InputStream>newBuilder()
                .setType(MethodDescriptor.MethodType.UNKNOWN).setFullMethodName(methodName)
                .setRequestMarshaller(Starting.RAW).setResponseMarshaller(Starting.RAW).build();
        return ServerMethodDefinition.create(method, (call, headers) -> {
            call.close(status, trailers);
            return new ServerCall.Listener<>() {
            };
        });
    }

    /**
     * The service registry while the master starts: until {@link #ready} every call is answered UNAVAILABLE, which
     * clients retry, instead of a refused connection; after it, the master's service. One volatile read per call.
     */
    static final class Starting extends HandlerRegistry {
        /** The service's methods by full name, once it serves; written once. */
        private volatile java.util.Map<String, ServerMethodDefinition<?, ?>> serving;

        void ready(ServerServiceDefinition... services) {
            java.util.Map<String, ServerMethodDefinition<?, ?>> methods = new java.util.HashMap<>();
            for (ServerServiceDefinition service : services) {
                for (ServerMethodDefinition<?, ?> method : service.getMethods()) {
                    methods.put(method.getMethodDescriptor().getFullMethodName(), method);
                }
            }
            serving = methods;
        }

        @Override
        public ServerMethodDefinition<?, ?> lookupMethod(String methodName, String authority) {
            java.util.Map<String, ServerMethodDefinition<?, ?>> methods = serving;
            if (methods != null) {
                return methods.get(methodName);
            }
            return refusing(methodName, Status.UNAVAILABLE.withDescription("the master is starting: it is recovering its state"), new Metadata());
        }

        private static final MethodDescriptor.Marshaller<InputStream> RAW = new MethodDescriptor.Marshaller<>() {
            @Override
            public InputStream stream(InputStream value) {
                return value;
            }

            @Override
            public InputStream parse(InputStream stream) {
                return stream;
            }
        };
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

    /** The watch over the bucket files (their health, as allocation sees it). */
    public BucketFileWatch bucketFiles() {
        return bucketFiles;
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
        GrpcServers.stop(server);
        loops.close();
        reaper.shutdownNow();
        if (kvEvents != null) {
            kvEvents.close();
        }
        if (clients != null) {
            clients.close();
        }
        metricsServer.stop();
        if (wal != null) {
            // No call is served any more: the closes go in the log's last group, so a restart holds nothing for them.
            pages.closeAllReservations();
            try {
                wal.close();
            } catch (IOException e) {
                LOG.warn("closing the write-ahead log failed", e);
            }
        }
        closeQuietly(owner);
    }
}
