package io.mcctl.cli.command;

import io.mcctl.master.service.eviction.EvictionPolicy;
import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.SettingsOptions;
import io.mcctl.master.durability.StateLock;
import io.mcctl.master.server.MasterServer;
import io.mcctl.master.service.PageService;
import io.mcctl.master.server.MasterSettings;
import io.mcctl.storage.config.EffectiveConfig;
import io.mcctl.storage.config.Setting;
import io.mcctl.storage.config.StorageSettings;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.storage.layout.SpaceBacking;
import java.nio.file.Files;
import java.nio.file.Path;
import io.mcctl.storage.mount.CheckResult;
import io.mcctl.storage.mount.MountValidator;
import java.time.Duration;
import java.util.Optional;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code mcctl master start}: the master in the foreground until SIGTERM or Ctrl-C. */
@Command(name = "start", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Run the master in the foreground: page RPCs over gRPC, Prometheus metrics and health over HTTP.",
                "Lays out the root on first start (layout record and bucket files). SIGTERM or Ctrl-C stops it cleanly.",
                "Holds <state dir>/in_use.lock while it runs: a second master on the same state directory exits 6 (IN_USE), "
                        + "naming the holder, and changes nothing."})
public final class MasterStartCommand implements Callable<Integer>, SettingsOptions.UsesSettings {

    private static final Logger LOG = LoggerFactory.getLogger("mcctl.master");

    @Spec
    CommandSpec spec;

    @Override
    public List<Setting<?>> settings() {
        List<Setting<?>> all = new ArrayList<>(StorageSettings.ALL);
        all.addAll(MasterSettings.ALL);
        return all;
    }

    /**
     * The checks of {@code mcctl mount validate}, before anything is laid out: only the root directory is
     * created first, so a fresh root passes and a root that fails changes no further.
     */
    private static void healthCheck(BucketLayout layout, String fsType) throws java.io.IOException {
        java.nio.file.Files.createDirectories(layout.root());
        List<CheckResult> results = MountValidator.validate(layout, fsType, Optional.empty(), Duration.ofSeconds(10));
        List<String> failures = new ArrayList<>();
        int warnings = 0;
        for (CheckResult result : results) {
            if (result.status() == CheckResult.Status.FAIL) {
                failures.add(result.name() + ": " + result.detail());
            } else if (result.status() == CheckResult.Status.WARN) {
                warnings++;
                LOG.warn("health check {}: {}", result.name(), result.detail());
            }
        }
        if (!failures.isEmpty()) {
            throw new CliException(ExitCodes.FAILED, "health check failed (" + String.join("; ", failures)
                    + "); fix the mount, or start with health_check false");
        }
        LOG.info("health check: {} checks run, {} warnings", results.size(), warnings);
    }

    /** A root that is a file (or under one) is refused in one line before anything is created or locked. */
    static void requireDirectoryRoot(Path root) {
        Path existing = root;
        while (existing != null && !Files.exists(existing)) {
            existing = existing.getParent();
        }
        if (existing != null && !Files.isDirectory(existing)) {
            throw new CliException(ExitCodes.USAGE, existing.equals(root)
                    ? "root " + root + " is a file, not a directory: give --root a directory (it is created when missing)"
                    : "root " + root + " cannot be created: " + existing + " is a file, not a directory");
        }
    }

    /** The root in force as an absolute path, where it came from, and what a relative one was taken relative to. */
    private String describeRoot(EffectiveConfig config, Path root) {
        EffectiveConfig.Entry entry = config.entry(StorageSettings.ROOT_DIR);
        String cwd = Path.of("").toAbsolutePath().toString();
        String given = switch (entry.source()) {
            case FLAG -> spec.findOption(StorageSettings.ROOT_DIR.flag()).getValue();
            case ENVIRONMENT -> io.mcctl.cli.CommandEnvironment.of(spec).get(StorageSettings.ROOT_DIR.envName());
            case DEFAULT -> StorageSettings.DEFAULT_ROOT;
            case FILE -> null; // the file's text is not kept: say how a relative one is read
        };
        String relative = given == null ? "; a relative root_dir there is taken relative to the current directory " + cwd
                : Path.of(given).isAbsolute() ? "" : " '" + given + "', relative to the current directory " + cwd;
        if (entry.source() == EffectiveConfig.SourceKind.DEFAULT) {
            return "no root configured: using the local directory " + root + " (the default " + StorageSettings.DEFAULT_ROOT
                    + ", relative to the current directory " + cwd + "; set --root or " + StorageSettings.ROOT_DIR.envName()
                    + " to a shared mount for more than one node)";
        }
        return "root " + root + " (from " + entry.describeSource() + relative + ")";
    }

