package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.cli.bench.ExactLru;
import io.mcctl.cli.bench.ZipfTrace;
import java.util.List;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code mcctl bench cache} on a tiny tier and trace, and the exact LRU model and Zipf trace it is built on. */
@Timeout(180)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class BenchCacheCommandTest {

    @Test
    void the_exact_lru_model_counts_a_hand_made_trace_right() {
        // Capacity 2. a miss, b miss, a hit, c miss (evicts b), b miss (evicts a), a miss (evicts c), b hit, b hit.
        int a = 0;
        int b = 1;
        int c = 2;
        assertEquals(3, ExactLru.hits(new int[] {a, b, a, c, b, a, b, b}, 2));
        ExactLru lru = new ExactLru(2);
        boolean[] seen = new boolean[8];
        int[] trace = {a, b, a, c, b, a, b, b};
        for (int i = 0; i < trace.length; i++) {
            seen[i] = lru.access(trace[i]);
        }
        assertArrayEquals(new boolean[] {false, false, true, false, false, false, true, true}, seen);
        // With room for all three, only the first use of each misses.
        assertEquals(5, ExactLru.hits(trace, 3));
    }

    @Test
    void a_zipf_trace_is_repeatable_in_range_and_skewed_to_the_first_ranks() {
        int[] trace = ZipfTrace.draw(300, 1.1, 20_000, 7);
        assertArrayEquals(trace, ZipfTrace.draw(300, 1.1, 20_000, 7));
        int[] counts = new int[300];
        for (int rank : trace) {
            assertTrue(rank >= 0 && rank < 300, () -> "rank " + rank);
            counts[rank]++;
        }
        assertTrue(counts[0] > counts[1] && counts[1] > counts[10] && counts[10] > counts[299], () -> counts[0] + " " + counts[1] + " " + counts[10]);
        assertFalse(java.util.Arrays.equals(trace, ZipfTrace.draw(300, 1.1, 20_000, 8)));
    }

    @Test
    void bench_cache_reports_both_hit_ratios_for_each_exponent_and_the_costs_of_eviction() throws Exception {
        CliRun run = CliRun.run("bench", "cache", "--zipf", "0.8,1.1", "--buckets", "2", "--bucket-size", "128KiB", "--requests", "400",
                // Leases shorter than a request: a tier of 16 objects read in a loop would otherwise have them all leased
                // when a miss needs room, and the offload would rightly find none.
                "--lookups", "50", "--read-lease", "1ms", "-o", "json").expectOk();
        JsonNode report = new ObjectMapper().readTree(run.out());
        assertEquals("cache", report.get("benchmark").asText());
        JsonNode tier = report.get("tier");
        assertEquals(16, tier.get("capacity_objects").asInt()); // 2 buckets of 32 pages, objects of 4 pages
        assertEquals(48, tier.get("key_space").asInt());
        JsonNode runs = report.get("runs");
        assertEquals(2, runs.size());
        for (int i = 0; i < 2; i++) {
            JsonNode r = runs.get(i);
            assertEquals(List.of(0.8, 1.1).get(i), r.get("zipf").asDouble());
            assertEquals(400, r.get("requests").asInt());
            for (String ratio : List.of("tier_hit_ratio", "lru_hit_ratio", "lru_at_resident_hit_ratio")) {
                double value = r.get(ratio).asDouble();
                assertTrue(value > 0 && value < 1, () -> ratio + " " + r);
            }
            int[] trace = ZipfTrace.draw(48, r.get("zipf").asDouble(), 400, 1);
            assertEquals(ExactLru.hits(trace, 16), r.get("lru_hits").asLong(), r::toString);
            assertEquals(r.get("tier_hits").asDouble() / r.get("lru_hits").asDouble(), r.get("hit_ratio_over_lru").asDouble(), 1e-4);
            assertEquals(0, r.get("trace_offload_failures").asLong(), r::toString);
            assertTrue(r.get("evicted_during_full_offloads").asLong() > 0, r::toString);
            for (String figure : List.of("offload_empty_per_second", "offload_full_per_second", "lookup_idle_p99_us", "lookup_evicting_p99_us",
                    "offload_full_over_empty", "lookup_evicting_p99_over_idle")) {
                assertTrue(r.get(figure).asDouble() > 0, () -> figure + " " + r);
            }
        }
    }

    @Test
    void bench_cache_samples_the_fragmentation_score_every_n_requests_and_at_the_end_with_objects_of_many_sizes() throws Exception {
        CliRun run = CliRun.run("bench", "cache", "--zipf", "0.8", "--buckets", "2", "--bucket-size", "256KiB", "--requests", "600",
                "--object-size", "4KiB", "--object-size-max", "28KiB", "--fragmentation-every", "150", "--lookups", "50", "--read-lease", "1ms",
                "-o", "json").expectOk();
        JsonNode r = new ObjectMapper().readTree(run.out()).get("runs").get(0);
        JsonNode samples = r.get("fragmentation");
        assertEquals(4, samples.size(), r::toString); // at 150, 300, 450 and the end, 600
        for (int i = 0; i < samples.size(); i++) {
            JsonNode sample = samples.get(i);
            assertEquals(150 * (i + 1), sample.get("request").asInt());
            double score = sample.get("fragmentation_score").asDouble();
            assertTrue(score >= 0 && score <= 1, sample::toString);
            assertTrue(sample.get("bucket_score_worst").asDouble() >= sample.get("bucket_score_mean").asDouble(), sample::toString);
            assertTrue(sample.get("used_share").asDouble() > 0.5, () -> "the trace keeps the tier full: " + sample);
        }
        assertEquals(samples.get(3), r.get("fragmentation_end"));
        assertEquals(0, r.get("trace_offload_failures").asLong(), () -> "allocation keeps working at the high watermark: " + r);

        CliRun text = CliRun.run("bench", "cache", "--zipf", "1.1", "--buckets", "2", "--bucket-size", "256KiB", "--requests", "200",
                "--object-size", "4KiB", "--object-size-max", "28KiB", "--fragmentation-every", "100", "--lookups", "50", "--read-lease", "1ms")
                .expectOk();
        assertTrue(text.out().contains("zipf 1.1, request 100: fragmentation "), text.out());
        assertTrue(text.out().contains("zipf 1.1: fragmentation ") && text.out().contains(" at the end"), text.out());
    }

    @Test
    void a_bad_exponent_is_one_clear_error() {
        CliRun run = CliRun.run("bench", "cache", "--zipf", "0").expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("invalid --zipf 0.0: allowed is above 0 and at most 3"), run.err());
        assertEquals(1, run.err().strip().lines().count(), run.err());
    }

    @Test
    void watermarks_out_of_order_are_one_clear_error() {
        CliRun run = CliRun.run("bench", "cache", "--eviction-high-watermark", "0.8", "--eviction-low-watermark", "0.9")
                .expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("invalid --eviction-low-watermark 0.9: allowed is above 0 and at most --eviction-high-watermark 0.8"),
                run.err());
        assertEquals(1, run.err().strip().lines().count(), run.err());
    }
}
