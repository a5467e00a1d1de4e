package io.mcctl.master.server;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import io.mcctl.master.service.PageService;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * The master's health on its metrics port: {@code /health} answers 200 "ok" while the master takes changes, and
 * 503 with the reason once it refuses them (its write-ahead log failed). Every other path is 404.
 */
final class HealthHandler implements HttpHandler {

    static final String PATH = "/health";

    private final PageService pages;

    HealthHandler(PageService pages) {
        this.pages = pages;
    }

    @Override
    public void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String path = exchange.getRequestURI().getPath();
            int status;
            String body;
            if (PATH.equals(path)) {
                String refusal = pages.refusal();
                status = refusal == null ? 200 : 503;
                body = refusal == null ? "ok\n" : "unhealthy: " + refusal + "\n";
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