    /** What was laid out and how much real space backs it: sparse bucket files take space only as objects are written. */
    private static void logSpace(BucketLayout layout) {
        try {
            SpaceBacking space = SpaceBacking.measure(layout);
            LOG.info("layout: {} bucket files x {} = {} under {}, sparse: {}{} of it backed by real space so far, {} free on the filesystem",
                    layout.bucketCount(), SpaceBacking.bytes(layout.bucketSize()), SpaceBacking.bytes(space.capacityBytes()), layout.root(),
                    space.allocatedKnown() ? "" : "at most ", SpaceBacking.bytes(space.allocatedBytes()), SpaceBacking.bytes(space.freeBytes()));
        } catch (java.io.IOException e) {
            LOG.info("layout: {} bucket files x {} under {} (real space unknown: {})", layout.bucketCount(),
                    SpaceBacking.bytes(layout.bucketSize()), layout.root(), e.getMessage());
        }
    }

    /** The eviction settings as one policy; a low watermark above the high one is refused in one line. */
    static EvictionPolicy evictionPolicy(EffectiveConfig config) {
        double high = config.get(MasterSettings.EVICTION_HIGH_WATERMARK);
        double low = config.get(MasterSettings.EVICTION_LOW_WATERMARK);
        if (low > high) {
            throw new CliException(ExitCodes.USAGE, "eviction_low_watermark " + low + " (from " + config.sourceOf(MasterSettings.EVICTION_LOW_WATERMARK)
                    + ") is above eviction_high_watermark " + high + " (from " + config.sourceOf(MasterSettings.EVICTION_HIGH_WATERMARK)
                    + "); the low watermark must be at most the high one");
        }
        return config.get(MasterSettings.EVICTION) ? new EvictionPolicy(true, high, low) : EvictionPolicy.OFF;
    }

    /** TLS and tokens from tls_cert, tls_key, tls_client_ca and tokens_file; a file that cannot be used stops the start. */
    private static io.mcctl.master.security.MasterSecurity security(EffectiveConfig config) {
        try {
            return io.mcctl.master.security.MasterSecurity.of(pathOrNull(config.get(MasterSettings.TLS_CERT)),
                    pathOrNull(config.get(MasterSettings.TLS_KEY)), pathOrNull(config.get(MasterSettings.TLS_CLIENT_CA)),
                    pathOrNull(config.get(MasterSettings.TOKENS_FILE)));
        } catch (io.mcctl.master.protocol.SecurityConfigException e) {
            throw new CliException(ExitCodes.USAGE, e.getMessage());
        }
    }

    private static java.nio.file.Path pathOrNull(String text) {
        return text.isEmpty() ? null : java.nio.file.Path.of(text);
    }

    /**
     * SIGHUP reads the tokens file again (connections stay open); a file that cannot be used keeps the tokens in force.
     * A process started with SIGHUP ignored (as {@code nohup} starts one) keeps ignoring it whatever is asked: the JVM
     * leaves an ignored SIGHUP alone, so the operator is told at start rather than finding out at the first reload.
     */
    @SuppressWarnings("sunapi")
    private static void reloadTokensOnHangup(io.mcctl.master.security.MasterSecurity security) {
        try {
            sun.misc.SignalHandler previous = sun.misc.Signal.handle(new sun.misc.Signal("HUP"), signal -> security.reloadTokens());
            if (previous == sun.misc.SignalHandler.SIG_IGN && security.access().hasTokensFile()) {
                LOG.warn("SIGHUP is ignored by this process (it was started with SIGHUP ignored, as nohup does): kill -HUP will not "
                        + "make it read the tokens file again, only a restart will; start it without nohup (a service manager, or "
                        + "setsid) for kill -HUP to reload the tokens");
            }
        } catch (IllegalArgumentException e) {
            LOG.warn("SIGHUP cannot be handled here ({}); restart the master to read the tokens file again", e.getMessage());
        }
    }

