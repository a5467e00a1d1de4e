package io.mcctl.master.server;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import io.mcctl.master.service.PageService;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * The master's health on its metrics port: {@code /health} answers 200 "ok" while the master takes changes, and
 * 503 with the reason once it refuses them (its write-ahead log failed). A master that serves with buckets out of
 * allocation (their files missing or replaced) answers 200 "degraded: ..." naming them: it serves, and allocations spill
 * to the other buckets. Every other path is 404.
 */
public final class HealthHandler implements HttpHandler {

    static final String PATH = "/health";

    private final PageService pages;

    HealthHandler(PageService pages) {
        this.pages = pages;
    }

    /** The buckets that take no allocations and why, in one line; null when every bucket file is healthy. */
    public static String degraded(PageService pages) {
        java.util.List<String> unusable = BucketFileWatch.describeUnusable(pages);
        if (unusable.isEmpty()) {
            return null;
        }
        return unusable.size() + " of " + pages.layout().bucketCount() + " buckets take no allocations: " + String.join("; ", unusable)
                + " (docs/operator-guide.md, \"Bucket file health\")";
    }

    @Override
    public void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String path = exchange.getRequestURI().getPath();
            int status;
            String body;
            if (PATH.equals(path)) {
                String refusal = pages.refusal();
                String degraded = degraded(pages);
                status = refusal == null ? 200 : 503;
                body = refusal != null ? "unhealthy: " + refusal + "\n" : degraded != null ? "degraded: " + degraded + "\n" : "ok\n";
            } else {
                status = 404;
                body = "not found: the master serves /metrics and " + PATH + "\n";
            }
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
            exchange.sendResponseHeaders(status, bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
    }
}
