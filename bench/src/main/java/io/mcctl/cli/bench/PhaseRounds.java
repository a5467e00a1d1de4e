package io.mcctl.cli.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** One phase's figures over the measured rounds; the report gives each figure's median over them. */
public record PhaseRounds(List<MasterBenchmark.Phase> rounds) {
    public String name() {
        return rounds.get(0).name();
    }

    public String transport() {
        return rounds.get(0).transport();
    }

    public int threads() {
        return rounds.get(0).threads();
    }

    public int batch() {
        return rounds.get(0).batch();
    }

    public boolean serverCpuKnown() {
        return rounds.stream().allMatch(p -> p.serverCpuNanos() >= 0);
    }

    /** Failures over every round: none hides behind a median. */
    public long failures() {
        return rounds.stream().mapToLong(MasterBenchmark.Phase::failures).sum();
    }

    /** The median of {@code figure} over the rounds (the mean of the middle two of an even number). */
    public double median(java.util.function.ToDoubleFunction<MasterBenchmark.Phase> figure) {
        double[] sorted = rounds.stream().mapToDouble(figure).sorted().toArray();
        int mid = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    }

    public double low(java.util.function.ToDoubleFunction<MasterBenchmark.Phase> figure) {
        return rounds.stream().mapToDouble(figure).min().orElse(Double.NaN);
    }

    public double high(java.util.function.ToDoubleFunction<MasterBenchmark.Phase> figure) {
        return rounds.stream().mapToDouble(figure).max().orElse(Double.NaN);
    }

    /** The median of each thread group's master CPU per key; empty when the groups' CPU was not read. */
    public Map<String, Double> medianByThread() {
        Map<String, Double> medians = new LinkedHashMap<>();
        if (serverCpuKnown()) {
            for (String group : rounds.get(0).serverCpuNanosByThread().keySet()) {
                medians.put(group, median(p -> p.serverMicrosPerKeyByThread().getOrDefault(group, 0.0)));
            }
        }
        return medians;
    }
}
