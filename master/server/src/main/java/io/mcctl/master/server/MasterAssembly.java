package io.mcctl.master.server;

import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.mcctl.master.durability.Snapshotter;
import io.mcctl.master.durability.WriteAheadLog;
import io.mcctl.master.events.KvEventPublisher;
import io.mcctl.master.events.KvEventSettings;
import io.mcctl.master.security.MasterSecurity;
import io.mcctl.master.service.ChangeLog;
import io.mcctl.master.service.PageService;
import io.mcctl.storage.layout.BucketFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one assembly of a serving master, from its settings ({@link MasterServer.Options}) over recovered state: the page
 * service with its log, eviction and promotion settings, the bucket-file watch, snapshots, metrics, the gRPC service with
 * its node registry and interceptors, and the housekeeping thread. A plain master ({@link MasterServer}) and a leader
 * fenced by an HA lease ({@code HaMaster}) both build theirs here; they differ only in what {@link Builder#fencedBy} adds.
 *
 * <p>Recovery and the log are the caller's (each entry point reads the state its own way); this takes what they produced.
 */
public final class MasterAssembly {

    private static final Logger LOG = LoggerFactory.getLogger(MasterAssembly.class);

    /** The assembled master: what it serves with, until it closes or is deposed. */
    public record Assembled(PageService pages, BucketFileWatch bucketFiles, Snapshotter snapshotter, MasterMetrics metrics,
                            MasterGrpcService service, ClientRegistry clients, ServerServiceDefinition served,
                            KvEventPublisher kvEvents, MasterServer.Options options) {

        /** Starts the housekeeping thread (reaper, eviction, bucket-file checks, periodic snapshots); stopped with shutdownNow. */
        public ScheduledExecutorService startHousekeeping() {
            return MasterServer.housekeeping(pages, bucketFiles, MasterServer.bucketCheckInterval(options), snapshotter,
                    options.snapshotInterval());
        }
    }

    private MasterAssembly() {
    }

    /** An assembly of a master with {@code options}. */
    public static Builder builder(MasterServer.Options options) {
        return new Builder(options);
    }

    /** What the assembly takes besides the options; each named, set once. */
    public static final class Builder {
        private final MasterServer.Options options;
        private PageService restored;
        private BucketFiles.InitResult init;
        private WriteAheadLog wal;
        private Path stateDir;
        private long lastSequence;
        private TransportLoops loops;
        private MasterSecurity security = MasterSecurity.plaintext();
        private long epoch = -1;
        private BooleanSupplier leaseValid;
        private ServerInterceptor leaseGuard;
        private KvEventSettings kvEventSettings;
        private String clusterId;

        private Builder(MasterServer.Options options) {
            this.options = Objects.requireNonNull(options, "options");
        }

        /** The recovered (or followed) state, its restore finished; not used after the assembly. */
        public Builder restored(PageService pages) {
            this.restored = pages;
            return this;
        }

        /** The bucket files as the start laid them out. */
        public Builder bucketFiles(BucketFiles.InitResult init) {
            this.init = init;
            return this;
        }

        /** The log every change goes to; null under snapshot durability. */
        public Builder wal(WriteAheadLog wal) {
            this.wal = wal;
            return this;
        }

        /** The state directory snapshots are written to, and the last log sequence recovery read. */
        public Builder stateDir(Path stateDir, long lastSequence) {
            this.stateDir = stateDir;
            this.lastSequence = lastSequence;
            return this;
        }

        /** The transport loops the service answers on. */
        public Builder loops(TransportLoops loops) {
            this.loops = loops;
            return this;
        }

        /** TLS and access control (plaintext by default). */
        public Builder security(MasterSecurity security) {
            this.security = security;
            return this;
        }

        /**
         * A leader fenced by an HA lease of {@code epoch}: snapshots are written only while {@code leaseValid}, and every
         * call passes {@code leaseGuard} first.
         */
        public Builder fencedBy(long epoch, BooleanSupplier leaseValid, ServerInterceptor leaseGuard) {
            this.epoch = epoch;
            this.leaseValid = leaseValid;
            this.leaseGuard = leaseGuard;
            return this;
        }

        /**
         * Publishes KV events as {@code settings} say (null: off; they need the log), numbered by the log of cluster
         * {@code clusterId}. A plain master whose endpoints cannot be bound does not start; a fenced leader serves without
         * them, saying so in one line.
         */
        public Builder kvEvents(KvEventSettings settings, String clusterId) {
            this.kvEventSettings = settings;
            this.clusterId = clusterId;
            return this;
        }

        /** @throws IOException when a plain master's KV event endpoints cannot be bound (one line) */
        public Assembled build() throws IOException {
            Objects.requireNonNull(restored, "restored state");
            Objects.requireNonNull(init, "bucket files");
            Objects.requireNonNull(stateDir, "state directory");
            Objects.requireNonNull(loops, "transport loops");
            boolean fenced = leaseValid != null;
            KvEventPublisher kvEvents = null;
            if (kvEventSettings != null && wal != null) {
                try {
                    kvEvents = new KvEventPublisher(kvEventSettings, restored.kvEventHistory(), clusterId);
                } catch (IOException e) {
                    if (!fenced) {
                        throw e;
                    }
                    LOG.error("KV events are off for epoch {}: {}", epoch, e.getMessage());
                }
            }
            try {
                return build(fenced, kvEvents);
            } catch (IOException | RuntimeException e) {
                if (kvEvents != null) {
                    kvEvents.close();
                }
                throw e;
            }
        }

        private Assembled build(boolean fenced, KvEventPublisher kvEvents) throws IOException {
            if (kvEvents != null) {
                wal.numberKvEvents(kvEvents); // numbers what the log holds from now on
            }
            BucketFileWatch bucketFiles = MasterServer.watchBucketFiles(restored, init);
            int[] promotion = MasterServer.promotionSettings(options);
            PageService pages = PageService.serving(restored)
                    .changeLog(wal == null ? ChangeLog.NONE : wal.changeLog())
                    .kvEventSink(kvEvents)
                    .eviction(options.eviction())
                    .promotionAdmissionReads(promotion[0])
                    .promotionMaxTasks(promotion[1])
                    .onFailedWrite(bucketFiles::suspect)
                    .build();
            if (wal != null) {
                // Fail-stop: after a failed write or fsync the log's state on disk is unknown (the kernel may have dropped
                // the dirty pages), so the master never retries it and takes no more changes; lookups go on.
                wal.onFailure(reason -> {
                    pages.refuseChanges(reason + (fenced ? "; this master accepts no changes until it is restarted (lookups still work)"
                            : "; the master accepts no changes until it is restarted (lookups still work): "
                            + "fix the cause, then restart it to recover from the log"));
                    LOG.error("{}", pages.refusal());
                });
            }
            Snapshotter snapshotter = new Snapshotter(pages, wal, stateDir, init.layout(), options.snapshotRetention(), options.settings(),
                    lastSequence);
            if (fenced) {
                snapshotter.fence(epoch, leaseValid);
            }
            MasterMetrics metrics = new MasterMetrics(pages, wal);
            metrics.watchSnapshots(snapshotter);
            if (kvEvents != null) {
                metrics.kvEvents(kvEvents);
            }
            WriteAheadLog log = wal;
            // Under HA the log checks the lease after each fsync, before the answer: a leader whose lease may have lapsed
            // answers nothing durable.
            MasterGrpcService.Durability durability = log == null
                    ? sequence -> java.util.concurrent.CompletableFuture.completedFuture(null) : log::whenDurable;
            MasterGrpcService service = new MasterGrpcService(pages, init.layout(), options.fsType(), durability, snapshotter);
            service.answerOn(loops);
            MasterServer.limitSessions(service, options);
            // Nodes register again after a restart or with the leader of a new term: the registry, like Mooncake's, lives
            // in memory only.
            ClientRegistry clients = new ClientRegistry(MasterServer.clientTtl(options), System::nanoTime);
            service.serveClients(clients);
            ServerServiceDefinition served = MasterServer.intercepted(service, security, metrics);
            if (fenced) {
                served = ServerInterceptors.intercept(served, leaseGuard);
            }
            return new Assembled(pages, bucketFiles, snapshotter, metrics, service, clients, served, kvEvents, options);
        }
    }
}
