package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.LatencyRecorder;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.bench.MappingMemory;
import io.mcctl.cli.bench.MasterBenchmark;
import io.mcctl.cli.bench.MasterHeap;
import io.mcctl.cli.bench.MasterProcess;
import io.mcctl.cli.bench.PhaseReport;
import io.mcctl.cli.bench.PhaseRounds;
import io.mcctl.cli.bench.ProcessCpu;
import io.mcctl.cli.bench.TcpEcho;
import io.mcctl.cli.util.FileTrees;
import io.mcctl.cli.util.Rounding;
import io.mcctl.cli.util.SizeArguments;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.protocol.BatchLimits;
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
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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
                "split by its threads (transport loops, log writer, snapshots, collector, compiler, other), the cores the callers'",
                "side used, the stream's gains over unary calls, a plain TCP echo on loopback, and master heap per mapping.",
                "With --rounds, every figure is the median of that many measured passes; with a baseline (--baseline-jar,",
                "--baseline-jvm-option) or --compare-durability, the masters compared run side by side and take their rounds",
                "in turns, so that the machine's drift falls on each alike."})
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

    @Option(names = "--master-heap", paramLabel = "SIZE|grow",
            description = "Heap of the master started here, fixed at this size and touched before it serves (-Xms, -Xmx, "
                    + "-XX:+AlwaysPreTouch), as a master is best run; 'grow' leaves the JVM's heap that grows under load, "
                    + "the kernel zeroing each new page while the phases run (default: 4GiB, or a quarter of the machine's "
                    + "memory shared among the masters started at once where that is less).")
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

    @Option(names = "--compare-kv-events", description = "Also run every phase against a second master started here with KV "
            + "events on (kv_events_endpoint on a free loopback port, one subscriber reading every batch), in turns with the first, "
            + "and report its figures over the first's; every offload of both attaches one KV block per object.")
    boolean compareKvEvents;

    @Option(names = "--security", description = "Also run the offload and lookup phases against embedded masters with plaintext, "
            + "with tokens, and with TLS and tokens, one after the other in this run (needs openssl on PATH for the certificates).")
    boolean security;

    @Option(names = "--phases", paramLabel = "LIST", split = ",",
            description = "The phases to run, comma-separated, in this order whatever the list's: offload-1, offload-64, "
                    + "offload-64-packed, lookup-1, lookup-64, lookup-64-packed, lookup-1-alone (one caller) (default: all); "
                    + "offload-N, offload-N-packed, lookup-N and lookup-N-packed run batches of N keys a call (1 to "
                    + BatchLimits.MAX_BATCH + "), "
                    + "offloads first, smaller batches first. Lookups without an offload phase before them look up keys an "
                    + "unmeasured offload wrote first.")
    List<String> phaseNames;

    @Option(names = "--transport", paramLabel = "WHICH", defaultValue = "both",
            description = "Run each phase as unary calls, over the Session stream, or both, unary first (default: ${DEFAULT-VALUE}).")
    String transport;

    @Option(names = "--rounds", paramLabel = "N", defaultValue = "1",
            description = "Measured passes over the phases after the warm-up; each figure reported is the median over them, and the "
                    + "JSON report lists each round's throughput and CPU per key (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(names = "--baseline-jar", paramLabel = "JAR",
            description = "Also start a master from this mcctl jar (another build's mcctl-all.jar), beside this build's, and "
                    + "report this build over it for each phase; the two take their rounds in turns.")
    Path baselineJar;

    @Option(names = "--baseline-jvm-option", paramLabel = "OPTION",
            description = "A JVM option for the baseline master, in place of --master-jvm-option's (repeatable); given "
                    + "without --baseline-jar, the baseline is this build with these options.")
    List<String> baselineJvmOptions = new ArrayList<>();

    /** Objects each master evicted over its run (warm-up included), by "wal master", "snapshot master", "baseline master" or "master" (--master). */
    private final Map<String, Long> evictedKeys = new LinkedHashMap<>();

    /** Keys each caller keeps for the lookup phases. */
    private static final int LOOKUP_KEYS_PER_THREAD = 50_000;
    /** The batch of the offload that writes keys for lookups when no offload phase ran before them. */
    private static final int LOOKUP_BATCH = 64;
    /** Bytes of each object the offload phases allocate. */
    private static final long OBJECT_SIZE = 64 << 10;

    /** One phase, as --phases names it: offload cycles or lookups, by {@code callers} threads (0: --threads), answered packed or not. */
    private record PhaseSpec(String name, boolean offload, int callers, int batch, boolean packed) {
    }

    /** The order phases run in: offloads first, then by batch, unpacked before packed, the lone caller's lookups last. */
    private static final Comparator<PhaseSpec> PHASE_ORDER = Comparator.comparing((PhaseSpec p) -> !p.offload())
            .thenComparing(p -> p.callers() == 1).thenComparingInt(PhaseSpec::batch).thenComparing(PhaseSpec::packed);

    /** A phase of a batch size of the caller's choosing: offload-N, offload-N-packed, lookup-N, lookup-N-packed. */
    private static final Pattern BATCH_PHASE = Pattern.compile("(offload|lookup)-([1-9][0-9]{0,4})(-packed)?");

    /** Single-key lookups from one caller: the one phase whose name is not of {@link #BATCH_PHASE}'s form. */
    private static final PhaseSpec LONE_CALLER_LOOKUPS = new PhaseSpec("lookup-1-alone", false, 1, 1, false);

    /** The phases run when --phases names none, each read from its name as a named one is. */
    private static final List<PhaseSpec> SPECS = Stream.concat(
            Stream.of("offload-1", "offload-64", "offload-64-packed", "lookup-1", "lookup-64", "lookup-64-packed").map(BenchMasterCommand::phaseNamed),
            Stream.of(LONE_CALLER_LOOKUPS)).toList();

    /** The most --rounds: each is a full pass over the phases chosen. */
    private static final int MAX_ROUNDS = 100;

    /** --phases as parsed, in {@link #SPECS}' order; set by {@link #call} before any phase runs. */
    private List<PhaseSpec> chosen = SPECS;

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
        long bucketBytes = SizeArguments.positive("--bucket-size", bucketSize);
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
        if (rounds < 1 || rounds > MAX_ROUNDS) {
            throw new CliException(ExitCodes.USAGE, "invalid --rounds " + rounds + ": allowed is 1 to " + MAX_ROUNDS);
        }
        this.chosen = parsePhases(phaseNames);
        if (!List.of("unary", "stream", "both").contains(transport)) {
            throw new CliException(ExitCodes.USAGE, "invalid --transport " + transport + ": allowed is unary, stream, both");
        }
        boolean baseline = baselineJar != null || !baselineJvmOptions.isEmpty();
        if (baseline && master != null) {
            throw new CliException(ExitCodes.USAGE, "--baseline-jar and --baseline-jvm-option start a master here: leave out --master");
        }
        if (baselineJar != null && !Files.isRegularFile(baselineJar)) {
            throw new CliException(ExitCodes.USAGE, "invalid --baseline-jar " + baselineJar + ": no such file (allowed is an mcctl jar, such as "
                    + "bench/target/mcctl-all.jar of another build)");
        }
        if (compareKvEvents && master != null) {
            throw new CliException(ExitCodes.USAGE, "--compare-kv-events starts both masters here: leave out --master");
        }
        int mastersStarted = master != null ? 0 : 1 + (compareDurability ? 1 : 0) + (baseline ? 1 : 0) + (compareKvEvents ? 1 : 0);
        this.heapOptions = masterHeap == null ? MasterHeap.fixed(MasterHeap.defaultBytes(Math.max(1, mastersStarted))) : MasterHeap.parse(masterHeap);
        String target = master == null ? null : MasterClient.checkTarget(master);
        Map<String, Object> report = new LinkedHashMap<>();
        List<MasterUnderTest> masters = new ArrayList<>();
        try {
            masters.add(target != null ? attach(target) : start("wal master", null, masterJvmOptions(), "wal"));
            if (compareDurability) {
                masters.add(start("snapshot master", null, masterJvmOptions(), "snapshot"));
            }
            if (baseline) {
                masters.add(start("baseline master", baselineJar, baselineJvmOptions(), "wal"));
            }
            if (compareKvEvents) {
                masters.add(startWithKvEvents());
            }
            runRounds(masters);
        } catch (Exception e) {
            closeAll(masters, e); // what failed first is what is reported
            throw e;
        }
        closeAll(masters, null);
        List<PhaseRounds> phases = masters.get(0).phases();
        List<PhaseRounds> snapshotPhases = compareDurability ? masters.get(1).phases() : List.of();
        List<PhaseRounds> baselinePhases = baseline ? masters.get(masters.size() - (compareKvEvents ? 2 : 1)).phases() : List.of();
        List<PhaseRounds> kvEventPhases = compareKvEvents ? masters.get(masters.size() - 1).phases() : List.of();
        long kvEventBatches = compareKvEvents ? masters.get(masters.size() - 1).kvEventBatchesReceived() : 0;
        List<Map<String, Object>> securityRows = security ? securityComparison() : List.of();
        LatencyRecorder echo = TcpEcho.measure(20_000);
        double echoP50 = echo.percentileMicros(0.5);
        // The one caller's single-key lookups: the last phase, over the stream when both transports ran.
        PhaseRounds singleLookup = chosen.get(chosen.size() - 1).callers() == 1 ? phases.get(phases.size() - 1) : null;
        MappingMemory.Figure memory = memoryMappings > 0 ? MappingMemory.measure(memoryMappings, 32) : null;

        report.put("benchmark", "master");
        Map<String, Object> machine = MachineInfo.describe();
        report.put("machine", machine);
        report.put("master", master != null ? target : "its own process (" + buckets + " x " + bucketSize + " buckets, " + PAGE_SIZE + " pages, temporary root, WAL)"
                + (compareDurability ? ", beside another with --durability snapshot" : "")
                + (baseline ? ", beside a baseline master" + (baselineJar != null ? " from " + baselineJar : "") : ""));
        List<String> startedWith = master == null ? MasterProcess.jvmOptionsFor(masterJvmOptions()) : null; // what its master ran with
        if (startedWith != null) {
            report.put("master_jvm_options", startedWith);
            report.put("master_busy_poll", DurationParser.format(busyPoll));
        }
        report.put("threads", threads);
        report.put("seconds_per_phase", seconds);
        report.put("warmup_seconds_per_phase", warmupSeconds);
        report.put("rounds", rounds);
        report.put("phases_run", chosen.stream().map(PhaseSpec::name).toList());
        report.put("transport", transport);
        // Each figure's median is taken once, here; the text tables print these rows.
        List<Map<String, Object>> phaseRows = PhaseReport.rows(phases);
        List<Map<String, Object>> snapshotRows = PhaseReport.rows(snapshotPhases);
        List<Map<String, Object>> snapshotRatios = PhaseReport.ratios(phases, snapshotPhases);
        List<Map<String, Object>> baselineRows = PhaseReport.rows(baselinePhases);
        List<Map<String, Object>> baselineRatios = PhaseReport.ratios(baselinePhases, phases);
        report.put("phases", phaseRows);
        if (compareDurability) {
            report.put("snapshot_durability_phases", snapshotRows);
            report.put("snapshot_over_wal", snapshotRatios);
        }
        if (baseline) {
            Map<String, Object> described = new LinkedHashMap<>();
            described.put("jar", baselineJar == null ? "this build" : baselineJar.toString());
            described.put("jvm_options", MasterProcess.jvmOptionsFor(baselineJvmOptions()));
            report.put("baseline", described);
            report.put("baseline_phases", baselineRows);
            report.put("this_over_baseline", baselineRatios);
        }
        List<Map<String, Object>> kvEventRows = PhaseReport.rows(kvEventPhases);
        List<Map<String, Object>> kvEventRatios = PhaseReport.ratios(phases, kvEventPhases);
        if (compareKvEvents) {
            report.put("kv_events_phases", kvEventRows);
            report.put("kv_events_over_off", kvEventRatios);
            report.put("kv_event_batches_received", kvEventBatches);
        }
        List<Map<String, Object>> gains = "both".equals(transport) ? PhaseReport.gains(phases) : List.of();
        if ("both".equals(transport)) {
            report.put("stream_over_unary", gains);
        }
        if (security) {
            report.put("security", securityRows);
        }
        report.put("objects_evicted", evictedKeys);
        report.put("tcp_echo_p50_us", Rounding.roundFinite(echoP50, 3));
        report.put("tcp_echo_p99_us", Rounding.roundFinite(echo.percentileMicros(0.99), 3));
        if (singleLookup != null) {
            report.put("one_caller_single_lookup_p50_over_echo_p50", Rounding.roundFinite(singleLookup.median(MasterBenchmark.Phase::p50Micros) / echoP50, 3));
        }
        if (memory != null) {
            report.put("heap_bytes_per_mapping", Rounding.roundFinite(memory.bytesPerMapping(), 3));
            report.put("heap_mappings", memory.mappings());
            report.put("heap_key_length", memory.keyLength());
        }
        PrintWriter out = spec.commandLine().getOut();
        if (output.json()) {
            out.println(OutputMixin.toJson(report));
        } else {
            if (rounds > 1) {
                out.println("figures are medians of " + rounds + " rounds; the masters compared took their rounds in turns");
            }
            List<String> headers = new ArrayList<>(List.of("PHASE", "TRANSPORT", "CALLERS", "BATCH", "KEYS/S", "CALL p50 us", "CALL p99 us",
                    "SERVER us/KEY", "SERVER us/CALL", "SERVER CORES", "CLIENT CORES", "FAILURES"));
            if (rounds > 1) {
                headers.add(8, "us/KEY LOW-HIGH");
            }
            Table table = new Table(headers.toArray(String[]::new));
            for (int i = 0; i < phases.size(); i++) {
                Map<String, Object> row = phaseRows.get(i);
                List<Object> cells = new ArrayList<>(List.of(row.get("phase"), row.get("transport"), row.get("callers"), row.get("batch"),
                        row.get("keys_per_second"), row.get("call_p50_us"), row.get("call_p99_us"), PhaseReport.serverFigure(row, "server_cpu_us_per_key"),
                        PhaseReport.serverFigure(row, "server_cpu_us_per_call"), PhaseReport.serverFigure(row, "server_cores"), row.get("client_cores"), row.get("failures")));
                if (rounds > 1) {
                    PhaseRounds p = phases.get(i);
                    cells.add(8, Rounding.roundFinite(p.low(MasterBenchmark.Phase::serverMicrosPerKey), 3) + "-" + Rounding.roundFinite(p.high(MasterBenchmark.Phase::serverMicrosPerKey), 3));
                }
                table.row(cells.toArray());
            }
            out.print(table.render());
            if (phaseRows.get(0).containsKey("server_cpu_us_per_key_by_thread")) {
                out.println("the master's CPU per key (us) by thread:");
                out.print(PhaseReport.byThreadTable(phaseRows));
            }
            if (!gains.isEmpty()) {
                Table byTransport = new Table("PHASE", "CALLERS", "BATCH", "KEYS/S stream/unary", "SERVER CPU/KEY stream/unary");
                for (Map<String, Object> g : gains) {
                    byTransport.row(g.get("phase"), g.get("callers"), g.get("batch"), g.get("keys_per_second_ratio"), g.get("server_cpu_per_key_ratio"));
                }
                out.print(byTransport.render());
            }
            if (compareDurability) {
                out.println("with --durability snapshot (nothing logged), in the same run:");
                out.print(PhaseReport.comparisonTable(snapshotRows, snapshotRatios, "snapshot/wal"));
            }
            if (baseline) {
                out.println("the baseline master (" + (baselineJar == null ? "this build" : baselineJar) + "; JVM options: "
                        + String.join(" ", MasterProcess.jvmOptionsFor(baselineJvmOptions())) + "), in the same run:");
                out.print(PhaseReport.comparisonTable(baselineRows, baselineRatios, "this/baseline"));
            }
            if (compareKvEvents) {
                out.println("with KV events on (a subscriber read " + kvEventBatches + " batches), in the same run:");
                out.print(PhaseReport.comparisonTable(kvEventRows, kvEventRatios, "events/off"));
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
            out.println(singleLookup == null ? String.format(Locale.ROOT, "tcp echo p50 %.1f us", echoP50)
                    : String.format(Locale.ROOT, "tcp echo p50 %.1f us; single-key lookup p50 (%s) is %.2fx the echo", echoP50,
                    singleLookup.transport(), singleLookup.median(MasterBenchmark.Phase::p50Micros) / echoP50));
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

    /** --phases as the specs they name, in {@link #SPECS}' order; all of them when none is named. */
    private static List<PhaseSpec> parsePhases(List<String> names) {
        if (names == null) {
            return SPECS;
        }
        List<PhaseSpec> parsed = new ArrayList<>();
        for (String name : names) {
            PhaseSpec spec = phaseNamed(name);
            if (spec == null) {
                throw new CliException(ExitCodes.USAGE, "invalid --phases " + String.join(",", names) + ": '" + name + "' is no phase; allowed is a "
                        + "comma-separated list of " + SPECS.stream().map(PhaseSpec::name).collect(java.util.stream.Collectors.joining(", "))
                        + ", or offload-N, offload-N-packed, lookup-N, lookup-N-packed for N from 1 to " + BatchLimits.MAX_BATCH);
            }
            if (parsed.stream().noneMatch(p -> p.name().equals(spec.name()))) {
                parsed.add(spec);
            }
        }
        parsed.sort(PHASE_ORDER);
        return parsed;
    }

    /** The phase --phases calls {@code name}, or null when none. */
    private static PhaseSpec phaseNamed(String name) {
        if (name.equals(LONE_CALLER_LOOKUPS.name())) {
            return LONE_CALLER_LOOKUPS;
        }
        Matcher batchPhase = BATCH_PHASE.matcher(name);
        if (!batchPhase.matches()) {
            return null;
        }
        int batch = Integer.parseInt(batchPhase.group(2));
        return batch > BatchLimits.MAX_BATCH ? null
                : new PhaseSpec(name, batchPhase.group(1).equals("offload"), 0, batch, batchPhase.group(3) != null);
    }

    /**
     * A master the phases run against: started here as its own process on a temporary root, or --master. Holds a client
     * per transport run, the keys its offload phases committed (the lookups look them up) and each round's figures.
     */
    private final class MasterUnderTest implements AutoCloseable {
        final String label;
        private final Path root;
        private final MasterProcess process;
        final LongSupplier cpu;
        /** CPU of each of the master's thread groups ({@link ProcessCpu#THREAD_GROUPS}); empty when it cannot be read. */
        final Supplier<Map<String, Long>> cpuByThread;
        final List<MasterClient> clients = new ArrayList<>();
        final String runId = UUID.randomUUID().toString().substring(0, 8);
        /** Per caller, the newest keys the offload phases committed, for the lookup phases. */
        final List<List<String>> written = new ArrayList<>();
        /** Per measured round, its phases in order. */
        final List<List<MasterBenchmark.Phase>> rounds = new ArrayList<>();

        /**
         * A master started here ({@code process} on {@code root}, both closed with it) or served elsewhere (both null), with a
         * client of {@code security} over each of {@code transports}.
         */
        MasterUnderTest(String label, Path root, MasterProcess process, String target, LongSupplier cpu,
                        Supplier<Map<String, Long>> cpuByThread, ClientSecurity security, List<String> transports) {
            this.label = label;
            this.root = root;
            this.process = process;
            this.cpu = cpu;
            this.cpuByThread = cpuByThread;
            try {
                for (String which : transports) {
                    clients.add(new MasterClient(target, Duration.ofSeconds(30), security,
                            "unary".equals(which) ? MasterClient.Transport.UNARY : MasterClient.Transport.STREAM));
                }
            } catch (RuntimeException e) {
                closeQuietly();
                throw e;
            }
        }

        /** Each measured round's figures, phase by phase: what the report gives medians of. */
        List<PhaseRounds> phases() {
            List<PhaseRounds> phases = new ArrayList<>();
            for (int i = 0; i < rounds.get(0).size(); i++) {
                List<MasterBenchmark.Phase> ofPhase = new ArrayList<>();
                for (List<MasterBenchmark.Phase> round : rounds) {
                    ofPhase.add(round.get(i));
                }
                phases.add(new PhaseRounds(ofPhase));
            }
            return phases;
        }

        private void closeQuietly() {
            try {
                close();
            } catch (Exception e) {
                // closing after a failure: the failure is what is reported
            }
        }

        /** Batches the subscriber of {@link #subscribe} has read. */
        private final java.util.concurrent.atomic.AtomicLong kvEventBatches = new java.util.concurrent.atomic.AtomicLong();
        private Thread subscriber;
        private volatile boolean subscribed;

        /** Reads (and drops) every batch the master publishes at {@code endpoint}, on a thread of its own, as a router would. */
        void subscribe(String endpoint) {
            subscribed = true;
            subscriber = new Thread(() -> {
                try (org.zeromq.ZContext context = new org.zeromq.ZContext()) {
                    org.zeromq.ZMQ.Socket sub = context.createSocket(org.zeromq.SocketType.SUB);
                    sub.setReceiveTimeOut(200);
                    sub.connect(endpoint);
                    sub.subscribe(new byte[0]);
                    while (subscribed) {
                        org.zeromq.ZMsg message = org.zeromq.ZMsg.recvMsg(sub);
                        if (message != null) {
                            kvEventBatches.incrementAndGet();
                        }
                    }
                }
            }, "kv-events-subscriber");
            subscriber.setDaemon(true);
            subscriber.start();
        }

        long kvEventBatchesReceived() {
            return kvEventBatches.get();
        }

        @Override
        public void close() throws Exception {
            subscribed = false;
            if (subscriber != null) {
                subscriber.join(5_000);
            }
            for (MasterClient client : clients) {
                client.close();
            }
            if (process != null) {
                process.close();
            }
            if (root != null) {
                FileTrees.deleteTree(root);
            }
        }
    }

    /** The transports --transport runs each phase over, unary first. */
    private List<String> transportsRun() {
        return "both".equals(transport) ? List.of("unary", "stream") : List.of(transport);
    }

    /** The running master of --master, its CPU read from /proc of --master-pid when given. */
    private MasterUnderTest attach(String target) {
        long pid = masterPid == null ? -1 : masterPid;
        return new MasterUnderTest("master", null, null, target, pid < 0 ? () -> -1 : () -> ProcessCpu.ofPid(pid),
                pid < 0 ? Map::of : () -> ProcessCpu.ofThreads(pid), ClientSecurity.NONE, transportsRun());
    }

    /**
     * A master started here as its own process, from {@code jar} (another mcctl build; null: this one) with {@code jvmOptions} and
     * {@code durability}, on a temporary root of its own, which goes with it.
     */
    private MasterUnderTest start(String label, Path jar, List<String> jvmOptions, String durability) throws Exception {
        return start(label, jar, jvmOptions, durability, List.of());
    }

    /** A master of this build with KV events on a free loopback port, and a subscriber reading every batch it sends. */
    private MasterUnderTest startWithKvEvents() throws Exception {
        int port;
        try (java.net.ServerSocket free = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
        }
        String endpoint = "tcp://127.0.0.1:" + port;
        MasterUnderTest m = start("kv-events master", null, masterJvmOptions(), "wal", List.of("--kv-events-endpoint", endpoint,
                "--kv-events-tenants", "bench"));
        m.subscribe(endpoint);
        return m;
    }

    private MasterUnderTest start(String label, Path jar, List<String> jvmOptions, String durability, List<String> extra) throws Exception {
        Path root = Files.createTempDirectory("mcctl-bench-master");
        MasterProcess started;
        try {
            List<String> args = new ArrayList<>(List.of("--root", root.toString(), "--bucket-count", String.valueOf(buckets), "--bucket-size", bucketSize,
                    "--page-size", PAGE_SIZE, "--allocation-deadline", "10m", "--durability", durability));
            args.addAll(extra);
            if (!busyPoll.isZero()) {
                args.addAll(List.of("--busy-poll", DurationParser.format(busyPoll))); // only when asked: an earlier build has no such flag
            }
            // Its standard error is kept (a few lines; the JVM names a bad --master-jvm-option there) and removed with it.
            started = MasterProcess.start(jar, jvmOptions, Duration.ofMinutes(2), builder -> { }, args.toArray(String[]::new));
        } catch (IOException | InterruptedException | RuntimeException e) {
            FileTrees.deleteTree(root);
            throw jar != null && e instanceof IOException ? new IOException("the baseline master from " + jar + " did not start: " + e.getMessage(), e) : e;
        }
        long pid = started.process().pid();
        return new MasterUnderTest(label, root, started, started.address(), () -> ProcessCpu.ofPid(pid), () -> ProcessCpu.ofThreads(pid),
                ClientSecurity.NONE, transportsRun());
    }

    /**
     * Closes every master, also after one fails to close. Failures to close go onto {@code failure} when the run failed
     * already (it is what the caller throws); otherwise the first is thrown, the rest added to it.
     */
    private static void closeAll(List<MasterUnderTest> masters, Exception failure) throws Exception {
        Exception first = failure;
        for (MasterUnderTest m : masters) {
            try {
                m.close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (failure == null && first != null) {
            throw first;
        }
    }

    /**
     * A warm-up pass on every master, then {@link #rounds} measured passes, the masters taking turns in an order that
     * reverses each round (A B, B A, A B, ...) so that neither always runs first; then what each evicted.
     */
    private void runRounds(List<MasterUnderTest> masters) throws Exception {
        if (warmupSeconds > 0) {
            for (MasterUnderTest m : masters) {
                timedPhases(m, m.runId + "w", warmupSeconds); // compiled code first, on every path run
            }
        }
        for (int round = 0; round < rounds; round++) {
            List<MasterUnderTest> order = new ArrayList<>(masters);
            if (round % 2 == 1) {
                java.util.Collections.reverse(order);
            }
            for (MasterUnderTest m : order) {
                m.rounds.add(timedPhases(m, m.runId + "r" + round, seconds));
            }
        }
        for (MasterUnderTest m : masters) {
            evictedKeys.put(m.label, m.clients.get(m.clients.size() - 1).stats().getEvictedKeys());
        }
    }

    /**
     * The chosen phases for {@code seconds} each against {@code m}, once per client (unary, then stream), so the two
     * transports of a phase run back to back under the same load. The lookups look up the newest keys the offload phases
     * committed, no more of them than half the tier holds, so that over a tier the offloads fill they look up objects
     * the evictor has left; with no offload phase run yet, an unmeasured offload writes them first.
     */
    private List<MasterBenchmark.Phase> timedPhases(MasterUnderTest m, String passId, double seconds) throws Exception {
        List<MasterBenchmark.Phase> phases = new ArrayList<>();
        int keepPerCaller = lookupKeysPerCaller(MasterClient.bucketLayout(m.clients.get(0).layout()));
        for (PhaseSpec phase : chosen) {
            int callers = phase.callers() == 0 ? threads : phase.callers();
            if (!phase.offload() && m.written.isEmpty()) {
                new MasterBenchmark(m.clients.get(m.clients.size() - 1), threads, OBJECT_SIZE, passId + "f").offload(LOOKUP_BATCH, keepPerCaller, m.written);
            }
            for (MasterClient client : m.clients) {
                MasterBenchmark bench = new MasterBenchmark(client, callers, OBJECT_SIZE, passId).withServerCpu(m.cpu)
                        .withServerCpuByThread(m.cpuByThread).withKvBlocks(compareKvEvents);
                phases.add(phase.offload() ? bench.offloadFor(phase.batch(), seconds, m.written, keepPerCaller, phase.packed())
                        : bench.lookupFor(phase.batch(), m.written, seconds, phase.packed()));
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
        int batch = chosen.stream().mapToInt(PhaseSpec::batch).max().orElse(1);
        long kept = objects / 2 - (long) threads * batch;
        return (int) Math.max(Math.max(LOOKUP_BATCH, batch), Math.min(LOOKUP_KEYS_PER_THREAD, kept / threads));
    }

    /** --master-heap's options, then --master-jvm-option's: a later option wins, so a given -Xmx overrides the heap's. */
    private List<String> masterJvmOptions() {
        List<String> options = new ArrayList<>(heapOptions);
        options.addAll(masterJvmOptions);
        return options;
    }

    /** The baseline master's JVM options: --master-heap's, then --baseline-jvm-option's, or the master's when none is given. */
    private List<String> baselineJvmOptions() {
        if (baselineJvmOptions.isEmpty()) {
            return masterJvmOptions();
        }
        List<String> options = new ArrayList<>(heapOptions);
        options.addAll(baselineJvmOptions);
        return options;
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
                try (MasterServer embedded = MasterServer.start(MasterServer.Options.builder(new BucketLayout(root, Integer.parseInt(DEFAULT_BUCKETS), SizeParser.parse(PAGE_SIZE), SizeParser.parse(DEFAULT_BUCKET_SIZE)))
                        .build(), mode.master());
                     // In this process: its CPU is the callers' too, so it is not read. Over the stream unless --transport unary.
                     MasterUnderTest m = new MasterUnderTest(mode.name(), null, null, "127.0.0.1:" + embedded.port(), () -> -1, Map::of,
                             mode.client(), "unary".equals(transport) ? List.of("unary") : List.of("stream"))) {
                    if (warmupSeconds > 0) {
                        timedPhases(m, m.runId + "w", warmupSeconds);
                    }
                    for (MasterBenchmark.Phase p : timedPhases(m, m.runId, seconds)) {
                        Map<String, Object> row = new LinkedHashMap<>();
                        row.put("security", mode.name());
                        rows.add(PhaseReport.phaseRow(row, new PhaseRounds(List.of(p))));
                    }
                }
            }
        } finally {
            FileTrees.deleteTree(work);
        }
        return rows;
    }
}
