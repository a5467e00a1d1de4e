package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.Table;
import io.mcctl.cli.bench.LatencyRecorder;
import io.mcctl.cli.bench.MachineInfo;
import io.mcctl.cli.bench.MappingMemory;
import io.mcctl.cli.bench.MasterBenchmark;
import io.mcctl.cli.bench.TcpEcho;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.server.MasterServer;
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

/** {@code mcctl bench master}: page RPC throughput and latency, with a TCP echo as the floor. */
@Command(name = "master", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Offload cycles (BatchAllocate + Notify, no data) and mapping lookups (BatchGetDistributedPageMapping)",
                "from client threads at batch sizes 1 and 64, against --master or an embedded master on a temporary root;",
                "in the same run the round trip of a plain TCP echo on loopback, and master heap per mapping."})
public final class BenchMasterCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Option(names = "--master", paramLabel = "HOST:PORT", description = "Benchmark this running master instead of an embedded one.")
    String master;

    @Option(names = "--threads", paramLabel = "N", defaultValue = "8", description = "Client threads (default: ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--keys", paramLabel = "N", defaultValue = "200000",
            description = "Keys per batch-64 phase across all threads; batch 1 uses a tenth (default: ${DEFAULT-VALUE}).")
    int keys;

    @Option(names = "--memory-mappings", paramLabel = "N", defaultValue = "1000000",
            description = "Mappings for the heap-per-mapping figure; 0 skips it (default: ${DEFAULT-VALUE}).")
    int memoryMappings;

    @Option(names = "--security", description = "Also run the offload and lookup phases against embedded masters with plaintext, "
            + "with tokens, and with TLS and tokens, one after the other in this run (needs openssl on PATH for the certificates).")
    boolean security;

    @Override
    public Integer call() throws Exception {
        if (threads < 1 || threads > 256) {
            throw new CliException(ExitCodes.USAGE, "invalid --threads " + threads + ": allowed is 1 to 256");
        }
        if (keys < threads * 640) {
            throw new CliException(ExitCodes.USAGE, "invalid --keys " + keys + ": allowed is at least 640 per thread (" + threads * 640 + ")");
        }
        if (security && master != null) {
            throw new CliException(ExitCodes.USAGE, "--security runs its own embedded masters: leave out --master");
        }
        if (memoryMappings < 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --memory-mappings " + memoryMappings + ": allowed is 0 or more");
        }
        Path tempRoot = null;
        MasterServer embedded = null;
        String target;
        if (master != null) {
            target = MasterClient.checkTarget(master);
        } else {
            tempRoot = Files.createTempDirectory("mcctl-bench-master");
            embedded = MasterServer.start(new MasterServer.Options(new BucketLayout(tempRoot, 256, 64 << 10, 4L << 30), "posix",
                    "127.0.0.1", 0, 0, Duration.ofSeconds(60), Duration.ofSeconds(5)));
            target = "127.0.0.1:" + embedded.port();
        }
        Map<String, Object> report = new LinkedHashMap<>();
        List<MasterBenchmark.Phase> phases = new ArrayList<>();
        try (MasterClient client = new MasterClient(target, Duration.ofSeconds(30))) {
            String runId = UUID.randomUUID().toString().substring(0, 8);
            // A full pass at a quarter of the size first: gRPC and the page service need compiled code
            // before their figures mean anything.
            runPhases(new MasterBenchmark(client, threads, 64 << 10, runId + "w"), Math.max(threads * 640, keys / 4));
            phases.addAll(runPhases(new MasterBenchmark(client, threads, 64 << 10, runId), keys));
            MasterBenchmark oneCaller = new MasterBenchmark(client, 1, 64 << 10, runId + "s");
            List<List<String>> written = new ArrayList<>();
            oneCaller.offload(64, 5120, written);
            phases.add(oneCaller.lookup(1, written, 1));
        } finally {
            if (embedded != null) {
                embedded.close();
            }
            if (tempRoot != null) {
                deleteTree(tempRoot);
            }
        }
        List<Map<String, Object>> securityRows = security ? securityComparison() : List.of();
        LatencyRecorder echo = TcpEcho.measure(20_000);
        double echoP50 = echo.percentileMicros(0.5);
        MasterBenchmark.Phase singleLookup = phases.get(4);
        MappingMemory.Figure memory = memoryMappings > 0 ? MappingMemory.measure(memoryMappings, 32) : null;

        report.put("benchmark", "master");
        report.put("machine", MachineInfo.describe());
        report.put("master", master != null ? target : "embedded (256 x 4GiB buckets, 64KiB pages, temporary root)");
        report.put("threads", threads);
        List<Map<String, Object>> rows = new ArrayList<>();
        for (MasterBenchmark.Phase p : phases) {
            rows.add(phaseRow(new LinkedHashMap<>(), p));
        }
        report.put("phases", rows);
        if (security) {
            report.put("security", securityRows);
        }
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
            Table table = new Table("PHASE", "CALLERS", "BATCH", "KEYS", "KEYS/S", "CALL p50 us", "CALL p99 us", "FAILURES");
            for (MasterBenchmark.Phase p : phases) {
                table.row(p.name(), p.threads(), p.batch(), p.keys(), Math.round(p.keysPerSecond()), round(p.p50Micros()), round(p.p99Micros()), p.failures());
            }
            out.print(table.render());
            if (security) {
                Table byMode = new Table("TRANSPORT", "PHASE", "CALLERS", "BATCH", "KEYS/S", "CALL p50 us", "CALL p99 us", "FAILURES");
                for (Map<String, Object> row : securityRows) {
                    byMode.row(row.get("transport"), row.get("phase"), row.get("callers"), row.get("batch"), row.get("keys_per_second"),
                            row.get("call_p50_us"), row.get("call_p99_us"), row.get("failures"));
                }
                out.print(byMode.render());
            }
            out.println(String.format(Locale.ROOT, "tcp echo p50 %.1f us; single-key lookup p50 is %.2fx the echo", echoP50,
                    singleLookup.p50Micros() / echoP50));
            if (memory != null) {
                out.println(String.format(Locale.ROOT, "master heap: %.0f bytes per mapping at %d mappings (%d-byte keys)",
                        memory.bytesPerMapping(), memory.mappings(), memory.keyLength()));
            }
        }
        out.flush();
        return ExitCodes.OK;
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
                try (MasterServer embedded = MasterServer.start(new MasterServer.Options(new BucketLayout(root, 256, 64 << 10, 4L << 30), "posix",
                        "127.0.0.1", 0, 0, Duration.ofSeconds(60), Duration.ofSeconds(5)), mode.master());
                     MasterClient client = new MasterClient("127.0.0.1:" + embedded.port(), Duration.ofSeconds(30), mode.client())) {
                    String runId = UUID.randomUUID().toString().substring(0, 8);
                    runPhases(new MasterBenchmark(client, threads, 64 << 10, runId + "w"), Math.max(threads * 640, keys / 4));
                    for (MasterBenchmark.Phase p : runPhases(new MasterBenchmark(client, threads, 64 << 10, runId), keys)) {
                        Map<String, Object> row = new LinkedHashMap<>();
                        row.put("transport", mode.name());
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
        row.put("callers", p.threads());
        row.put("batch", p.batch());
        row.put("keys", p.keys());
        row.put("keys_per_second", Math.round(p.keysPerSecond()));
        row.put("call_p50_us", round(p.p50Micros()));
        row.put("call_p99_us", round(p.p99Micros()));
        row.put("failures", p.failures());
        return row;
    }

    private List<MasterBenchmark.Phase> runPhases(MasterBenchmark bench, int totalKeys) throws Exception {
        List<MasterBenchmark.Phase> phases = new ArrayList<>();
        List<List<String>> single = new ArrayList<>();
        phases.add(bench.offload(1, totalKeys / 10 / threads, single));
        List<List<String>> batched = new ArrayList<>();
        phases.add(bench.offload(64, totalKeys / threads / 64 * 64, batched));
        phases.add(bench.lookup(1, single, 1));
        phases.add(bench.lookup(64, batched, 2));
        return phases;
    }

    static double round(double value) {
        return Math.round(value * 100) / 100.0;
    }

    static void deleteTree(Path root) throws IOException {
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path path : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
