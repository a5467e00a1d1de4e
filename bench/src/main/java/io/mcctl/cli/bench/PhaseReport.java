package io.mcctl.cli.bench;

import io.mcctl.cli.Table;
import io.mcctl.cli.util.Rounding;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The rows and tables of {@code mcctl bench master}'s report: each phase's medians over the rounds, and the ratios
 * that compare transports, masters and security modes.
 */
public final class PhaseReport {

    private PhaseReport() {
    }

    public static List<Map<String, Object>> rows(List<PhaseRounds> phases) {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (PhaseRounds p : phases) {
            rows.add(phaseRow(new LinkedHashMap<>(), p));
        }
        return rows;
    }

    /** For each phase and transport: {@code other}'s medians over {@code base}'s (the phases run alike on both masters). */
    public static List<Map<String, Object>> ratios(List<PhaseRounds> base, List<PhaseRounds> other) {
        List<Map<String, Object>> ratios = new ArrayList<>();
        for (int i = 0; i < Math.min(base.size(), other.size()); i++) {
            ratios.add(ratioRow(base.get(i), other.get(i), true));
        }
        return ratios;
    }

    /** {@code other}'s throughput and master CPU per key over {@code base}'s, for one phase: medians over the rounds. */
    private static Map<String, Object> ratioRow(PhaseRounds base, PhaseRounds other, boolean withTransport) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("phase", base.name());
        if (withTransport) {
            row.put("transport", base.transport());
        }
        row.put("callers", base.threads());
        row.put("batch", base.batch());
        row.put("keys_per_second_ratio", Rounding.roundFinite(other.median(MasterBenchmark.Phase::keysPerSecond) / base.median(MasterBenchmark.Phase::keysPerSecond), 3));
        row.put("server_cpu_per_key_ratio",
                Rounding.roundFinite(other.median(MasterBenchmark.Phase::serverMicrosPerKey) / base.median(MasterBenchmark.Phase::serverMicrosPerKey), 3));
        return row;
    }

    /** For each phase run over both transports: stream over unary, for throughput and for the master's CPU per key. */
    public static List<Map<String, Object>> gains(List<PhaseRounds> phases) {
        List<Map<String, Object>> gains = new ArrayList<>();
        for (int i = 0; i + 1 < phases.size(); i += 2) {
            gains.add(ratioRow(phases.get(i), phases.get(i + 1), false));
        }
        return gains;
    }

    /** A master figure of a report row, NaN where the master's CPU was not read. */
    public static Object serverFigure(Map<String, Object> row, String key) {
        return row.getOrDefault(key, Double.NaN);
    }

    /** Each phase's master CPU per key split by {@link ProcessCpu#THREAD_GROUPS}, from the report's rows. */
    public static String byThreadTable(List<Map<String, Object>> rows) {
        List<String> headers = new ArrayList<>(List.of("PHASE", "TRANSPORT", "CALLERS", "BATCH"));
        ProcessCpu.THREAD_GROUPS.forEach(group -> headers.add(group.toUpperCase(Locale.ROOT).replace('_', ' ')));
        Table table = new Table(headers.toArray(String[]::new));
        for (Map<String, Object> row : rows) {
            List<Object> cells = new ArrayList<>(List.of(row.get("phase"), row.get("transport"), row.get("callers"), row.get("batch")));
            @SuppressWarnings("unchecked")
            Map<String, Object> byThread = (Map<String, Object>) row.get("server_cpu_us_per_key_by_thread");
            ProcessCpu.THREAD_GROUPS.forEach(group -> cells.add(byThread.getOrDefault(group, 0.0)));
            table.row(cells.toArray());
        }
        return table.render();
    }

    /** A master's phases compared with the first's, from the report's rows and ratios ({@code ratioName}: which over which). */
    public static String comparisonTable(List<Map<String, Object>> rows, List<Map<String, Object>> ratios, String ratioName) {
        Table table = new Table("PHASE", "TRANSPORT", "CALLERS", "BATCH", "KEYS/S", "CALL p50 us", "SERVER us/KEY",
                "KEYS/S " + ratioName, "SERVER CPU/KEY " + ratioName);
        for (int i = 0; i < rows.size(); i++) {
            Map<String, Object> row = rows.get(i);
            table.row(row.get("phase"), row.get("transport"), row.get("callers"), row.get("batch"), row.get("keys_per_second"),
                    row.get("call_p50_us"), serverFigure(row, "server_cpu_us_per_key"),
                    ratios.get(i).get("keys_per_second_ratio"), ratios.get(i).get("server_cpu_per_key_ratio"));
        }
        return table.render();
    }

    /**
     * One phase's figures added to {@code row}, with the JSON report's field names: medians over the rounds, failures
     * summed; with more than one round, each round's throughput and master CPU per key too.
     */
    public static Map<String, Object> phaseRow(Map<String, Object> row, PhaseRounds p) {
        row.put("phase", p.name());
        row.put("transport", p.transport());
        row.put("callers", p.threads());
        row.put("batch", p.batch());
        row.put("keys", Math.round(p.median(MasterBenchmark.Phase::keys)));
        row.put("keys_per_second", Math.round(p.median(MasterBenchmark.Phase::keysPerSecond)));
        row.put("call_p50_us", Rounding.roundFinite(p.median(MasterBenchmark.Phase::p50Micros), 3));
        row.put("call_p99_us", Rounding.roundFinite(p.median(MasterBenchmark.Phase::p99Micros), 3));
        row.put("failures", p.failures());
        row.put("seconds", Rounding.roundFinite(p.median(MasterBenchmark.Phase::seconds), 3));
        row.put("calls", Math.round(p.median(MasterBenchmark.Phase::calls)));
        if (p.serverCpuKnown()) {
            row.put("server_cpu_us_per_key", Rounding.roundFinite(p.median(MasterBenchmark.Phase::serverMicrosPerKey), 3));
            row.put("server_cpu_us_per_call", Rounding.roundFinite(p.median(MasterBenchmark.Phase::serverMicrosPerCall), 3));
            row.put("server_cores", Rounding.roundFinite(p.median(MasterBenchmark.Phase::serverCores), 3));
            Map<String, Double> byThread = p.medianByThread();
            if (!byThread.isEmpty()) {
                Map<String, Object> rounded = new LinkedHashMap<>();
                byThread.forEach((group, micros) -> rounded.put(group, Rounding.roundFinite(micros, 3)));
                row.put("server_cpu_us_per_key_by_thread", rounded);
            }
        }
        row.put("client_cores", Rounding.roundFinite(p.median(MasterBenchmark.Phase::clientCores), 3));
        if (p.rounds().size() > 1) {
            row.put("keys_per_second_rounds", p.rounds().stream().map(r -> Math.round(r.keysPerSecond())).toList());
            if (p.serverCpuKnown()) {
                row.put("server_cpu_us_per_key_rounds", p.rounds().stream().map(r -> Rounding.roundFinite(r.serverMicrosPerKey(), 3)).toList());
            }
        }
        return row;
    }
}
