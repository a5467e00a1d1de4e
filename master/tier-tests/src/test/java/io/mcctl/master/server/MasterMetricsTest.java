package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.TierCluster;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Prometheus metrics and health over the master's real HTTP port. */
@Timeout(60)
class MasterMetricsTest {

    @TempDir
    Path root;
    TierCluster cluster;
    MasterClient client;
    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @BeforeEach
    void start() throws IOException {
        cluster = TierCluster.start(root, 8, 0);
        client = cluster.newClient();
    }

    @AfterEach
    void stop() {
        cluster.close();
    }

    HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.metricsPort() + path))
                .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    static double value(String body, String series) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(series) + " ([0-9.eE+-]+)$").matcher(body);
        assertTrue(m.find(), "no series " + series + " in:\n" + body);
        return Double.parseDouble(m.group(1));
    }

    @Test
    void metrics_show_pages_per_bucket_page_allocations_and_rpcs_by_method() throws IOException, InterruptedException {
        client.allocate("t", "a", 3 * 4096, false);
        client.allocate("t", "b", 4096, false);
        client.stats();
        client.stats();
        assertThrows(MasterException.class, () -> client.getMapping("t", "missing"));

        HttpResponse<String> response = get("/metrics");
        assertEquals(200, response.statusCode());
        String body = response.body();
        double perBucket = 0;
        for (int b = 0; b < 8; b++) {
            perBucket += value(body, "mooncake_master_distributed_pages_allocated{bucket=\"" + b + "\"}");
        }
        assertEquals(4, perBucket, "the per-bucket gauges add up to the pages allocated");
        assertEquals(4, value(body, "mooncake_master_distributed_page_allocations_total"));
        assertEquals(2, value(body, "mcctl_master_in_flight_allocations"));
        assertEquals(2, value(body, "mcctl_master_rpc_requests_total{method=\"AllocateDistributedPage\"}"));
        assertEquals(2, value(body, "mcctl_master_rpc_requests_total{method=\"GetStats\"}"));
        assertEquals(1, value(body, "mcctl_master_rpc_failures_total{code=\"NOT_FOUND\",method=\"GetDistributedPageMapping\"}"));
        assertTrue(body.contains("mcctl_master_rpc_latency_seconds_bucket{method=\"GetStats\""), "latency by method");

        // Each allocation opened a reservation (its home bucket had none) and was answered once that was durable, without
        // waiting for its own record.
        assertEquals(2, value(body, "mcctl_master_allocations_reserved_total"));
        assertTrue(value(body, "mcctl_master_reservations_opened_total") >= 2);
        // Reservations close 2 s after they open, so on a slow machine none may be open by the scrape: only the bound holds.
        assertTrue(value(body, "mcctl_master_reservations") <= value(body, "mcctl_master_reservations_opened_total"));
        assertTrue(value(body, "mcctl_wal_records_total") >= 2, "a reservation record for each allocation at least");
        assertTrue(value(body, "mcctl_wal_syncs_total") >= 1);
        assertTrue(value(body, "mcctl_wal_bytes_total") > 0);
        assertTrue(value(body, "mcctl_wal_sync_seconds_total") > 0);
    }

    @Test
    void session_requests_are_counted_and_timed_by_kind() throws IOException, InterruptedException {
        try (MasterClient stream = new MasterClient(cluster.target(), Duration.ofSeconds(10), io.mcctl.master.client.ClientSecurity.NONE,
                MasterClient.Transport.STREAM)) {
            stream.batchGetMapping(java.util.List.of("a", "b"), java.util.List.of("t", "t"));
            stream.batchGetMapping(java.util.List.of("a"), java.util.List.of("t"));
            stream.batchRemove(java.util.List.of("a"), java.util.List.of("t"));
            assertThrows(MasterException.class, () -> stream.batchGetMapping(java.util.List.of("a"), java.util.List.of("t", "u")));
        }
        String body = get("/metrics").body();
        assertEquals(3, value(body, "mcctl_master_session_requests_total{kind=\"lookup\"}"), "three lookups, whatever their keys");
        assertEquals(1, value(body, "mcctl_master_session_requests_total{kind=\"remove\"}"));
        assertEquals(1, value(body, "mcctl_master_session_failures_total{code=\"INVALID_ARGUMENT\",kind=\"lookup\"}"));
        assertEquals(1, value(body, "mcctl_master_rpc_requests_total{method=\"Session\"}"), "one stream carried them all");
        assertTrue(body.contains("mcctl_master_session_latency_seconds_bucket{kind=\"lookup\""), "latency by kind");
    }

    @Test
    void the_health_endpoint_answers_200() throws IOException, InterruptedException {
        HttpResponse<String> response = get("/-/healthy");
        assertEquals(200, response.statusCode());
    }

    @Test
    void a_live_page_check_its_findings_each_bucket_s_longest_free_run_and_the_watermarks_are_exported() throws Exception {
        String before = get("/metrics").body();
        assertTrue(!before.contains("mcctl_master_fsck_pages{"), "no findings before the first check");
        long pagesPerBucket = cluster.layout().pagesPerBucket();
        assertEquals(pagesPerBucket, value(before, "mcctl_master_bucket_largest_free_run_pages{bucket=\"0\"}"));
        assertTrue(!cluster.master().pages().eviction().enabled() && !before.contains("mcctl_master_eviction_watermark{"),
                "no watermark series while eviction is off, as in this test's master");

        // An allocation never notified is claimed by its in-flight record: the check finds nothing wrong.
        var allocated = client.allocate("t", "a", 3 * 4096, false);
        client.checkPages(false, 0, 100);
        String after = get("/metrics").body();
        for (String finding : new String[] {"false_free", "overlap", "leaked", "young", "unsettled"}) {
            assertEquals(0, value(after, "mcctl_master_fsck_pages{finding=\"" + finding + "\"}"), finding);
        }
        assertEquals(0, value(after, "mcctl_master_fsck_counter_mismatches"));
        assertEquals(1, value(after, "mcctl_master_fsck_checks_total{repair=\"false\"}"));
        assertTrue(value(after, "mcctl_master_fsck_last_check_timestamp_seconds") > 0);
        int bucket = allocated.getDistributedDisk().getBucket();
        assertEquals(pagesPerBucket - 3, value(after, "mcctl_master_bucket_largest_free_run_pages{bucket=\"" + bucket + "\"}"),
                "the run was taken from the start of the empty bucket");
    }
}
