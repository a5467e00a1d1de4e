package io.mcctl.master.security;

import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/** Tokens files and a real master that reads one, for the access tests. */
final class TokenFixture {

    static final String OWN = "token-of-tenant-a";
    static final String MONITOR = "token-of-the-monitor";
    static final String ADMIN = "token-of-the-admin";

    private TokenFixture() {
    }

    /** Tenant token for a, monitor for b, admin for every tenant. */
    static String standardTokens() {
        return "tokens:\n"
                + entry("ingest-a", OWN, "tenant", "[a]")
                + entry("watcher", MONITOR, "monitor", "[b]")
                + entry("ops", ADMIN, "admin", "[\"*\"]");
    }

    static String entry(String name, String token, String role, String tenants) {
        return "  - name: " + name + "\n    sha256: " + TokenTable.sha256Hex(token) + "\n    role: " + role + "\n    tenants: " + tenants + "\n";
    }

    static Path write(Path dir, String text) throws IOException {
        Path file = dir.resolve("tokens.yaml");
        Files.writeString(file, text);
        return file;
    }

    static MasterServer start(Path root, MasterSecurity security) throws IOException {
        return MasterServer.start(MasterServer.Options.builder(new BucketLayout(root, 4, 4096, 1 << 20)).fsType("test").build(), security);
    }
}
