package io.mcctl.master.node;

import com.google.protobuf.ByteString;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierWriter;
import io.mcctl.master.proto.v1.ClientStatus;
import io.mcctl.master.proto.v1.ErrorCode;
import io.mcctl.master.proto.v1.GetObjectRequest;
import io.mcctl.master.proto.v1.LocalDiskDescriptor;
import io.mcctl.master.proto.v1.MemoryDescriptor;
import io.mcctl.master.proto.v1.NodeServiceGrpc;
import io.mcctl.master.proto.v1.ObjectChunk;
import io.mcctl.master.proto.v1.OffloadMode;
import io.mcctl.master.proto.v1.ReadLocalObjectRequest;
import io.mcctl.master.proto.v1.Replica;
import io.mcctl.master.proto.v1.ReplicaStatus;
import io.mcctl.master.proto.v1.ReplicaType;
import io.mcctl.master.proto.v1.WriteObjectChunk;
import io.mcctl.master.proto.v1.WriteObjectHeader;
import io.mcctl.master.proto.v1.WriteObjectResponse;
import io.mcctl.master.protocol.GrpcServers;
import io.mcctl.master.protocol.WireErrors;
import io.mcctl.master.protocol.Quoted;
import io.mcctl.storage.io.BucketFileIo;
import io.mcctl.storage.io.BucketIoSelector;
import io.mcctl.storage.io.usrbio.UsrbioUnavailableException;
import io.mcctl.storage.perkey.PerKeyStore;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node ({@code mcctl node start}): registers with the master under a client id that is new at every start, pings it
 * within every TTL (registering again when the master answers NEED_REGISTER: it restarted, or this node was declared
 * dead), and serves {@link NodeServiceGrpc NodeService} on its transfer endpoint: reads of the LOCAL_DISK objects it
 * owns (the owner's side of the RPC hop), offloads through it in either mode, and reads through it.
 *
 * <p>Offloads in page mode go to pages of the shared bucket files (DISTRIBUTED_DISK: no owner); offloads with
 * page_mode false go to one file per key under the node's local disk, recorded with PutStart / PutEnd as a LOCAL_DISK
 * replica this node owns, exactly the owner-coupled model page mode replaces. With a {@link DramSegment} the node
 * also takes offloads into it (PutStart / PutEnd MEMORY), serves reads of the MEMORY objects it holds, and with the
 * shared root mounted runs a {@link PromotionWorker} that copies promotion tasks from the bucket files into the segment.
 */
public final class NodeServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger("mcctl.node");
    /** Largest object one offload through a node takes (it is gathered in memory before it is written). */
    public static final long MAX_OBJECT_BYTES = 1L << 30;

    /**
     * What a node needs. {@code localDisk} null: no per-key offloads. {@code advertiseHost} null: the listen host, or
     * this machine's host name when it listens on every address.
     */
    public record Options(String masterTarget, String listenHost, int listenPort, String advertiseHost, Path localDisk,
                          boolean pageMode, Duration callTimeout, ClientSecurity security, long memoryBytes,
                          Duration promotionInterval, BucketIoSelector.Wanted io) {

        /** A node whose IO is as its environment says (io auto unless MOONCAKE_DISTRIBUTED_IO says otherwise). */
        public Options(String masterTarget, String listenHost, int listenPort, String advertiseHost, Path localDisk,
                       boolean pageMode, Duration callTimeout, ClientSecurity security, long memoryBytes, Duration promotionInterval) {
            this(masterTarget, listenHost, listenPort, advertiseHost, localDisk, pageMode, callTimeout, security, memoryBytes,
                    promotionInterval, BucketIoSelector.Wanted.fromEnvironment());
        }

        /** A node without a DRAM segment. */
        public Options(String masterTarget, String listenHost, int listenPort, String advertiseHost, Path localDisk,
                       boolean pageMode, Duration callTimeout, ClientSecurity security) {
            this(masterTarget, listenHost, listenPort, advertiseHost, localDisk, pageMode, callTimeout, security, 0,
                    DEFAULT_PROMOTION_INTERVAL);
        }
    }

    /** How often a node with a segment and the shared root asks the master for promotion tasks. */
    public static final Duration DEFAULT_PROMOTION_INTERVAL = Duration.ofMillis(200);
    /** Tasks one promotion heartbeat asks for. */
    public static final int PROMOTION_TASKS_PER_HEARTBEAT = 8;

    private final String clientId = UUID.randomUUID().toString();
    private final Options options;
    private final MasterClient master;
    private final TierNode tier;
    private final String tierProblem;
    private final PerKeyStore localDisk;
    private final DramSegment segment;
    private final PromotionWorker promoter;
    private final TierWriter writer;
    private final ReplicaReader reader;
    private final ExecutorService handlers;
    private final ScheduledExecutorService pinger;
    /** Reports the per-key files after each registration, off the ping thread (a walk of a large tree takes a while). */
    private final ExecutorService reporter;
    private Server server;
    private String endpoint;
    private volatile long ttlMillis;

    private NodeServer(Options options, MasterClient master, TierNode tier, String tierProblem, PerKeyStore localDisk,
                       DramSegment segment) {
        this.options = options;
        this.master = master;
        this.tier = tier;
        this.tierProblem = tierProblem;
        this.localDisk = localDisk;
        this.segment = segment;
        this.writer = tier == null ? null : new TierWriter(tier);
        this.reader = new ReplicaReader(master, tier, clientId, localDisk, segment, options.callTimeout());
        this.promoter = segment == null || tier == null ? null : new PromotionWorker(master, tier, segment, clientId);
        this.handlers = Executors.newFixedThreadPool(4, r -> {
            Thread thread = new Thread(r, "mcctl-node-handler");
            thread.setDaemon(true);
            return thread;
        });
        this.pinger = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "mcctl-node-ping");
            thread.setDaemon(true);
            return thread;
        });
        this.reporter = Executors.newSingleThreadExecutor(r -> {
            Thread thread = new Thread(r, "mcctl-node-scan-meta");
            thread.setDaemon(true);
            return thread;
        });
    }

    /**
     * Opens the local disk, checks this node's mount of the shared root (a node without it serves per-key objects
     * only), allocates the DRAM segment, listens, registers with the master and starts pinging, and with a segment and
     * the shared root, taking promotion tasks. While no master answers it waits, trying again (see
     * {@link #untilMasterAnswers}).
     *
     * @throws MasterException          when the master refuses the registration or the TLS handshake fails
     * @throws DramSegment.AllocationException when the segment cannot be allocated (one line saying why)
     */
    public static NodeServer start(Options options) throws IOException {
        DramSegment segment = options.memoryBytes() == 0 ? null : DramSegment.allocate(options.memoryBytes());
        MasterClient master = new MasterClient(options.masterTarget(), options.callTimeout(), options.security());
        TierNode tier = null;
        String tierProblem = null;
        try {
            // The IO first: io usrbio that cannot be used here stops the node before it makes or registers anything.
            tier = untilMasterAnswers(master, () -> TierNode.connect(master, true, new ClientMetrics(), options.io()));
            LOG.info("bucket-file IO {}", tier.ioChoice().reason());
        } catch (MasterException | UsrbioUnavailableException e) {
            master.close();
            throw e;
        } catch (IOException | RuntimeException e) {
            tierProblem = e.getMessage();
            LOG.warn("no page mode on this node (offloads in page mode and direct DISTRIBUTED_DISK reads are off): {}", tierProblem);
        }
        PerKeyStore localDisk;
        try {
            localDisk = options.localDisk() == null ? null : PerKeyStore.open(options.localDisk());
        } catch (IOException | RuntimeException e) {
            if (tier != null) {
                tier.close();
            }
            master.close();
            throw e;
        }
        if (tier == null && localDisk == null && segment == null) {
            master.close();
            throw new IOException("nothing to serve: the shared root is not usable here (" + tierProblem
                    + ") and neither --local-disk nor --memory was given");
        }
        if (segment != null && tier == null) {
            LOG.warn("this node takes no promotion tasks: they copy from the shared root, which is not usable here");
        }
        NodeServer node = new NodeServer(options, master, tier, tierProblem, localDisk, segment);
        try {
            node.listenAndRegister();
        } catch (IOException | RuntimeException e) {
            node.close();
            throw e;
        }
        return node;
    }

    private void listenAndRegister() throws IOException {
        server = NettyServerBuilder.forAddress(new InetSocketAddress(options.listenHost(), options.listenPort()))
                .executor(handlers).addService(new Service()).build();
        try {
            server.start();
        } catch (IOException e) {
            throw new IOException("cannot listen on " + options.listenHost() + ":" + options.listenPort() + ": "
                    + (e.getCause() != null ? e.getCause().getMessage() : e.getMessage()), e);
        }
        String host = options.advertiseHost();
        if (host == null) {
            boolean wildcard = options.listenHost().equals("0.0.0.0") || options.listenHost().equals("::");
            host = wildcard ? InetAddress.getLocalHost().getHostName() : options.listenHost();
        }
        endpoint = host + ":" + server.getPort();
        ttlMillis = untilMasterAnswers(master, this::register);
        reportLocalDisk();
        // Mooncake pings every second under a 10 s TTL: ten tries before a busy node is declared dead.
        long every = Math.max(50, Math.min(1000, ttlMillis / 10));
        pinger.scheduleWithFixedDelay(this::ping, every, every, TimeUnit.MILLISECONDS);
        if (promoter != null) {
            promoter.start(options.promotionInterval());
        }
    }

    /** Longest pause between two tries while the master does not answer. */
    static final Duration MASTER_RETRY_CAP = Duration.ofSeconds(2);

    /** A call to the master that may also fail with an IOException of its own. */
    private interface MasterCall<T> {
        T call() throws IOException;
    }

    /**
     * {@code call}, tried again with a growing pause (up to {@link #MASTER_RETRY_CAP}) for as long as the master cannot be
     * reached: a node started before its master, or while masters fail over, waits for one instead of exiting. A master
     * that answers and refuses, or a TLS handshake that fails (a setting to fix, not a wait), ends the wait with that
     * error. One line when the wait starts and one when the master answers; SIGTERM stops the process meanwhile.
     */
    private static <T> T untilMasterAnswers(MasterClient master, MasterCall<T> call) throws IOException {
        long pauseMillis = 100;
        boolean waiting = false;
        while (true) {
            try {
                T answer = call.call();
                if (waiting) {
                    LOG.info("connected to the master at {}", master.target());
                }
                return answer;
            } catch (MasterException e) {
                if (!e.unreachable() || e.tlsHandshakeFailed()) {
                    throw e;
                }
                if (!waiting) {
                    waiting = true;
                    LOG.warn("waiting for the master at {}: {} (trying again every {} s at most until it answers; not serving meanwhile)",
                            master.target(), e.getMessage(), MASTER_RETRY_CAP.toSeconds());
                }
            }
            try {
                Thread.sleep(pauseMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while waiting for the master at " + master.target());
            }
            pauseMillis = Math.min(MASTER_RETRY_CAP.toMillis(), pauseMillis * 2);
        }
    }

    private long register() {
        return master.registerClient(clientId, endpoint, localDisk == null ? "" : localDisk.root().toString(), options.pageMode(),
                segment == null ? 0 : segment.size());
    }

    private volatile String lastPingFailure;

    /**
     * ScanMeta: after each registration the node walks its per-key tree and records every file it holds as a COMPLETE
     * LOCAL_DISK replica (PutStart, PutEnd with the file's CRC32C), so a master restart, or this node's own restart over
     * the same directory, does not lose objects whose files are intact. A key the master already knows (another
     * owner, or a write that raced the walk) is left as the master has it.
     */
    private void reportLocalDisk() {
        if (localDisk == null) {
            return;
        }
        reporter.execute(() -> {
            long began = System.nanoTime();
            long[] counts = new long[2];
            try {
                localDisk.scan(entry -> {
                    try {
                        master.putStart(clientId, entry.tenant(), entry.key(), entry.size(), ReplicaType.LOCAL_DISK);
                        master.putEnd(clientId, entry.tenant(), entry.key(), ReplicaType.LOCAL_DISK, entry.crc32c());
                        counts[0]++;
                    } catch (io.mcctl.master.client.MasterException e) {
                        if (e.unreachable()) {
                            throw e;
                        }
                        counts[1]++;
                    }
                });
                LOG.info("reported {} LOCAL_DISK objects of {} to the master in {} ms ({} the master already knew)", counts[0],
                        localDisk.root(), TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began), counts[1]);
            } catch (IOException | RuntimeException e) {
                LOG.warn("reporting the files of {} stopped after {}: {} (the rest are reported at the next registration)", localDisk.root(),
                        counts[0], e.getMessage());
            }
        });
    }

    private void ping() {
        try {
            if (master.ping(clientId).getClientStatus() == ClientStatus.NEED_REGISTER) {
                LOG.warn("the master at {} does not know client {} (it restarted, or this node missed its TTL): registering again; "
                        + "its MEMORY objects are gone from it and its LOCAL_DISK files are reported again", master.target(), clientId);
                if (segment != null) {
                    segment.reset(); // the new registration starts with the whole segment free
                }
                ttlMillis = register();
                reportLocalDisk();
            }
            if (lastPingFailure != null) {
                LOG.info("the master at {} answers pings again", master.target());
                lastPingFailure = null;
            }
        } catch (RuntimeException e) {
            if (!String.valueOf(e.getMessage()).equals(lastPingFailure)) {
                lastPingFailure = String.valueOf(e.getMessage());
                LOG.warn("ping failed: {} (will keep trying)", lastPingFailure);
            }
        }
    }

    public String clientId() {
        return clientId;
    }

    /** host:port other nodes reach this one at. */
    public String endpoint() {
        return endpoint;
    }

    public int port() {
        return server.getPort();
    }

    public long ttlMillis() {
        return ttlMillis;
    }

    /** Why this node has no page mode, or null when it has. */
    public String tierProblem() {
        return tierProblem;
    }

    /** How this node moves bucket-file bytes ({@code posix} or {@code usrbio}), or {@code none} without the shared root. */
    public String ioMode() {
        return tier == null ? "none" : tier.ioChoice().mode().text();
    }

    public PerKeyStore localDisk() {
        return localDisk;
    }

    /** The DRAM segment, or null when this node has none. */
    public DramSegment segment() {
        return segment;
    }

    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
    }

    @Override
    public void close() {
        pinger.shutdownNow();
        reporter.shutdownNow();
        if (promoter != null) {
            promoter.close();
        }
        if (server != null) {
            GrpcServers.stop(server);
        }
        handlers.shutdownNow();
        reader.close();
        try {
            if (tier != null) {
                tier.close();
            }
        } catch (IOException e) {
            LOG.warn("closing the bucket files failed: {}", e.getMessage());
        }
        master.close();
    }

    // ---- the offload paths ----

    private Replica offload(WriteObjectHeader header, ByteBuffer data) throws IOException {
        if (header.getMode() == OffloadMode.MEMORY_SEGMENT) {
            return offloadToMemory(header.getTenantId(), header.getKey(), data);
        }
        boolean pageMode = switch (header.getMode()) {
            case PAGE_MODE -> true;
            case PER_KEY -> false;
            default -> options.pageMode();
        };
        if (pageMode) {
            if (writer == null) {
                throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "node " + clientId + " has no page mode (" + tierProblem
                        + "): offload with page_mode false, or mount the shared root here");
            }
            TierWriter.Outcome outcome = writer.offload(header.getTenantId(), List.of(new TierWriter.ObjectSource(header.getKey(),
                    List.of(data))), false).get(0);
            if (!outcome.ok()) {
                throw WireErrors.exception(outcome.code(), outcome.message());
            }
            return Replica.newBuilder().setType(ReplicaType.DISTRIBUTED_DISK).setStatus(ReplicaStatus.COMPLETE)
                    .setDistributedDisk(outcome.descriptor()).build();
        }
        if (localDisk == null) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "node " + clientId
                    + " has no local disk: start it with --local-disk DIR for offloads with page_mode false");
        }
        String tenant = header.getTenantId();
        String key = header.getKey();
        master.putStart(clientId, tenant, key, data.remaining(), ReplicaType.LOCAL_DISK);
        int crc;
        try {
            crc = localDisk.write(tenant, key, List.of(data));
        } catch (IOException | RuntimeException e) {
            revokeQuietly(tenant, key, ReplicaType.LOCAL_DISK);
            throw e;
        }
        try {
            master.putEnd(clientId, tenant, key, ReplicaType.LOCAL_DISK, crc);
        } catch (MasterException e) {
            // The master did not record it (this node was declared dead meanwhile, say): the file would be an orphan.
            localDisk.delete(tenant, key);
            throw e;
        }
        return Replica.newBuilder().setType(ReplicaType.LOCAL_DISK).setStatus(ReplicaStatus.COMPLETE)
                .setLocalDisk(LocalDiskDescriptor.newBuilder().setClientId(clientId).setTransportEndpoint(endpoint)
                        .setObjectSize(data.remaining()).setCrc32C(crc)).build();
    }

    /**
     * PutStart(MEMORY), the bytes copied into the range of this node's segment the master gave, PutEnd with their
     * CRC32C; PutRevoke when the copy cannot be made or this node registered again meanwhile.
     */
    private Replica offloadToMemory(String tenant, String key, ByteBuffer data) {
        if (segment == null) {
            throw WireErrors.exception(ErrorCode.INVALID_PARAMS, "node " + clientId
                    + " has no DRAM segment: start it with --memory SIZE for offloads to MEMORY");
        }
        long size = data.remaining();
        long epoch = segment.epoch();
        MemoryDescriptor where = master.putStart(clientId, tenant, key, size, ReplicaType.MEMORY).getMemory();
        String problem = where.getSize() != size ? "the master staged " + where.getSize() + " bytes for an object of " + size
                : !where.getClientId().equals(clientId) ? "the master staged it on client " + where.getClientId() + ", not this node"
                : segment.checkRange(where.getBufferAddress(), size);
        if (problem != null) {
            revokeQuietly(tenant, key, ReplicaType.MEMORY);
            throw WireErrors.exception(ErrorCode.INTERNAL_ERROR, "offload of " + Quoted.of(key) + " to MEMORY: " + problem);
        }
        segment.claim(tenant, key, where.getBufferAddress(), size);
        segment.copyIn(where.getBufferAddress(), data);
        int crc = BucketFileIo.crc32c(data.duplicate());
        if (!segment.index(epoch, tenant, key, where.getBufferAddress(), size, crc)) {
            revokeQuietly(tenant, key, ReplicaType.MEMORY);
            throw new NodeException(Status.Code.UNAVAILABLE, "node " + clientId + " registered with the master again while it wrote "
                    + Quoted.of(key) + ": offload it again");
        }
        try {
            master.putEnd(clientId, tenant, key, ReplicaType.MEMORY, crc);
        } catch (MasterException e) {
            segment.forget(tenant, key, where.getBufferAddress());
            throw e;
        }
        return Replica.newBuilder().setType(ReplicaType.MEMORY).setStatus(ReplicaStatus.COMPLETE)
                .setMemory(where.toBuilder().setCrc32C(crc)).build();
    }

    private void revokeQuietly(String tenant, String key, ReplicaType type) {
        try {
            master.putRevoke(clientId, tenant, key, type);
        } catch (MasterException e) {
            LOG.warn("PutRevoke of '{}' failed: {}", key, e.getMessage());
        }
    }

    /** A failure as the status a NodeService caller gets. */
    private static StatusRuntimeException toStatus(Throwable e) {
        if (e instanceof StatusRuntimeException status) {
            return status;
        }
        if (e instanceof MasterException master) {
            return master.unreachable() ? Status.UNAVAILABLE.withDescription(master.getMessage()).asRuntimeException()
                    : WireErrors.exception(master.code(), master.getMessage());
        }
        if (e instanceof NodeException node) {
            return Status.fromCode(node.code()).withDescription(node.getMessage()).asRuntimeException();
        }
        return Status.INTERNAL.withDescription(e.getClass().getSimpleName() + ": " + e.getMessage()).asRuntimeException();
    }

    /** Streams an answer whose bytes are all in {@code data}. */
    private static void streamBuffer(ServerCallStreamObserver<ObjectChunk> call, ObjectChunk header, ByteBuffer data) {
        stream(call, header, data.remaining(), (from, into) -> {
            ByteBuffer view = data.duplicate().position((int) from);
            view.limit((int) Math.min(data.limit(), from + into.remaining()));
            int n = view.remaining();
            into.put(view);
            return n;
        });
    }

    /** Where the bytes of an answer come from, chunk by chunk. */
    private interface ChunkSource {
        /** Fills {@code into} from {@code from}; returns how many bytes were put. */
        int read(long from, ByteBuffer into) throws IOException;

        default void close() {
        }
    }

    /**
     * Streams {@code size} bytes of {@code source} in chunks of {@link NodeClient#CHUNK_BYTES}, as fast as the caller
     * takes them (gRPC's onReady flow control), so a large object never sits whole in the node's send buffers.
     */
    private static void stream(ServerCallStreamObserver<ObjectChunk> call, ObjectChunk header, long size, ChunkSource source) {
        Object lock = new Object();
        long[] sent = {0};
        boolean[] finished = {false};
        Runnable pump = () -> {
            synchronized (lock) {
                try {
                    while (!finished[0] && call.isReady()) {
                        int n = (int) Math.min(NodeClient.CHUNK_BYTES, size - sent[0]);
                        ByteBuffer chunk = ByteBuffer.allocate(n);
                        if (n > 0 && source.read(sent[0], chunk) != n) {
                            throw new IOException("the object ended " + (sent[0] + chunk.position()) + " bytes in, before its " + size);
                        }
                        ObjectChunk.Builder message = sent[0] == 0 ? header.toBuilder() : ObjectChunk.newBuilder();
                        call.onNext(message.setData(ByteString.copyFrom(chunk.flip())).build());
                        sent[0] += n;
                        if (sent[0] >= size) {
                            finished[0] = true;
                            source.close();
                            call.onCompleted();
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    finished[0] = true;
                    source.close();
                    call.onError(toStatus(e));
                }
            }
        };
        call.setOnCancelHandler(() -> {
            synchronized (lock) {
                finished[0] = true;
                source.close();
            }
        });
        call.setOnReadyHandler(pump);
        pump.run();
    }

    private final class Service extends NodeServiceGrpc.NodeServiceImplBase {

        @Override
        public void readLocalObject(ReadLocalObjectRequest request, StreamObserver<ObjectChunk> observer) {
            ServerCallStreamObserver<ObjectChunk> call = (ServerCallStreamObserver<ObjectChunk>) observer;
            if (request.getReplicaType() == ReplicaType.MEMORY) {
                readMemory(request, call);
                return;
            }
            try {
                PerKeyStore.Entry entry = localDisk == null ? null : localDisk.find(request.getTenantId(), request.getKey());
                if (entry == null) {
                    throw WireErrors.exception(ErrorCode.OBJECT_NOT_FOUND, "node " + clientId + " holds no LOCAL_DISK object for key "
                            + Quoted.of(request.getKey()) + " of tenant " + request.getTenantId());
                }
                FileChannel in = FileChannel.open(entry.file(), StandardOpenOption.READ);
                stream(call, ObjectChunk.newBuilder().setObjectSize(entry.size()).setCrc32C(entry.crc32c())
                        .setReplicaType(ReplicaType.LOCAL_DISK).setSource(clientId).build(), entry.size(), new ChunkSource() {
                            @Override
                            public int read(long from, ByteBuffer into) throws IOException {
                                return PerKeyStore.readChunk(in, entry, from, into);
                            }

                            @Override
                            public void close() {
                                try {
                                    in.close();
                                } catch (IOException e) {
                                    LOG.debug("close failed", e);
                                }
                            }
                        });
            } catch (IOException | RuntimeException e) {
                observer.onError(toStatus(e));
            }
        }

        /** The bytes of a MEMORY object this node's segment holds, copied out and checked (see {@link DramSegment#read}). */
        private void readMemory(ReadLocalObjectRequest request, ServerCallStreamObserver<ObjectChunk> call) {
            DramSegment.Read read = segment == null ? null : segment.read(request.getTenantId(), request.getKey());
            if (read == null || read.miss() != null) {
                call.onError(WireErrors.exception(ErrorCode.OBJECT_NOT_FOUND, "node " + clientId + " holds no MEMORY object for key "
                        + Quoted.of(request.getKey()) + " of tenant " + request.getTenantId() + (read == null ? ": it has no DRAM segment"
                        : ": " + read.miss())));
                return;
            }
            streamBuffer(call, ObjectChunk.newBuilder().setObjectSize(read.entry().size()).setCrc32C(read.entry().crc32c())
                    .setReplicaType(ReplicaType.MEMORY).setSource(clientId).build(), read.data());
        }

        @Override
        public void getObject(GetObjectRequest request, StreamObserver<ObjectChunk> observer) {
            ServerCallStreamObserver<ObjectChunk> call = (ServerCallStreamObserver<ObjectChunk>) observer;
            NodeClient.Read read;
            try {
                read = reader.read(request.getTenantId(), request.getKey());
            } catch (RuntimeException e) {
                observer.onError(toStatus(e));
                return;
            }
            streamBuffer(call, ObjectChunk.newBuilder().setObjectSize(read.data().remaining()).setCrc32C(read.crc32c())
                    .setReplicaType(read.type()).setSource(read.source()).addAllSkipped(read.skipped()).build(), read.data());
        }

        @Override
        public StreamObserver<WriteObjectChunk> writeObject(StreamObserver<WriteObjectResponse> observer) {
            return new StreamObserver<>() {
                private WriteObjectHeader header;
                private ByteBuffer data;
                private boolean failed;

                @Override
                public void onNext(WriteObjectChunk chunk) {
                    if (failed) {
                        return;
                    }
                    if (header == null) {
                        if (!chunk.hasHeader()) {
                            fail(WireErrors.exception(ErrorCode.INVALID_PARAMS, "an offload starts with a header chunk"));
                            return;
                        }
                        header = chunk.getHeader();
                        if (header.getSize() < 1 || header.getSize() > MAX_OBJECT_BYTES) {
                            fail(WireErrors.exception(ErrorCode.INVALID_PARAMS, "size " + Long.toUnsignedString(header.getSize()) + " is outside 1.."
                                    + MAX_OBJECT_BYTES + " bytes for an offload through a node"));
                            return;
                        }
                        data = ByteBuffer.allocate((int) header.getSize());
                        return;
                    }
                    if (!chunk.hasData() || chunk.getData().size() > data.remaining()) {
                        fail(WireErrors.exception(ErrorCode.INVALID_PARAMS, chunk.hasData() ? "more bytes than the header's size "
                                + Long.toUnsignedString(header.getSize()) : "a second header in one offload"));
                        return;
                    }
                    chunk.getData().copyTo(data);
                }

                private void fail(StatusRuntimeException e) {
                    failed = true;
                    data = null;
                    observer.onError(e);
                }

                @Override
                public void onError(Throwable t) {
                    data = null; // the caller went away: nothing was recorded
                }

                @Override
                public void onCompleted() {
                    if (failed) {
                        return;
                    }
                    if (header == null || data.hasRemaining()) {
                        fail(WireErrors.exception(ErrorCode.INVALID_PARAMS, header == null ? "an offload with no header"
                                : "offload of " + Quoted.of(header.getKey()) + " ended after " + data.position() + " of " + Long.toUnsignedString(header.getSize()) + " bytes"));
                        return;
                    }
                    try {
                        Replica replica = offload(header, data.flip());
                        observer.onNext(WriteObjectResponse.newBuilder().setReplica(replica).build());
                        observer.onCompleted();
                    } catch (IOException | RuntimeException e) {
                        observer.onError(toStatus(e));
                    }
                }
            };
        }
    }
}
