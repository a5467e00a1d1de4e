package io.mcctl.master.ha;

import io.mcctl.master.etcd.EtcdClient;
import io.mcctl.master.etcd.EtcdTarget;
import io.mcctl.master.etcd.LeaderRedirect;
import io.mcctl.master.etcd.MemberStatus;

import io.grpc.HandlerRegistry;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.mcctl.master.durability.CorruptStateException;
import io.mcctl.master.durability.Snapshotter;
import io.mcctl.master.durability.StateCluster;
import io.mcctl.master.durability.StateLock;
import io.mcctl.master.durability.WalSegmentHeader;
import io.mcctl.master.durability.WriteAheadLog;
import io.mcctl.master.proto.v1.GetMasterStatusResponse;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.protocol.GrpcServers;
import io.mcctl.master.security.MasterSecurity;
import io.mcctl.master.protocol.SecurityConfigException;
import io.mcctl.master.server.ClientRegistry;
import io.mcctl.master.server.LayoutGrowth;
import io.mcctl.master.server.MasterAssembly;
import io.mcctl.master.server.MasterMetrics;
import io.mcctl.master.server.MasterServer;
import io.mcctl.master.server.MasterStatusService;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.BucketFiles;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.LayoutFile;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A master under high availability ({@code mcctl master start --ha etcd://...}, docs/ha.md). It binds its gRPC port
 * once and then moves between roles on one thread of its own:
 *
 * <ul>
 * <li><b>standby</b>: follows the state directory ({@link LogFollower}), refuses page calls with the leader's address
 *     ({@link LeaderRedirect}), campaigns for the leader key under its etcd lease;</li>
 * <li><b>leader</b>: having won, reads the log to its end, writes a new segment whose header names its epoch and the
 *     fence (the last record of the older epoch it applied), and serves; every answer that a change is durable is
 *     sent only while its lease is valid ({@link LeaderLease#valid}), checked after the fsync;</li>
 * <li><b>deposed</b>: its lease lapsed; it refuses every call with the reason at once, drops its state (which may hold
 *     changes past a newer leader's fence) and follows the log again from the newest snapshot; it is a standby again
 *     once etcd has granted it a new lease, and keeps refusing with the reason until then.</li>
 * </ul>
 *
 * <p>Every master holds the state directory's lock shared for its whole life ({@link StateLock#acquireShared}): a
 * master without {@code --ha} cannot start beside them, while the lock never stands in the way of a fail-over.
 *
 * <p>Thread-safety: the role thread alone changes the role and the term; the fields other threads read (role, term,
 * positions, the leader seen) are volatile and each is read once per use.
 */
public final class HaMaster implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(HaMaster.class);
    private static final long FOLLOW_INTERVAL_MILLIS = 20;
    private static final long CAMPAIGN_INTERVAL_MILLIS = 100;
    private static final long PUBLISH_INTERVAL_MILLIS = 500;
    /** At most one line in this time for a problem that repeats as one condition. */
    static final Duration PROBLEM_LINE_INTERVAL = Duration.ofMinutes(1);

    /** What an HA master needs: the master's own options, where etcd is, the lease TTL, and the start-empty choice. */
    public record Options(MasterServer.Options master, EtcdTarget etcd, Duration leaseTtl, boolean startEmptyOnUnreadableState) {
    }

    public enum Role { STANDBY, LEADER, DEPOSED }

    /** One leadership: what a leader serves with, dropped whole when it is deposed. */
    private record Term(long epoch, LeaderLease lease, PageService pages, WriteAheadLog wal, Snapshotter snapshotter, MasterMetrics metrics,
                        ScheduledExecutorService housekeeping, Map<String, ServerMethodDefinition<?, ?>> methods, ClientRegistry clients,
                        io.mcctl.master.events.KvEventPublisher kvEvents) {

        /** Stops publishing KV events (the next leader publishes from the log), freeing the endpoints. */
        void stopKvEvents() {
            if (kvEvents != null) {
                kvEvents.close();
            }
        }
    }

    private final Options options;
    private final MasterSecurity security;
    private final StateLock lock;
    private final LayoutFile.Record layoutRecord;
    private final Path stateDir;
    private final Server server;
    /** The transport loops {@link #server} runs on; each term's service answers its calls on them. */
    private final io.mcctl.master.server.TransportLoops loops;
    private final String address;
    private final EtcdClient etcd;
    private final HTTPServer metricsServer;
    private final Thread roleThread;
    private final Object wake = new Object();

    private volatile boolean closed;
    private final java.util.concurrent.atomic.AtomicBoolean closing = new java.util.concurrent.atomic.AtomicBoolean();
    /** Counted down when {@link #close} has done every step. */
    private final java.util.concurrent.CountDownLatch stopped = new java.util.concurrent.CountDownLatch(1);
    private volatile Role role = Role.STANDBY;
    private volatile Term term;
    private volatile LogFollower follower;
    private volatile String leaderAddress = "";
    private volatile long leaderSequence;
    private volatile long followedEpoch;
    private volatile String refusal = "this master is starting: it is reading the state directory";
    private volatile long failovers;
    private volatile long lagRecords;
    private volatile long lagMillis;
    private LeaderLease lease;
    /** What the role thread could not do, told once per condition and minute (role thread only). */
    private final RepeatingProblem problems = new RepeatingProblem(PROBLEM_LINE_INTERVAL, System::nanoTime);

    private HaMaster(Options options, MasterSecurity security, StateLock lock, LayoutFile.Record layoutRecord, Server server,
                     io.mcctl.master.server.TransportLoops loops, HTTPServer metricsServer, PrometheusRegistry registry, EtcdClient etcd) {
        this.options = options;
        this.security = security;
        this.lock = lock;
        this.layoutRecord = layoutRecord;
        this.stateDir = options.master().resolvedStateDir();
        this.server = server;
        this.loops = loops;
        this.address = advertisedHost(options.master().bindHost()) + ":" + server.getPort();
        this.metricsServer = metricsServer;
        this.etcd = etcd;
        registerMetrics(registry);
        this.roleThread = new Thread(this::run, "mcctl-ha-role");
        roleThread.setDaemon(true);
    }

    /**
     * Locks the state directory shared, makes sure the root has its layout record (exactly one of several masters
     * starting at once creates it), binds the gRPC and metrics ports, and starts following and campaigning.
     */
    public static HaMaster start(Options options, MasterSecurity security) throws IOException {
        MasterServer.Options master = options.master();
        if (master.durability() != io.mcctl.master.server.MasterSettings.Durability.wal) {
            throw new IllegalArgumentException("--ha needs durability wal: a standby follows the log, and under durability "
                    + master.durability() + " there is none");
        }
        Path stateDir = master.resolvedStateDir();
        io.mcctl.master.server.ConnectionLimits connections = MasterServer.connectionLimits(master); // before anything is held
        MasterServer.kvEventSettings(master); // bad KV event settings: one line, before anything is held
        StateLock lock = StateLock.acquireShared(stateDir);
        Server server = null;
        HTTPServer metricsServer = null;
        EtcdClient etcd = null;
        io.mcctl.master.server.TransportLoops loops = io.mcctl.master.server.TransportLoops.start("mcctl-master",
                io.mcctl.master.server.MasterSettings.busyPoll(master.settings()), connections);
        try {
            Path layoutFile = master.layout().layoutFile();
            java.nio.file.Files.createDirectories(master.layout().root());
            LayoutFile.Record layoutRecord = LayoutFile.loadOrCreate(LayoutGrowth.inForce(master.layout()));
            StateCluster.require(stateDir, layoutRecord.clusterId(), layoutFile);
            RoleRegistry registry = new RoleRegistry();
            NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress(master.bindHost(), master.port()));
            try {
                security.configure(builder, master.bindHost());
            } catch (SecurityConfigException e) {
                throw new IOException(e.getMessage(), e);
            }
            server = loops.configure(builder).directExecutor().maxInboundMessageSize(MasterServer.MAX_REQUEST_BYTES)
                    .fallbackHandlerRegistry(registry).build();
            try {
                server.start();
            } catch (IOException e) {
                throw new IOException("cannot listen on " + master.bindHost() + ":" + master.port() + " for gRPC: " + e.getMessage(), e);
            }
            PrometheusRegistry metrics = new PrometheusRegistry();
            loops.registerMetrics(metrics);
            etcd = new EtcdClient(options.etcd(), Duration.ofMillis(Math.max(500, options.leaseTtl().toMillis() / 4)));
            HaMaster[] self = new HaMaster[1];
            HTTPServer.Builder metricsBuilder = HTTPServer.builder().hostname(master.bindHost()).port(master.metricsPort()).registry(metrics)
                    .defaultHandler(exchange -> self[0].health(exchange));
            try {
                security.configure(metricsBuilder);
            } catch (SecurityConfigException e) {
                throw new IOException(e.getMessage(), e);
            }
            metricsServer = metricsBuilder.buildAndStart();
            HaMaster ha = new HaMaster(options, security, lock, layoutRecord, server, loops, metricsServer, metrics, etcd);
            self[0] = ha;
            registry.master = ha;
            ha.roleThread.start();
            return ha;
        } catch (IOException | RuntimeException e) {
            if (server != null) {
                server.shutdownNow();
            }
            loops.close();
            if (metricsServer != null) {
                metricsServer.stop();
            }
            if (etcd != null) {
                etcd.close();
            }
            lock.close();
            throw e;
        }
    }

    /** The host others reach this master at: the bind address, or this machine's name when it binds every address. */
    private static String advertisedHost(String bindHost) {
        if (!bindHost.equals("0.0.0.0") && !bindHost.equals("::") && !bindHost.isEmpty()) {
            return bindHost;
        }
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.net.UnknownHostException e) {
            return bindHost;
        }
    }

    // ---- the role thread ----

    private void run() {
        while (!closed) {
            try {
                if (followAndCampaign()) {
                    awaitLoss();
                }
            } catch (IOException | RuntimeException e) {
                String problem = e.getMessage() == null ? e.toString() : e.getMessage();
                String line = problems.occurred(e instanceof EtcdClient.EtcdUnavailableException u ? u.condition() : problem,
                        "high availability: " + problem + "; trying again");
                if (line != null) {
                    LOG.error("{}", line);
                }
                if (role != Role.LEADER) {
                    refusal = "this master cannot follow or lead: " + problem;
                }
                pause(500);
            }
        }
    }

    /** Follows the log and campaigns until this master has taken over (true) or is closed (false). */
    private boolean followAndCampaign() throws IOException {
        follower = null;
        LogFollower following = startFollowing();
        follower = following;
        long nextCampaign = 0;
        long nextPublish = 0;
        while (!closed) {
            following.poll();
            followedEpoch = following.epoch();
            long now = System.currentTimeMillis();
            if (lease == null || !lease.valid()) {
                if (lease != null) {
                    lease.close();
                }
                lease = null;
                lease = LeaderLease.grant(etcd, options.leaseTtl(), reason -> wake());
            }
            // A standby once it has followed the log and etcd has granted it a lease: until then calls are refused with
            // the reason (deposed, starting, or etcd out of reach), never with a bare "no leader is known yet".
            if (role == Role.DEPOSED || refusal != null) {
                role = Role.STANDBY;
                refusal = null;
            }
            if (now >= nextCampaign) {
                EtcdClient.Campaign campaign = etcd.campaign(options.etcd().leaderKey(layoutRecord.clusterId()), address, lease.id());
                if (campaign.won()) {
                    if (campaign.createRevision() <= followedEpoch) {
                        etcd.deleteIfHeldBy(options.etcd().leaderKey(layoutRecord.clusterId()), lease.id());
                        throw new IOException("won leadership at etcd revision " + campaign.createRevision() + ", not above epoch " + followedEpoch
                                + " that the log already holds: was etcd's data reset? Not leading");
                    }
                    leaderAddress = address; // while taking over, a refusal names no other master as the leader
                    takeOver(following, campaign.createRevision());
                    problemOver();
                    return true;
                }
                leaderAddress = campaign.holder();
                nextCampaign = now + CAMPAIGN_INTERVAL_MILLIS;
            }
            if (now >= nextPublish) {
                publish(following.applied());
                nextPublish = now + PUBLISH_INTERVAL_MILLIS;
            }
            problemOver();
            pause(FOLLOW_INTERVAL_MILLIS);
        }
        return false;
    }

    private LogFollower startFollowing() throws IOException {
        BucketLayout layout = LayoutGrowth.inForce(options.master().layout()); // a grown layout's record outranks the settings
        io.mcctl.master.events.KvEventSettings kvEvents = MasterServer.kvEventSettings(options.master());
        java.util.function.Supplier<PageService> services = () -> PageService.builder(layout)
                .allocationDeadline(options.master().allocationDeadline()).readLease(options.master().readLease())
                .allocationGrace(options.master().allocationGrace())
                // Keeps the KV event batches replay finds when events are on.
                .keepKvEventHistory(kvEvents == null ? 0 : kvEvents.bufferBatches()).build();
        try {
            return new LogFollower(stateDir, layout, layoutRecord.clusterId(), services);
        } catch (CorruptStateException | io.mcctl.master.durability.UnreadableStateException e) {
            if (!options.startEmptyOnUnreadableState()) {
                throw new IOException("the shared state cannot be read (" + e.getMessage() + "); fix it (mcctl snapshot recover), or start "
                        + "with --ha-start-empty to move it aside and start empty (docs/ha.md says what that costs)", e);
            }
            Path aside = StartEmpty.moveAside(stateDir, e.getMessage());
            LOG.error("the shared state could not be read ({}); --ha-start-empty moved it to {}: starting empty", e.getMessage(), aside);
            return new LogFollower(stateDir, layout, layoutRecord.clusterId(), services);
        }
    }

    /** Publishes this master's role and log position under its lease, and reads how far the leader is, for the lag. */
    private void publish(long applied) {
        try {
            String members = options.etcd().membersKey(layoutRecord.clusterId());
            Role now = role;
            Term leading = term;
            long logSequence = leading != null ? leading.wal().lastDurable() : applied;
            etcd.put(members + address, "role=" + now.name().toLowerCase(java.util.Locale.ROOT) + " applied=" + applied + " log=" + logSequence
                    + " epoch=" + (leading != null ? leading.epoch() : followedEpoch) + " time=" + System.currentTimeMillis(), lease == null ? 0 : lease.id());
            if (leading == null && !leaderAddress.isEmpty()) {
                etcd.get(members + leaderAddress).ifPresent(entry -> leaderSequence = MemberStatus.parse(entry.value()).log());
                lagRecords = Math.max(0, leaderSequence - applied);
                LogFollower following = follower;
                lagMillis = lagRecords == 0 || following == null ? 0 : Math.max(0, System.currentTimeMillis() - following.lastAppliedTimeMs());
            } else {
                lagRecords = 0;
                lagMillis = 0;
            }
        } catch (EtcdClient.EtcdUnavailableException e) {
            LOG.debug("could not publish the member status: {}", e.getMessage());
        }
    }

    /**
     * Having won the leader key at {@code epoch}: reads the log to its end (every record the old leader answered OK
     * was durable before its lease could expire, so it is there now), claims every page, opens a segment of the new
     * epoch fenced after the last record applied, and serves.
     */
    private void takeOver(LogFollower following, long epoch) throws IOException {
        long began = System.nanoTime();
        long behind = following.poll();
        WalSegmentHeader.Fence fence = following.fence();
        PageService restored = following.state().pages;
        try {
            restored.restorer().finish();
        } catch (IllegalStateException e) {
            etcd.deleteIfHeldBy(options.etcd().leaderKey(layoutRecord.clusterId()), lease.id());
            throw new CorruptStateException(stateDir, 0, "followed state is inconsistent: " + e.getMessage());
        }
        BucketFiles.InitResult init = BucketFiles.initialise(LayoutGrowth.inForce(options.master().layout()));
        // A grow the old leader logged but did not record in the root's layout file (it died between the two) is
        // recorded now, as a restart would.
        LayoutGrowth.reconcile(restored.layout(), init.layout());
        LeaderLease held = lease;
        WriteAheadLog wal = new WriteAheadLog(stateDir, layoutRecord.clusterId(), following.applied(), options.master().walSegmentBytes(),
                System::currentTimeMillis, epoch, fence, held::valid);
        // A leader that cannot bind its KV event endpoints (an old leader, paused, holds them on this host) still serves
        // (the assembly says so in one line): the log keeps numbering nothing, and routers learn nothing of this term until
        // the next leader publishes.
        MasterAssembly.Assembled assembled = MasterAssembly.builder(options.master()).restored(restored).bucketFiles(init).wal(wal)
                .stateDir(stateDir, following.applied()).loops(loops).security(security)
                .fencedBy(epoch, held::valid, new LeaseGuard(held, epoch))
                .kvEvents(MasterServer.kvEventSettings(options.master()), layoutRecord.clusterId()).build();
        PageService pages = assembled.pages();
        Snapshotter snapshotter = assembled.snapshotter();
        MasterMetrics metrics = assembled.metrics();
        ClientRegistry clients = assembled.clients();
        io.mcctl.master.events.KvEventPublisher kvEvents = assembled.kvEvents();
        Map<String, ServerMethodDefinition<?, ?>> methods = new HashMap<>();
        for (ServerMethodDefinition<?, ?> method : assembled.served().getMethods()) {
            methods.put(method.getMethodDescriptor().getFullMethodName(), method);
        }
        ScheduledExecutorService housekeeping = assembled.startHousekeeping();
        if (!held.valid()) {
            housekeeping.shutdownNow();
            clients.close();
            if (kvEvents != null) {
                kvEvents.close();
            }
            wal.close();
            throw new IOException("the leader lease of epoch " + epoch + " lapsed while taking over: " + held.lostReason());
        }
        term = new Term(epoch, held, pages, wal, snapshotter, metrics, housekeeping, methods, clients, kvEvents);
        lock.leading(address, epoch);
        leaderAddress = address;
        role = Role.LEADER;
        failovers++;
        publish(following.applied());
        LOG.info("leader of epoch {} ({}): took over after record {} of epoch {} with {} mappings, {} in flight, {} records read at take-over, "
                        + "in {} ms", epoch, address, fence.sequence(), fence.epoch(), pages.mappingCount(), pages.inFlightCount(), behind,
                (System.nanoTime() - began) / 1_000_000);
    }

    /** Serves as leader until the lease is lost or the master closes; then deposes itself. */
    private void awaitLoss() {
        Term leading = term;
        long nextPublish = 0;
        while (!closed && leading.lease().valid()) {
            if (System.currentTimeMillis() >= nextPublish) {
                publish(leading.wal().lastDurable());
                nextPublish = System.currentTimeMillis() + PUBLISH_INTERVAL_MILLIS;
            }
            synchronized (wake) {
                try {
                    wake.wait(PUBLISH_INTERVAL_MILLIS / 5);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
        if (closed) {
            return;
        }
        String reason = leading.lease().lostReason();
        depose(leading, "lost leadership of epoch " + leading.epoch() + ": " + reason);
    }

    /** Refuses everything at once, then drops the term; the role thread follows the log again from the newest snapshot. */
    private void depose(Term leading, String reason) {
        refusal = reason + "; this master refuses every call until it has followed the log again";
        role = Role.DEPOSED;
        term = null;
        leading.pages().refuseChanges(reason);
        leading.housekeeping().shutdownNow();
        leading.clients().close();
        leading.stopKvEvents();
        try {
            leading.wal().close();
        } catch (IOException e) {
            LOG.warn("closing the log of epoch {} failed: {}", leading.epoch(), e.getMessage());
        }
        leading.lease().close();
        lease = null;
        LOG.error("{}", refusal);
    }

    /** The role thread's last step worked: a problem it was reporting is over. */
    private void problemOver() {
        String line = problems.cleared("high availability: working again");
        if (line != null) {
            LOG.info("{}", line);
        }
    }

    private void wake() {
        synchronized (wake) {
            wake.notifyAll();
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- what others see ----

    public Role role() {
        return role;
    }

    public int port() {
        return server.getPort();
    }

    public int metricsPort() {
        return metricsServer.getPort();
    }

    public String address() {
        return address;
    }

    public LayoutFile.Record layoutRecord() {
        return layoutRecord;
    }

    /** The page service while leading, else null. */
    public PageService pages() {
        Term leading = term;
        return leading == null ? null : leading.pages();
    }

    /**
     * A leader whose lease has lapsed answers nothing durable already, before the role thread gets to depose it: status
     * and health say so at once rather than claim to lead.
     */
    private boolean lapsed(Term leading) {
        return role == Role.LEADER && leading != null && !leading.lease().valid();
    }

    /** Why this master does not take changes now, or null while it leads with a valid lease and a working log. */
    private String whyNotServing(Term leading) {
        if (leading == null) {
            return refusal;
        }
        return lapsed(leading) ? "leader lease lost: " + leading.lease().lostReason() : leading.pages().refusal();
    }

    public GetMasterStatusResponse status() {
        Term leading = term;
        LogFollower following = follower;
        boolean lapsed = lapsed(leading);
        GetMasterStatusResponse.Builder status = GetMasterStatusResponse.newBuilder()
                .setRole(lapsed ? GetMasterStatusResponse.Role.DEPOSED : switch (role) {
                    case LEADER -> GetMasterStatusResponse.Role.LEADER;
                    case STANDBY -> GetMasterStatusResponse.Role.STANDBY;
                    case DEPOSED -> GetMasterStatusResponse.Role.DEPOSED;
                })
                .setAddress(address).setLeaderAddress(leaderAddress).setFailovers(failovers).setClusterId(layoutRecord.clusterId());
        if (leading != null) {
            status.setEpoch(leading.epoch()).setAppliedSequence(leading.wal().lastDurable()).setLogSequence(leading.wal().lastDurable());
        } else {
            long applied = following == null ? 0 : following.applied();
            status.setEpoch(followedEpoch).setAppliedSequence(applied).setLogSequence(Math.max(applied, leaderSequence)).setLagMs(lagMillis);
        }
        String why = whyNotServing(leading);
        if (why != null) {
            status.setReason(why);
        }
        return status.build();
    }

    private void registerMetrics(PrometheusRegistry registry) {
        GaugeWithCallback.builder().name("mcctl_master_ha_role").help("1 for the role this master has now (leader, standby, deposed)")
                .labelNames("role").callback(cb -> {
                    for (Role r : Role.values()) {
                        cb.call(r == role ? 1 : 0, r.name().toLowerCase(java.util.Locale.ROOT));
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_ha_epoch").help("The leader epoch this master serves or follows")
                .callback(cb -> cb.call(term != null ? term.epoch() : followedEpoch)).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_ha_standby_lag_records").help("Log records the leader has and this standby has not applied")
                .callback(cb -> cb.call(role == Role.LEADER ? 0 : lagRecords)).register(registry);
        GaugeWithCallback.builder().name("mcctl_master_ha_standby_lag_seconds")
                .help("Time since the last record this standby applied was logged, while it is behind the leader")
                .callback(cb -> cb.call(role == Role.LEADER ? 0 : lagMillis / 1000.0)).register(registry);
        CounterWithCallback.builder().name("mcctl_master_ha_failovers").help("Times this master took over as leader")
                .callback(cb -> cb.call(failovers)).register(registry);
        registry.register(() -> {
            Term leading = term;
            return leading == null ? MetricSnapshots.of() : leading.metrics().registry().scrape();
        });
    }

    /** {@code /health}: 200 on a serving leader, 503 with the role and reason otherwise. */
    private void health(com.sun.net.httpserver.HttpExchange exchange) throws IOException {
        try (exchange) {
            int status;
            String body;
            if ("/health".equals(exchange.getRequestURI().getPath())) {
                Term leading = term;
                String why = whyNotServing(leading);
                if (leading != null && why == null) {
                    status = 200;
                    String degraded = io.mcctl.master.server.HealthHandler.degraded(leading.pages());
                    body = (degraded == null ? "ok" : "degraded") + ": leader of epoch " + leading.epoch()
                            + (degraded == null ? "" : "; " + degraded) + "\n";
                } else {
                    status = 503;
                    body = role.name().toLowerCase(java.util.Locale.ROOT) + ": " + (why != null ? why : "following the leader at "
                            + (leaderAddress.isEmpty() ? "(none yet)" : leaderAddress) + ", " + lagRecords + " records behind") + "\n";
                }
            } else {
                status = 404;
                body = "not found: the master serves /metrics and /health\n";
            }
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
            exchange.sendResponseHeaders(status, bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
    }

    /** Routes calls by role: the leader's service while leading; GetMasterStatus always; otherwise a refusal naming the leader. */
    private static final class RoleRegistry extends HandlerRegistry {
        volatile HaMaster master;
        private volatile ServerServiceDefinition status;

        @Override
        public ServerMethodDefinition<?, ?> lookupMethod(String methodName, String authority) {
            HaMaster ha = master;
            if (ha == null) {
                return MasterServer.refusing(methodName, Status.UNAVAILABLE.withDescription("the master is starting"), LeaderRedirect.trailers(""));
            }
            if (methodName.equals(MasterServiceGrpc.getGetMasterStatusMethod().getFullMethodName())) {
                ServerServiceDefinition definition = status;
                if (definition == null) {
                    definition = MasterStatusService.definition(ha.security, ha::status);
                    status = definition;
                }
                return definition.getMethod(methodName);
            }
            Term leading = ha.term;
            if (leading != null && ha.role == Role.LEADER) {
                return leading.methods().get(methodName);
            }
            String leader = ha.leaderAddress;
            Metadata trailers = LeaderRedirect.trailers(leader.equals(ha.address) ? "" : leader);
            String why = ha.refusal != null ? ha.refusal : "this master is a standby";
            return MasterServer.refusing(methodName, Status.UNAVAILABLE.withDescription(why + (leader.isEmpty() || leader.equals(ha.address)
                    ? "; no leader is known yet" : "; the leader is at " + leader)), trailers);
        }
    }

    /** Blocks until the master has stopped: the server, and everything {@link #close} closes after it. */
    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
        stopped.await();
    }

    /**
     * Stops the master, handing over first: a leader takes no more changes, writes what its log holds, deletes the
     * leader key and revokes its lease, so that a standby wins at its next campaign rather than after the lease's TTL;
     * only then does it stop serving, and last it closes the metrics server, the etcd client and the lock. Each step
     * runs whatever the one before it did, so a failure costs that step only. The hand-over needs the etcd client's
     * transport, which is why it comes first: once the server stops, the process may start shutting gRPC's shared
     * threads down.
     */
    @Override
    public void close() {
        if (closing.getAndSet(true)) {
            try {
                stopped.await(); // closed by another thread (the shutdown hook and a caller): return once it is done
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return;
        }
        try {
            closed = true;
            wake();
            roleThread.interrupt();
            try {
                roleThread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            Term leading = term;
            if (leading != null) {
                stepDown(leading);
            } else if (lease != null) {
                LeaderLease standing = lease;
                lease = null;
                step("revoking the etcd lease", standing::close);
            }
            step("stopping the gRPC server", () -> GrpcServers.stop(server));
            step("stopping the transport threads", loops::close);
            step("stopping the metrics server", metricsServer::stop);
            step("closing the etcd client", etcd::close);
            step("releasing the state directory lock", lock::close);
        } finally {
            stopped.countDown();
        }
    }

    /**
     * A leader's hand-over as it stops: refuses calls at once (naming no leader: the caller finds the next one), takes no
     * more changes, closes the log with what it holds while the lease still holds (so every answer already promised is
     * durable and sent), then deletes the leader key and revokes the lease.
     */
    private void stepDown(Term leading) {
        refusal = "this master is stopping: it handed leadership of epoch " + leading.epoch() + " over";
        role = Role.STANDBY;
        leaderAddress = "";
        term = null;
        step("refusing changes", () -> leading.pages().refuseChanges("this master is stopping"));
        step("stopping the housekeeping", () -> leading.housekeeping().shutdownNow());
        step("closing the node registry", () -> leading.clients().close());
        // Refused by the log past the lease: the next leader holds their pages.
        step("closing the reservations", () -> leading.pages().closeAllReservations());
        step("closing the write-ahead log", () -> leading.wal().close());
        step("stopping the KV events", leading::stopKvEvents);
        boolean keyDeleted = step("deleting the leader key", () -> etcd.deleteIfHeldBy(options.etcd().leaderKey(layoutRecord.clusterId()),
                leading.lease().id()));
        lease = null;
        boolean revoked = leading.lease().revoke();
        if (keyDeleted || revoked) {
            LOG.info("stepped down as leader of epoch {}: {}; a standby takes over at once", leading.epoch(),
                    keyDeleted && revoked ? "leader key deleted, lease revoked" : keyDeleted ? "leader key deleted" : "lease revoked");
        } else {
            LOG.warn("could not step down in etcd: a standby takes over when the lease expires, within {} s", leading.lease().ttlSeconds());
        }
    }

    /** One step of {@link #close}: its failure is logged in one line, and the next step runs all the same. */
    private static boolean step(String what, Step step) {
        try {
            step.run();
            return true;
        } catch (Exception e) {
            LOG.warn("{} failed: {}", what, e.getMessage() == null ? e.toString() : e.getMessage());
            return false;
        }
    }

    @FunctionalInterface
    private interface Step {
        void run() throws Exception;
    }
}
