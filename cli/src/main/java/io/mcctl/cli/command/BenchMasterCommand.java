package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.LatencyRecorder;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.bench.MappingMemory;
import io.mcctl.cli.bench.MasterBenchmark;
import io.mcctl.cli.bench.MasterProcess;
import io.mcctl.cli.bench.ProcessCpu;
import io.mcctl.master.client.ClientSecurity;
import java.util.function.LongSupplier;
import io.mcctl.cli.bench.TcpEcho;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.server.MasterServer;
import io.mcctl.master.server.MasterSettings;
import io.mcctl.storage.config.DurationParser;
import io.mcctl.storage.config.SizeParser;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl bench master}: page RPC throughput, latency and the master's CPU per key, unary beside stream, with a TCP echo as the floor. */
@Command(name = "master", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Offload cycles (BatchAllocate + Notify, no data) and mapping lookups (BatchGetDistributedPageMapping)",
                "from client threads at batch sizes 1 and 64 (at 64 also packed: one array of placements per batch), each phase",
                "once as unary calls and once over the Session stream,",
                "for a fixed time after a warm-up pass of every phase, against a master started as its own process on a temporary",
                "root (write-ahead log on) or --master. Reports the master's CPU per key and per call (from /proc of its process),",
                "the cores the callers' side used, the stream's gains over unary calls, a plain TCP echo on loopback, and master",
                "heap per mapping."})