    /**
     * Under {@code --ha}: every master holds the state directory shared, follows it as a standby and campaigns on etcd;
     * the one that wins serves (docs/ha.md). The health check and preallocation are the leader's business: a
     * standby never writes the root.
     */
    private int startHighlyAvailable(EffectiveConfig config, MasterServer.Options options, io.mcctl.master.security.MasterSecurity security)
            throws Exception {
        io.mcctl.master.etcd.EtcdTarget etcd = io.mcctl.master.etcd.EtcdTarget.parse(config.get(MasterSettings.HA));
        if (options.durability() != MasterSettings.Durability.wal) {
            throw new CliException(ExitCodes.USAGE, "--ha needs durability wal (from " + config.sourceOf(MasterSettings.DURABILITY)
                    + " it is " + options.durability() + "): a standby follows the write-ahead log");
        }
        io.mcctl.master.ha.HaMaster master = io.mcctl.master.ha.HaMaster.start(new io.mcctl.master.ha.HaMaster.Options(options, etcd,
                config.get(MasterSettings.HA_LEASE_TTL), config.get(MasterSettings.HA_START_EMPTY)), security);
        reloadTokensOnHangup(security);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("stopping");
            master.close();
        }, "mcctl-master-shutdown"));
        PrintWriter out = spec.commandLine().getOut();
        out.printf("mcctl master serving gRPC on %s:%d, metrics on http://%s:%d/metrics, root %s (cluster %s), state %s "
                        + "(high availability on %s: standby until it wins the election)%n",
                options.bindHost(), master.port(), options.bindHost(), master.metricsPort(), options.layout().root(),
                master.layoutRecord().clusterId(), options.resolvedStateDir(), etcd);
        out.flush();
        master.awaitTermination();
        return 0;
    }

    @Override
    public Integer call() throws Exception {
        EffectiveConfig config = SettingsOptions.resolve(spec, settings());
        java.util.Map<String, String> settingsInForce = new java.util.LinkedHashMap<>();
        for (EffectiveConfig.Entry entry : config.entries()) {
            settingsInForce.put(entry.setting().key(), entry.formattedValue());
        }
        try {
            io.mcctl.master.server.ConnectionLimits.inForce(settingsInForce, config.sourceOf(MasterSettings.MAX_CONNECTIONS));
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, e.getMessage()); // before anything is logged, locked or laid out
        }
        if (!config.get(StorageSettings.PAGE_MODE)) {
            // page_mode belongs to the writers (the RFC reads it in each node's storage backend and rolls it out node by
            // node), so the master serves both kinds at once whatever its own value.
            LOG.info("page_mode false (from {}): page_mode is each node's setting (mcctl node start); this master serves page-mode "
                    + "(DISTRIBUTED_DISK) and per-key (LOCAL_DISK) offloads alike", config.sourceOf(StorageSettings.PAGE_MODE));
        }
        BucketLayout layout = StorageSettings.layout(config);
        requireDirectoryRoot(layout.root());
        // The master moves no bucket-file bytes itself, but the io setting is checked here, before anything is laid out,
        // so that a cluster configured for USRBIO where it cannot work stops at once, saying what is missing.
        LOG.info("bucket-file IO for this root: {} (each node and client chooses its own by the same setting)",
                io.mcctl.storage.io.BucketIoSelector.choose(config).reason());
        LOG.info("{}", describeRoot(config, layout.root()));
        LOG.info("{}", io.mcctl.cli.HeapPages.describe());
        if (!config.get(MasterSettings.BUSY_POLL).isZero()) {
            EffectiveConfig.Entry busyPoll = config.entry(MasterSettings.BUSY_POLL);
            LOG.info("busy_poll {} (from {}): each transport thread polls its connections for {} after its last work before it sleeps",
                    busyPoll.formattedValue(), busyPoll.describeSource(), busyPoll.formattedValue());
        }
        String stateDir = config.get(MasterSettings.STATE_DIR);
        MasterServer.Options options = MasterServer.Options.builder(layout).fsType(config.get(StorageSettings.FS_TYPE))
                .bindHost(config.get(MasterSettings.BIND)).port(config.get(MasterSettings.PORT))
                .metricsPort(config.get(MasterSettings.METRICS_PORT))
                .allocationDeadline(config.get(MasterSettings.ALLOCATION_DEADLINE))
                .readLease(config.get(MasterSettings.READ_LEASE)).durability(config.get(MasterSettings.DURABILITY))
                .stateDir(stateDir.isEmpty() ? null : java.nio.file.Path.of(stateDir))
                .snapshotInterval(config.get(MasterSettings.SNAPSHOT_INTERVAL))
                .snapshotRetention(config.get(MasterSettings.SNAPSHOT_RETENTION))
                .walSegmentBytes(config.get(MasterSettings.WAL_SEGMENT_SIZE)).settings(settingsInForce)
                .allocationGrace(config.get(MasterSettings.ALLOCATION_GRACE)).eviction(evictionPolicy(config)).build();
        io.mcctl.master.security.MasterSecurity security = security(config); // before anything is laid out
        if (!config.get(MasterSettings.HA).isEmpty()) {
            return startHighlyAvailable(config, options, security);
        }
        // The state directory's lock comes first: a second master on the same state changes nothing, not even the
        // health check's probe files under the root.
        StateLock lock = StateLock.acquire(options.resolvedStateDir());
        MasterServer server;
        try {
            if (config.get(StorageSettings.HEALTH_CHECK)) {
                healthCheck(layout, options.fsType());
            }
            server = MasterServer.start(options, lock, security);
        } catch (Exception e) {
            lock.close();
            throw e;
        }
        if (config.get(StorageSettings.PREALLOCATE_BUCKETS)) {
            try {
                double seconds = io.mcctl.storage.layout.SpaceBacking.preallocate(layout);
                LOG.info("preallocate_buckets: real space reserved for {} bucket files of {} bytes in {} s", layout.bucketCount(),
                        layout.bucketSize(), String.format(java.util.Locale.ROOT, "%.1f", seconds));
            } catch (java.io.IOException e) {
                server.close();
                throw new CliException(ExitCodes.FAILED, e.getMessage(), e);
            }
        }
        logSpace(layout);
        reloadTokensOnHangup(security);
        Thread hook = new Thread(() -> {
            LOG.info("stopping");
            server.close();
        }, "mcctl-master-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        PrintWriter out = spec.commandLine().getOut();
        out.printf("mcctl master serving gRPC on %s:%d, metrics on http://%s:%d/metrics, root %s (cluster %s), state %s (%s durability)%n",
                options.bindHost(), server.port(), options.bindHost(), server.metricsPort(), layout.root(),
                server.layoutRecord().clusterId(), options.resolvedStateDir(), options.durability());
        out.flush();
        server.awaitTermination();
        return 0;
    }
}
