package io.mcctl.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dashboard's queries and the rules' expressions against a real Prometheus (Debian's) that scrapes a real master
 * of the release under a little load. The master runs as operators run it in production: high availability on etcd,
 * TLS (so Prometheus scrapes HTTPS), tokens and KV events; the load offloads past the eviction watermark in two tenants, reads
 * hits and misses, runs a live fsck and makes one call with a wrong token, so that every series the queries name exists.
 *
 * <p>Every metric an expression names must have series in Prometheus (the master exports it, or a recording rule of
 * the shipped rules file records it, or it is Prometheus's own {@code up}); every label a selector matches on must be
 * a label of that metric's series, and every label an expression groups by must be a label of a metric it names.
 * Each dashboard query (with its variables set to match everything) and each recording rule must return series, and
 * each legend's {{label}} must be a label of what its query returns. Alert expressions must evaluate; most are quiet.
 */
@Timeout(600)
@Tag("process")
class DashboardAndRulesLiveTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern LEGEND_LABEL = Pattern.compile("\\{\\{\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*}}");
    private static final Pattern LABEL_VALUES = Pattern.compile("label_values\\((.*),\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*\\)");
    private static final Pattern TRAILING_FILTER = Pattern.compile("\\s*(==|>|<)\\s*[0-9.]+\\s*$");

    @TempDir
    Path dir;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final List<String> problems = new ArrayList<>();

    @Test
    void every_dashboard_query_and_rule_expression_names_only_what_the_master_exports() throws Exception {
        Path prometheusBinary = Release.requireTool("/usr/bin/prometheus", "prometheus");
        Path etcdBinary = Release.requireTool("/usr/bin/etcd", "etcd-server");
        Path openssl = Release.requireTool("/usr/bin/openssl", "openssl");
        Release release = Release.unpack(dir);
        Path work = Files.createDirectories(dir.resolve("work"));

        Path tls = certificates(openssl, work);
        String token = "a9e3c1d85b7f40c2a9e3c1d85b7f40c2";
        Files.writeString(work.resolve("tokens.yaml"), "tokens:\n  - name: ops\n    sha256: " + sha256(token)
                + "\n    role: admin\n    tenants: [\"*\"]\n");

        int etcdPort = Release.freePort();
        int etcdPeer = Release.freePort();
        int port = Release.freePort();
        int metricsPort = Release.freePort();
        int prometheusPort = Release.freePort();
        int kvEventsPort = Release.freePort();
        Map<String, String> env = release.environment(work);
        try (Release.Daemon etcd = Release.Daemon.start(work, Map.of("PATH", "/usr/bin:/bin"), work.resolve("etcd.log"), List.of(
                etcdBinary.toString(), "--name", "m0", "--data-dir", work.resolve("etcd").toString(),
                "--listen-client-urls", "http://127.0.0.1:" + etcdPort, "--advertise-client-urls", "http://127.0.0.1:" + etcdPort,
                "--listen-peer-urls", "http://127.0.0.1:" + etcdPeer, "--initial-advertise-peer-urls", "http://127.0.0.1:" + etcdPeer,
                "--initial-cluster", "m0=http://127.0.0.1:" + etcdPeer));
             Release.Daemon master = Release.Daemon.start(work, env, work.resolve("master.log"), List.of(release.launcher().toString(),
                "master", "start", "--ha", "etcd://127.0.0.1:" + etcdPort, "--root", work.resolve("root").toString(),
                "--bucket-count", "4", "--bucket-size", "1MiB", "--page-size", "4KiB", "--bind", "127.0.0.1",
                "--port", Integer.toString(port), "--metrics-port", Integer.toString(metricsPort), "--snapshot-interval", "2s",
                "--tls-cert", tls.resolve("master.pem").toString(), "--tls-key", tls.resolve("master.key").toString(),
                "--tokens-file", work.resolve("tokens.yaml").toString(), "--kv-events-endpoint", "tcp://127.0.0.1:" + kvEventsPort))) {
            etcd.awaitLog("ready to serve client requests", Duration.ofSeconds(60));
            master.awaitLog("mcctl master serving", Duration.ofSeconds(120));
            Map<String, String> client = Map.of("MCCTL_MASTER", "127.0.0.1:" + port, "MCCTL_TLS_CA", tls.resolve("ca.pem").toString(),
                    "MCCTL_TOKEN", token);
            awaitLeader(release, work, client);

            Path config = work.resolve("prometheus.yml");
            Files.writeString(config, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    + "rule_files:\n  - " + release.home.resolve("deploy/prometheus/mcctl-rules.yml") + "\n"
                    + "scrape_configs:\n  - job_name: mcctl-master\n    scheme: https\n    tls_config:\n      ca_file: " + tls.resolve("ca.pem")
                    + "\n    static_configs:\n      - targets: [\"127.0.0.1:" + metricsPort + "\"]\n");
            try (Release.Daemon prometheus = Release.Daemon.start(work, Map.of("PATH", "/usr/bin:/bin", "HOME", work.toString()),
                    work.resolve("prometheus.log"), List.of(prometheusBinary.toString(), "--config.file=" + config,
                            "--storage.tsdb.path=" + work.resolve("tsdb"), "--web.listen-address=127.0.0.1:" + prometheusPort))) {
                prometheus.awaitLog("Server is ready to receive web requests", Duration.ofSeconds(60));
                String api = "http://127.0.0.1:" + prometheusPort + "/api/v1/";

                load(release, work, client, token);
                awaitScrapes(api, Duration.ofSeconds(12));

                Set<String> recorded = new TreeSet<>();
                List<Expression> expressions = ruleExpressions(release.home.resolve("deploy/prometheus/mcctl-rules.yml"), recorded);
                expressions.addAll(dashboardExpressions(release.home.resolve("deploy/grafana/mcctl-dashboard.json")));
                assertTrue(expressions.size() > 60, "the rules and the dashboard hold their expressions: " + expressions.size());
                for (Expression expression : expressions) {
                    check(api, expression, recorded);
                }
                if (!problems.isEmpty()) {
                    throw new AssertionError(problems.size() + " problems:\n" + String.join("\n", problems) + "\n\nmaster log:\n" + tail(master));
                }
            }
        }
    }

    /** One expression to check: where it comes from, its PromQL, and its legend's labels (dashboard targets). */
    private record Expression(String where, String promql, boolean mustReturnSeries, Set<String> legendLabels) {
    }

    private void check(String api, Expression expression, Set<String> recorded) throws Exception {
        JsonNode answer = query(api, expression.promql());
        if (!"success".equals(answer.path("status").asText())) {
            problems.add(expression.where() + ": Prometheus refused it: " + answer.path("error").asText() + "\n    " + expression.promql());
            return;
        }
        PromQl.Names names = PromQl.names(expression.promql());
        Set<String> labelsOfAll = new LinkedHashSet<>();
        for (PromQl.Selector selector : names.selectors()) {
            if (selector.metric() == null) {
                problems.add(expression.where() + ": a selector without a metric name\n    " + expression.promql());
                continue;
            }
            Set<String> labels = seriesLabels(api, selector.metric());
            if (labels.isEmpty()) {
                problems.add(expression.where() + ": no series named " + selector.metric() + (recorded.contains(selector.metric())
                        ? " (a recording rule that recorded nothing)" : ": the master does not export it") + "\n    " + expression.promql());
                continue;
            }
            labelsOfAll.addAll(labels);
            for (String label : selector.labels()) {
                if (!labels.contains(label)) {
                    problems.add(expression.where() + ": " + selector.metric() + " has no label " + label + " (it has " + labels + ")");
                }
            }
        }
        for (String label : names.groupingLabels()) {
            if (!labelsOfAll.contains(label)) {
                problems.add(expression.where() + ": groups by " + label + ", a label none of its metrics has (" + labelsOfAll + ")");
            }
        }
        if (expression.mustReturnSeries()) {
            // The data behind a panel exists: a trailing filter (> 0, == 1) may hide it when all is well.
            String unfiltered = TRAILING_FILTER.matcher(expression.promql()).replaceFirst("");
            JsonNode result = query(api, unfiltered).path("data").path("result");
            if (result.isEmpty()) {
                problems.add(expression.where() + ": returns no series under load\n    " + unfiltered);
            }
            for (String legend : expression.legendLabels()) {
                for (JsonNode series : result) {
                    if (!series.path("metric").has(legend)) {
                        problems.add(expression.where() + ": its legend shows {{" + legend + "}}, which its series do not have: "
                                + series.path("metric"));
                        break;
                    }
                }
            }
        }
    }

    /** The names of the labels of the series named {@code metric} (without __name__); empty when there is none. */
    private Set<String> seriesLabels(String api, String metric) throws Exception {
        JsonNode answer = get(api + "series?match[]=" + URLEncoder.encode(metric, StandardCharsets.UTF_8));
        Set<String> labels = new TreeSet<>();
        for (JsonNode series : answer.path("data")) {
            series.fieldNames().forEachRemaining(labels::add);
        }
        labels.remove("__name__");
        return labels;
    }

    private List<Expression> ruleExpressions(Path rulesFile, Set<String> recorded) throws IOException {
        JsonNode rules = new ObjectMapper(new YAMLFactory()).readTree(rulesFile.toFile());
        List<Expression> expressions = new ArrayList<>();
        for (JsonNode group : rules.path("groups")) {
            for (JsonNode rule : group.path("rules")) {
                if (rule.has("record")) {
                    recorded.add(rule.path("record").asText());
                }
            }
        }
        for (JsonNode group : rules.path("groups")) {
            for (JsonNode rule : group.path("rules")) {
                String expr = rule.path("expr").asText().strip();
                if (rule.has("record")) {
                    String name = rule.path("record").asText();
                    expressions.add(new Expression("recording rule " + name, expr, false, Set.of()));
                    // What it recorded, read back: it must have recorded series under the load.
                    expressions.add(new Expression("recorded series " + name, name, true, Set.of()));
                } else {
                    expressions.add(new Expression("alert " + rule.path("alert").asText(), expr, false, Set.of()));
                }
            }
        }
        return expressions;
    }

    private List<Expression> dashboardExpressions(Path dashboardFile) throws IOException {
        JsonNode dashboard = JSON.readTree(dashboardFile.toFile());
        List<Expression> expressions = new ArrayList<>();
        for (JsonNode variable : dashboard.path("templating").path("list")) {
            if (!"query".equals(variable.path("type").asText())) {
                continue;
            }
            String query = variable.path("query").path("query").asText();
            Matcher labelValues = LABEL_VALUES.matcher(query);
            assertTrue(labelValues.matches(), "variable " + variable.path("name").asText() + " is a label_values query: " + query);
            String label = labelValues.group(2);
            expressions.add(new Expression("variable $" + variable.path("name").asText(),
                    "group by (" + label + ") (" + variables(labelValues.group(1)) + ")", true, Set.of(label)));
        }
        for (JsonNode panel : panelsOf(dashboard)) {
            for (JsonNode target : panel.path("targets")) {
                Set<String> legend = new LinkedHashSet<>();
                Matcher labels = LEGEND_LABEL.matcher(target.path("legendFormat").asText());
                while (labels.find()) {
                    legend.add(labels.group(1));
                }
                expressions.add(new Expression("panel '" + panel.path("title").asText() + "' " + target.path("refId").asText(),
                        variables(target.path("expr").asText()), true, legend));
            }
        }
        return expressions;
    }

    private static List<JsonNode> panelsOf(JsonNode dashboard) {
        List<JsonNode> panels = new ArrayList<>();
        for (JsonNode panel : dashboard.path("panels")) {
            panels.add(panel);
            panel.path("panels").forEach(panels::add); // a collapsed row keeps its panels inside it
        }
        return panels;
    }

    /** The dashboard's variables as Grafana sets them with "All" chosen, and its rate interval at this scrape interval. */
    private static String variables(String expr) {
        return expr.replace("$__rate_interval", "15s").replace("$job", ".*").replace("$instance", ".*").replace("$tenant", ".*");
    }

    /** A CA and a certificate for 127.0.0.1 signed by it, made with openssl. */
    private static Path certificates(Path openssl, Path work) throws Exception {
        Path tls = Files.createDirectories(work.resolve("tls"));
        Files.writeString(tls.resolve("san.ext"), "subjectAltName=IP:127.0.0.1\n");
        String o = openssl.toString();
        for (String[] command : new String[][] {
                {o, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=mcctl test CA"},
                {o, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "master.key", "-out", "master.csr", "-subj", "/CN=127.0.0.1"},
                {o, "x509", "-req", "-in", "master.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "master.pem",
                        "-days", "1", "-extfile", "san.ext"}}) {
            Release.exec(tls, Map.of("PATH", "/usr/bin:/bin", "HOME", work.toString()), Duration.ofSeconds(60), command)
                    .expectOk(String.join(" ", command));
        }
        return tls;
    }

    private static String sha256(String text) throws Exception {
        byte[] digest = java.security.MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        return java.util.HexFormat.of().formatHex(digest);
    }

    /** Until the master has won its election and serves. */
    private static void awaitLeader(Release release, Path work, Map<String, String> client) throws Exception {
        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        Release.Done stats;
        do {
            stats = release.mcctl(work, client, "stats");
            if (stats.exitCode() == 0) {
                return;
            }
            Thread.sleep(500);
        } while (System.nanoTime() < end);
        throw new AssertionError("the HA master did not lead within 60 s: " + stats.err());
    }

    /**
     * Two tenants offload more than the tier holds (1,024 pages; 2 pages an object), so the master evicts; both read
     * what they offloaded and keys nobody did; a live fsck; a call with a wrong token (an RPC failure and a refusal).
     */
    private static void load(Release release, Path work, Map<String, String> client, String token) throws Exception {
        byte[] object = new byte[6000];
        for (String tenant : List.of("a", "b")) {
            Path objects = Files.createDirectories(work.resolve("objects-" + tenant));
            int count = tenant.equals("a") ? 150 : 400;
            StringBuilder keys = new StringBuilder();
            for (int i = 0; i < count; i++) {
                object[0] = (byte) i;
                Files.write(objects.resolve(tenant + "-" + i), object);
                if (i % 3 == 0) {
                    keys.append(tenant).append('-').append(i).append('\n');
                }
            }
            keys.append("never-offloaded-1\nnever-offloaded-2\n");
            Files.writeString(work.resolve("keys-" + tenant), keys);
            Release.Done offload = release.mcctl(work, client, "offload", "--batch", objects.toString(), "--tenant", tenant);
            assertTrue(offload.exitCode() == 0 || offload.exitCode() == 1, () -> "offload: " + offload.err());
        }
        for (String tenant : List.of("a", "b")) {
            Release.Done get = release.mcctl(work, client, "get", "--batch", work.resolve("keys-" + tenant).toString(),
                    "--out", Files.createDirectories(work.resolve("read-" + tenant)).toString(), "--tenant", tenant);
            assertTrue(get.exitCode() <= 3, () -> "get: " + get.err());
        }
        release.mcctl(work, client, "fsck", "--master", client.get("MCCTL_MASTER")).expectOk("fsck");
        Map<String, String> wrongToken = new HashMap<>(client);
        wrongToken.put("MCCTL_TOKEN", "not-" + token);
        Release.Done refused = release.mcctl(work, wrongToken, "stats");
        assertTrue(refused.exitCode() != 0, "a wrong token is refused");
        Release.Done stats = release.mcctl(work, client, "stats", "-o", "json").expectOk("stats");
        JsonNode figures = JSON.readTree(stats.out());
        assertTrue(figures.path("eviction").path("evicted_keys").asLong() > 0, () -> "the load made the master evict: " + stats.out());
    }

    /** Waits until Prometheus has scraped the master for {@code span} after the load, and evaluated the rules on it. */
    private void awaitScrapes(String api, Duration span) throws Exception {
        long start = System.currentTimeMillis();
        Thread.sleep(span.toMillis());
        JsonNode targets = get(api + "targets").path("data").path("activeTargets");
        assertEquals(1, targets.size(), targets::toString);
        JsonNode target = targets.get(0);
        assertEquals("up", target.path("health").asText(), () -> "Prometheus cannot scrape the master: " + target);
        assertTrue(java.time.OffsetDateTime.parse(target.path("lastScrape").asText()).toInstant().toEpochMilli() > start,
                () -> "no scrape since the load: " + target);
    }

    private JsonNode query(String api, String promql) throws Exception {
        return get(api + "query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8));
    }

    private JsonNode get(String url) throws Exception {
        HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString());
        return JSON.readTree(response.body());
    }

    private static String tail(Release.Daemon daemon) throws IOException {
        String log = daemon.log();
        return log.length() > 4000 ? log.substring(log.length() - 4000) : log;
    }
}