public final class BenchMasterCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--master", paramLabel = "HOST:PORT", description = "Benchmark this running master instead of one started here.")
    String master;

    @Option(names = "--master-pid", paramLabel = "PID", description = "With --master: its process id on this machine, for its CPU per key.")
    Long masterPid;

    @Option(names = "--master-jvm-option", paramLabel = "OPTION",
            description = "A JVM option for the master started here, after those mcctl master starts with (-XX:+UseTransparentHugePages "
                    + "where the kernel offers huge pages) and those of --master-heap, e.g. "
                    + "-XX:StartFlightRecording=filename=master.jfr (repeatable).")
    List<String> masterJvmOptions = new ArrayList<>();

    @Option(names = "--master-busy-poll", paramLabel = "DURATION",
            description = "The masters started here poll their connections for this long after their last work before they sleep "
                    + "(mcctl master start --busy-poll; allowed: from 0s, off, to 1ms, e.g. 50us) (default: 0s).")
    String masterBusyPoll = "0s";

    /** --master-busy-poll as parsed; set by {@link #call} before any master starts. */
    private Duration busyPoll = Duration.ZERO;

    /** The heap the master started here gets unless --master-heap says otherwise, or a quarter of the memory if less. */
    private static final long DEFAULT_MASTER_HEAP = 4L << 30;
    /** The smallest --master-heap: less would measure the collector rather than the master. */
    private static final long MIN_MASTER_HEAP = 64L << 20;

    @Option(names = "--master-heap", paramLabel = "SIZE|grow",
            description = "Heap of the master started here, fixed at this size and touched before it serves (-Xms, -Xmx, "
                    + "-XX:+AlwaysPreTouch), as a master is best run; 'grow' leaves the JVM's heap that grows under load, "
                    + "the kernel zeroing each new page while the phases run (default: 4GiB, or a quarter of the machine's "
                    + "memory where that is less).")
    String masterHeap;

    /** The JVM options of --master-heap; set by {@link #call} before any master starts. */
    private List<String> heapOptions = List.of();

    @Option(names = "--threads", paramLabel = "N", defaultValue = "8", description = "Client threads (default: ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--seconds", paramLabel = "S", defaultValue = "5", description = "Measured seconds per phase (default: ${DEFAULT-VALUE}).")
    double seconds;

    @Option(names = "--warmup-seconds", paramLabel = "S", defaultValue = "4",
            description = "Seconds per phase of the unmeasured warm-up pass over every phase, for the JIT (default: ${DEFAULT-VALUE}).")
    double warmupSeconds;

    /** The tier of the master started here unless --buckets and --bucket-size say otherwise; its pages are always 64 KiB. */
    private static final String DEFAULT_BUCKETS = "256";
    private static final String DEFAULT_BUCKET_SIZE = "4GiB";
    private static final String PAGE_SIZE = "64KiB";

    @Option(names = "--buckets", paramLabel = "N", defaultValue = DEFAULT_BUCKETS,
            description = "Buckets of the master started here (default: ${DEFAULT-VALUE}). A tier the offload phases fill "
                    + "(say 8 of 1GiB: 131,072 pages of 64KiB) measures them with the evictor at work.")
    int buckets;

    @Option(names = "--bucket-size", paramLabel = "SIZE", defaultValue = DEFAULT_BUCKET_SIZE,
            description = "Bucket size of the master started here (default: ${DEFAULT-VALUE}).")
    String bucketSize;

    @Option(names = "--memory-mappings", paramLabel = "N", defaultValue = "1000000",
            description = "Mappings for the heap-per-mapping figure; 0 skips it (default: ${DEFAULT-VALUE}).")
    int memoryMappings;

    @Option(names = "--compare-durability", description = "Also run every phase against a second master started here with "
            + "--durability snapshot (the design RFC's: nothing logged, periodic snapshots only), after the one with the "
            + "write-ahead log, with its own warm-up pass, and report snapshot over WAL for each phase.")
    boolean compareDurability;

    @Option(names = "--security", description = "Also run the offload and lookup phases against embedded masters with plaintext, "
            + "with tokens, and with TLS and tokens, one after the other in this run (needs openssl on PATH for the certificates).")
    boolean security;

    /** Objects each master evicted over its run (warm-up included), by "wal master", "snapshot master" or "master" (--master). */
    private final Map<String, Long> evictedKeys = new LinkedHashMap<>();

    /** Keys each caller keeps for the lookup phases. */
    private static final int LOOKUP_KEYS_PER_THREAD = 50_000;
    /** The largest batch of {@link #SPECS}: a lookup phase needs a batch of keys per caller. */
    private static final int LOOKUP_BATCH = 64;
    /** Bytes of each object the offload phases allocate. */
    private static final long OBJECT_SIZE = 64 << 10;

    /** One phase: offload cycles or lookups, by {@code callers} threads (0: --threads), answered packed or not. */
    private record PhaseSpec(boolean offload, int callers, int batch, boolean packed) {
    }

    private static final List<PhaseSpec> SPECS = List.of(new PhaseSpec(true, 0, 1, false), new PhaseSpec(true, 0, 64, false),
            new PhaseSpec(true, 0, 64, true), new PhaseSpec(false, 0, 1, false), new PhaseSpec(false, 0, 64, false), new PhaseSpec(false, 0, 64, true),
            new PhaseSpec(false, 1, 1, false));

    @Override
    public Integer call() throws Exception {
        if (threads < 1 || threads > 256) {
            throw new CliException(ExitCodes.USAGE, "invalid --threads " + threads + ": allowed is 1 to 256");
        }
        if (!(seconds >= 0.1 && seconds <= 3600)) {
            throw new CliException(ExitCodes.USAGE, "invalid --seconds " + seconds + ": allowed is 0.1 to 3600");
        }
        if (!(warmupSeconds >= 0 && warmupSeconds <= 3600)) {
            throw new CliException(ExitCodes.USAGE, "invalid --warmup-seconds " + warmupSeconds + ": allowed is 0 to 3600");
        }
        if (security && master != null) {
            throw new CliException(ExitCodes.USAGE, "--security runs its own embedded masters: leave out --master");
        }
        if (masterPid != null && master == null) {
            throw new CliException(ExitCodes.USAGE, "--master-pid names the process of --master: give --master too, or neither");
        }
        if (!masterJvmOptions.isEmpty() && master != null) {
            throw new CliException(ExitCodes.USAGE, "--master-jvm-option is for the master started here: leave out --master");
        }
        if (masterHeap != null && master != null) {
            throw new CliException(ExitCodes.USAGE, "--master-heap is for the master started here: leave out --master");
        }
        this.heapOptions = masterHeap == null ? fixedHeap(defaultMasterHeap()) : parseMasterHeap(masterHeap);
        try {
            this.busyPoll = MasterSettings.parseBusyPoll(masterBusyPoll);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --master-busy-poll " + masterBusyPoll + ": allowed is " + MasterSettings.BUSY_POLL.allowed());
        }
        if (!busyPoll.isZero() && master != null) {
            throw new CliException(ExitCodes.USAGE, "--master-busy-poll is for the master started here: leave out --master");
        }
        if (compareDurability && master != null) {
            throw new CliException(ExitCodes.USAGE, "--compare-durability starts its own masters: leave out --master");
        }
        if (buckets < 1 || buckets > 4096) {
            throw new CliException(ExitCodes.USAGE, "invalid --buckets " + buckets + ": allowed is 1 to 4096");
        }
        long bucketBytes = BenchCacheCommand.size("--bucket-size", bucketSize);
        if (bucketBytes % SizeParser.parse(PAGE_SIZE) != 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --bucket-size " + bucketSize + ": allowed is a multiple of the " + PAGE_SIZE + " page");
        }
        if (master != null && (buckets != Integer.parseInt(DEFAULT_BUCKETS) || bucketBytes != SizeParser.parse(DEFAULT_BUCKET_SIZE))) {
            throw new CliException(ExitCodes.USAGE, "--buckets and --bucket-size are for the master started here: leave out --master");
        }
        if (memoryMappings < 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --memory-mappings " + memoryMappings + ": allowed is 0 or more");
        }
        if (masterPid != null) {
            ProcessCpu.ofPid(masterPid); // fails now, naming the pid, rather than after the warm-up
        }
        String target = master == null ? null : MasterClient.checkTarget(master);
        Map<String, Object> report = new LinkedHashMap<>();
        List<MasterBenchmark.Phase> phases = phasesAgainst(target, "wal");
        List<MasterBenchmark.Phase> snapshotPhases = compareDurability ? phasesAgainst(null, "snapshot") : List.of();
        List<Map<String, Object>> securityRows = security ? securityComparison() : List.of();
        LatencyRecorder echo = TcpEcho.measure(20_000);
        double echoP50 = echo.percentileMicros(0.5);
        MasterBenchmark.Phase singleLookup = phases.get(phases.size() - 1);
        MappingMemory.Figure memory = memoryMappings > 0 ? MappingMemory.measure(memoryMappings, 32) : null;

        report.put("benchmark", "master");
        Map<String, Object> machine = MachineInfo.describe();
        report.put("machine", machine);
        report.put("master", master != null ? target : "its own process (" + buckets + " x " + bucketSize + " buckets, " + PAGE_SIZE + " pages, temporary root, WAL)"
                + (compareDurability ? ", then another with --durability snapshot" : ""));
        List<String> startedWith = master == null ? MasterProcess.jvmOptionsFor(masterJvmOptions()) : null; // what its master ran with
        if (startedWith != null) {
            report.put("master_jvm_options", startedWith);
            report.put("master_busy_poll", DurationParser.format(busyPoll));
        }
        report.put("threads", threads);
        report.put("seconds_per_phase", seconds);
        report.put("warmup_seconds_per_phase", warmupSeconds);
        List<Map<String, Object>> rows = new ArrayList<>();
        for (MasterBenchmark.Phase p : phases) {
            rows.add(phaseRow(new LinkedHashMap<>(), p));
        }
        report.put("phases", rows);
        if (compareDurability) {
            List<Map<String, Object>> snapshotRows = new ArrayList<>();
            for (MasterBenchmark.Phase p : snapshotPhases) {
                snapshotRows.add(phaseRow(new LinkedHashMap<>(), p));
            }
            report.put("snapshot_durability_phases", snapshotRows);
            report.put("snapshot_over_wal", durabilityRatios(phases, snapshotPhases));
        }
        List<Map<String, Object>> gains = gains(phases);
        report.put("stream_over_unary", gains);
        if (security) {
            report.put("security", securityRows);
        }
        report.put("objects_evicted", evictedKeys);
        report.put("tcp_echo_p50_us", round(echoP50));
        report.put("tcp_echo_p99_us", round(echo.percentileMicros(0.99)));
        report.put("one_caller_single_lookup_p50_over_echo_p50", round(singleLookup.p50Micros() / echoP50));
        if (memory != null) {
            report.put("heap_bytes_per_mapping", round(memory.bytesPerMapping()));
            report.put("heap_mappings", memory.mappings());
            report.put("heap_key_length", memory.keyLength());
        }
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(report));
        } else {
            Table table = new Table("PHASE", "TRANSPORT", "CALLERS", "BATCH", "KEYS/S", "CALL p50 us", "CALL p99 us", "SERVER us/KEY",
                    "SERVER us/CALL", "SERVER CORES", "CLIENT CORES", "FAILURES");
            for (MasterBenchmark.Phase p : phases) {
                table.row(p.name(), p.transport(), p.threads(), p.batch(), Math.round(p.keysPerSecond()), round(p.p50Micros()), round(p.p99Micros()),
                        round(p.serverMicrosPerKey()), round(p.serverMicrosPerCall()), round(p.serverCores()), round(p.clientCores()), p.failures());
            }
            out.print(table.render());
            Table ratios = new Table("PHASE", "CALLERS", "BATCH", "KEYS/S stream/unary", "SERVER CPU/KEY stream/unary");
            for (Map<String, Object> g : gains) {
                ratios.row(g.get("phase"), g.get("callers"), g.get("batch"), g.get("keys_per_second_ratio"), g.get("server_cpu_per_key_ratio"));
            }
            out.print(ratios.render());
            if (compareDurability) {
                out.println("with --durability snapshot (nothing logged), in the same run:");
                Table snapshotTable = new Table("PHASE", "TRANSPORT", "CALLERS", "BATCH", "KEYS/S", "CALL p50 us", "SERVER us/KEY",
                        "KEYS/S snapshot/wal", "SERVER CPU/KEY snapshot/wal");
                List<Map<String, Object>> byDurability = durabilityRatios(phases, snapshotPhases);
                for (int i = 0; i < snapshotPhases.size(); i++) {
                    MasterBenchmark.Phase p = snapshotPhases.get(i);
                    snapshotTable.row(p.name(), p.transport(), p.threads(), p.batch(), Math.round(p.keysPerSecond()), round(p.p50Micros()),
                            round(p.serverMicrosPerKey()), byDurability.get(i).get("keys_per_second_ratio"),
                            byDurability.get(i).get("server_cpu_per_key_ratio"));
                }
                out.print(snapshotTable.render());
            }
            if (security) {
                Table byMode = new Table("TRANSPORT", "PHASE", "CALLERS", "BATCH", "KEYS/S", "CALL p50 us", "CALL p99 us", "FAILURES");
                for (Map<String, Object> row : securityRows) {
                    byMode.row(row.get("security"), row.get("phase"), row.get("callers"), row.get("batch"), row.get("keys_per_second"),
                            row.get("call_p50_us"), row.get("call_p99_us"), row.get("failures"));
                }
                out.print(byMode.render());
            }
            evictedKeys.forEach((which, evicted) -> {
                if (evicted > 0) {
                    out.println(String.format(Locale.ROOT, "the %s evicted %,d objects over its run: its tier filled", which, evicted));
                }
            });
            out.println(String.format(Locale.ROOT, "tcp echo p50 %.1f us; single-key lookup p50 (%s) is %.2fx the echo", echoP50,
                    singleLookup.transport(), singleLookup.p50Micros() / echoP50));
            if (startedWith != null) {
                out.println("master JVM options: " + (startedWith.isEmpty() ? "none" : String.join(" ", startedWith))
                        + " (transparent huge pages, kernel: " + machine.get("transparent_huge_pages") + ")");
                out.println("master busy poll: " + (busyPoll.isZero() ? "off" : DurationParser.format(busyPoll)));
            }
            if (memory != null) {
                out.println(String.format(Locale.ROOT, "master heap: %.0f bytes per mapping at %d mappings (%d-byte keys)",
                        memory.bytesPerMapping(), memory.mappings(), memory.keyLength()));
            }
        }
        out.flush();
        return ExitCodes.OK;
    }

    /**
     * Every phase of {@link #SPECS} for {@code seconds}, once per client in {@code clients} (unary, then stream), so the two
     * transports of a phase run back to back under the same load. The lookups look up the newest keys the offload phases
     * committed, no more of them than half the tier holds, so that over a tier the offloads fill they look up objects
     * the evictor has left.
     */
    private List<MasterBenchmark.Phase> timedPhases(List<MasterClient> clients, String runId, double seconds, LongSupplier serverCpu)
            throws Exception {
        List<MasterBenchmark.Phase> phases = new ArrayList<>();
        List<List<String>> written = new ArrayList<>();
        int keepPerCaller = lookupKeysPerCaller(MasterClient.bucketLayout(clients.get(0).layout()));
        for (PhaseSpec phase : SPECS) {
            int callers = phase.callers() == 0 ? threads : phase.callers();
            for (MasterClient client : clients) {
                MasterBenchmark bench = new MasterBenchmark(client, callers, OBJECT_SIZE, runId).withServerCpu(serverCpu);
                phases.add(phase.offload() ? bench.offloadFor(phase.batch(), seconds, written, keepPerCaller, phase.packed())
                        : bench.lookupFor(phase.batch(), written, seconds, phase.packed()));
            }
        }
        return phases;
    }

    /**
     * Keys each caller keeps for the lookup phases: {@link #LOOKUP_KEYS_PER_THREAD}, or fewer when all callers' would
     * make up more than half of the objects the tier holds less what the callers may hold in flight (an evictor keeps
     * the newest objects down to its low watermark, 70% unless set, and in-flight allocations count against it), but
     * never fewer than a batch.
     */
    private int lookupKeysPerCaller(BucketLayout layout) {
        long objects = layout.bucketCount() * layout.pagesPerBucket() / layout.pagesFor(OBJECT_SIZE);
        long kept = objects / 2 - (long) threads * LOOKUP_BATCH;
        return (int) Math.max(LOOKUP_BATCH, Math.min(LOOKUP_KEYS_PER_THREAD, kept / threads));
    }

    /** --master-heap's options, then --master-jvm-option's: a later option wins, so a given -Xmx overrides the heap's. */
    private List<String> masterJvmOptions() {
        List<String> options = new ArrayList<>(heapOptions);
        options.addAll(masterJvmOptions);
        return options;
    }

    /** The JVM options for a master heap of {@code text}: a size, fixed and touched up front, or "grow" for none. */
    private static List<String> parseMasterHeap(String text) {
        if ("grow".equals(text)) {
            return List.of();
        }
        long bytes;
        try {
            bytes = SizeParser.parse(text);
        } catch (IllegalArgumentException e) {
            bytes = -1;
        }
        if (bytes < MIN_MASTER_HEAP || bytes % (1 << 20) != 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --master-heap " + text + ": allowed is 'grow' or a size of whole MiB from 64MiB, such as 4GiB");
        }
        return fixedHeap(bytes);
    }

    private static List<String> fixedHeap(long bytes) {
        String mib = (bytes >> 20) + "m";
        return List.of("-Xms" + mib, "-Xmx" + mib, "-XX:+AlwaysPreTouch");
    }

    /** 4 GiB, or a quarter of the machine's memory (the JVM's own default limit) where that is less: touched up front, it must fit. */
    private static long defaultMasterHeap() {
        long memory = ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getTotalMemorySize();
        return Math.max(MIN_MASTER_HEAP, Math.min(DEFAULT_MASTER_HEAP, memory / 4 >> 20 << 20));
    }

    /**
     * Every phase, after a warm-up pass, against {@code target}, or when it is null against a master started here as
     * its own process with {@code durability} on a temporary root of its own.
     */
    private List<MasterBenchmark.Phase> phasesAgainst(String target, String durability) throws Exception {
        Path tempRoot = null;
        MasterProcess started = null;
        LongSupplier serverCpu;
        if (target != null) {
            long pid = masterPid == null ? -1 : masterPid;
            serverCpu = pid < 0 ? () -> -1 : () -> ProcessCpu.ofPid(pid);
        } else {
            tempRoot = Files.createTempDirectory("mcctl-bench-master");
            try {
                // Its standard error is kept (a few lines; the JVM names a bad --master-jvm-option there) and removed with it.
                started = MasterProcess.start(masterJvmOptions(), Duration.ofMinutes(2), builder -> { },
                        "--root", tempRoot.toString(), "--bucket-count", String.valueOf(buckets), "--bucket-size", bucketSize, "--page-size", PAGE_SIZE,
                        "--allocation-deadline", "10m", "--durability", durability, "--busy-poll", DurationParser.format(busyPoll));
            } catch (IOException | InterruptedException | RuntimeException e) {
                deleteTree(tempRoot);
                throw e;
            }
            target = started.address();
            long pid = started.process().pid();
            serverCpu = () -> ProcessCpu.ofPid(pid);
        }
        try (MasterClient unary = new MasterClient(target, Duration.ofSeconds(30), ClientSecurity.NONE, MasterClient.Transport.UNARY);
             MasterClient stream = new MasterClient(target, Duration.ofSeconds(30), ClientSecurity.NONE, MasterClient.Transport.STREAM)) {
            String runId = UUID.randomUUID().toString().substring(0, 8);
            List<MasterClient> both = List.of(unary, stream);
            if (warmupSeconds > 0) {
                timedPhases(both, runId + "w", warmupSeconds, serverCpu); // compiled code first, on both paths
            }
            List<MasterBenchmark.Phase> phases = timedPhases(both, runId, seconds, serverCpu);
            evictedKeys.put(started == null ? "master" : durability + " master", stream.stats().getEvictedKeys());
            return phases;
        } finally {
            if (started != null) {
                started.close();
            }
            if (tempRoot != null) {
                deleteTree(tempRoot);
            }
        }
    }

    /** For each phase and transport: the snapshot-durability master's figures over the WAL master's. */
    private static List<Map<String, Object>> durabilityRatios(List<MasterBenchmark.Phase> wal, List<MasterBenchmark.Phase> snapshot) {
        List<Map<String, Object>> ratios = new ArrayList<>();
        for (int i = 0; i < Math.min(wal.size(), snapshot.size()); i++) {
            ratios.add(ratioRow(wal.get(i), snapshot.get(i), true));
        }
        return ratios;
    }

    /** {@code other}'s throughput and master CPU per key over {@code base}'s, for one phase. */
    private static Map<String, Object> ratioRow(MasterBenchmark.Phase base, MasterBenchmark.Phase other, boolean withTransport) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("phase", base.name());
        if (withTransport) {
            row.put("transport", base.transport());
        }
        row.put("callers", base.threads());
        row.put("batch", base.batch());
        row.put("keys_per_second_ratio", round(other.keysPerSecond() / base.keysPerSecond()));
        row.put("server_cpu_per_key_ratio", round(other.serverMicrosPerKey() / base.serverMicrosPerKey()));
        return row;
    }

    /** For each phase run over both transports: stream over unary, for throughput and for the master's CPU per key. */
    private static List<Map<String, Object>> gains(List<MasterBenchmark.Phase> phases) {
        List<Map<String, Object>> gains = new ArrayList<>();
        for (int i = 0; i + 1 < phases.size(); i += 2) {
            gains.add(ratioRow(phases.get(i), phases.get(i + 1), false));
        }
        return gains;
    }

    /**
     * The offload and lookup phases against three embedded masters in turn: plaintext without tokens, plaintext with a
     * token on every call, and TLS with a token. Each gets its own warm-up pass and its own temporary root.
     */
    private List<Map<String, Object>> securityComparison() throws Exception {
        Path work = Files.createTempDirectory("mcctl-bench-security");
        List<Map<String, Object>> rows = new ArrayList<>();
        try {
            io.mcctl.cli.bench.TestCertificates ca = io.mcctl.cli.bench.TestCertificates.newCa(work.resolve("certs"), "bench-ca");
            io.mcctl.cli.bench.TestCertificates.Pair pair = ca.server("bench-master");
            String token = UUID.randomUUID().toString();
            Path tokens = work.resolve("tokens.yaml");
            Files.writeString(tokens, "tokens:\n  - name: bench\n    sha256: " + io.mcctl.master.security.TokenTable.sha256Hex(token)
                    + "\n    tenants: [bench]\n");
            record Mode(String name, io.mcctl.master.security.MasterSecurity master, io.mcctl.master.client.ClientSecurity client) {
            }
            List<Mode> modes = List.of(
                    new Mode("plaintext", io.mcctl.master.security.MasterSecurity.plaintext(), io.mcctl.master.client.ClientSecurity.NONE),
                    new Mode("plaintext+token", io.mcctl.master.security.MasterSecurity.of(null, null, null, tokens),
                            io.mcctl.master.client.ClientSecurity.NONE.withToken(token)),
                    new Mode("tls+token", io.mcctl.master.security.MasterSecurity.of(pair.cert(), pair.key(), null, tokens),
                            new io.mcctl.master.client.ClientSecurity(ca.caCert(), null, null, token)));
            for (Mode mode : modes) {
                Path root = Files.createDirectories(work.resolve(mode.name()));
                try (MasterServer embedded = MasterServer.start(new MasterServer.Options(new BucketLayout(root, Integer.parseInt(DEFAULT_BUCKETS), SizeParser.parse(PAGE_SIZE), SizeParser.parse(DEFAULT_BUCKET_SIZE)), "posix",
                        "127.0.0.1", 0, 0, Duration.ofSeconds(60), Duration.ofSeconds(5)), mode.master());
                     MasterClient client = new MasterClient("127.0.0.1:" + embedded.port(), Duration.ofSeconds(30), mode.client())) {
                    String runId = UUID.randomUUID().toString().substring(0, 8);
                    LongSupplier unknown = () -> -1; // in this process: its CPU is the callers' too
                    if (warmupSeconds > 0) {
                        timedPhases(List.of(client), runId + "w", warmupSeconds, unknown);
                    }
                    for (MasterBenchmark.Phase p : timedPhases(List.of(client), runId, seconds, unknown)) {
                        Map<String, Object> row = new LinkedHashMap<>();
                        row.put("security", mode.name());
                        rows.add(phaseRow(row, p));
                    }
                }
            }
        } finally {
            deleteTree(work);
        }
        return rows;
    }

    /** One phase's figures added to {@code row}, with the JSON report's field names. */
    private static Map<String, Object> phaseRow(Map<String, Object> row, MasterBenchmark.Phase p) {
        row.put("phase", p.name());
        row.put("transport", p.transport());
        row.put("callers", p.threads());
        row.put("batch", p.batch());
        row.put("keys", p.keys());
        row.put("keys_per_second", Math.round(p.keysPerSecond()));
        row.put("call_p50_us", round(p.p50Micros()));
        row.put("call_p99_us", round(p.p99Micros()));
        row.put("failures", p.failures());
        row.put("seconds", round(p.seconds()));
        row.put("calls", p.calls());
        if (p.serverCpuNanos() >= 0) {
            row.put("server_cpu_us_per_key", round(p.serverMicrosPerKey()));
            row.put("server_cpu_us_per_call", round(p.serverMicrosPerCall()));
            row.put("server_cores", round(p.serverCores()));
        }
        row.put("client_cores", round(p.clientCores()));
        return row;
    }

    static double round(double value) {
        if (Double.isNaN(value) || Double.isInfinite(value)) {
            return value;
        }
        return Math.round(value * 1000) / 1000.0;
    }

    static void deleteTree(Path root) throws IOException {
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path path : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
