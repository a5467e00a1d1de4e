package io.mcctl.master.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ConnectivityState;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.protocol.SecurityConfigException;
import io.mcctl.master.server.MasterServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TokenReloadTest {

    @TempDir
    Path dir;

    @Test
    void a_reload_takes_new_tokens_and_drops_removed_ones_on_open_connections() throws Exception {
        Path file = TokenFixture.write(dir, "tokens:\n" + TokenFixture.entry("ingest-a", TokenFixture.OWN, "tenant", "[a]"));
        MasterSecurity security = MasterSecurity.of(null, null, null, file);
        try (MasterServer master = TokenFixture.start(dir.resolve("root"), security);
             MasterClient own = client(master, TokenFixture.OWN);
             MasterClient next = client(master, "token-issued-later")) {
            own.allocate("a", "k1", 100, false);
            MasterException before = assertThrows(MasterException.class, () -> next.allocate("b", "k2", 100, false));
            assertTrue(before.getMessage().contains("UNAUTHENTICATED"), before.getMessage());

            Files.writeString(file, "tokens:\n" + TokenFixture.entry("ingest-b", "token-issued-later", "tenant", "[b]"));
            String line = security.reloadTokens();
            assertTrue(line.startsWith("tokens reloaded from " + file + ": 1 tokens"), line);

            next.allocate("b", "k2", 100, false); // the same connection, now allowed
            MasterException removed = assertThrows(MasterException.class, () -> own.allocate("a", "k3", 100, false));
            assertTrue(removed.getMessage().contains("the token is not in the master's tokens file"), removed.getMessage());
            assertEquals(2, master.pages().inFlightCount());
        }
    }

    @Test
    void a_malformed_file_on_reload_keeps_the_tokens_in_force_and_says_why() throws Exception {
        Path file = TokenFixture.write(dir, "tokens:\n" + TokenFixture.entry("ingest-a", TokenFixture.OWN, "tenant", "[a]"));
        MasterSecurity security = MasterSecurity.of(null, null, null, file);
        try (MasterServer master = TokenFixture.start(dir.resolve("root"), security);
             MasterClient own = client(master, TokenFixture.OWN)) {
            own.allocate("a", "k1", 100, false);
            Files.writeString(file, "tokens:\n  - name: broken\n    sha256: not-a-hash\n    tenants: [a]\n");
            String line = security.reloadTokens();
            assertTrue(line.startsWith("tokens not reloaded, the 1 tokens read before stay in force: " + file + ": token 1 (broken): "
                    + "sha256 'not-a-hash' is not 64 hex digits"), line);
            own.allocate("a", "k2", 100, false);
            assertEquals(2, master.pages().inFlightCount());
        }
    }

    @Test
    void bad_token_files_are_refused_at_start_with_one_line() throws Exception {
        String good = TokenFixture.entry("x", "t1", "tenant", "[a]");
        String[][] cases = {
                {"tokens: 3\n", "allowed is one key 'tokens'"},
                {"tokens:\n" + good + good.replace("t1", "t2").replace("name: x", "name: x"), "name is used by an earlier token"},
                {"tokens:\n" + good.replace("role: tenant", "role: root"), "role 'root' is not tenant, monitor or admin"},
                {"tokens:\n" + good.replace("[a]", "[\"a b\"]"), "has character"},
                {"tokens:\n" + good.replace("[a]", "[]"), "a tenant token needs at least one tenant"},
                {"tokens:\n" + good + TokenFixture.entry("y", "t1", "admin", "[a]"), "the same sha256 as an earlier token"},
                {"tokens:\n" + good + "    colour: blue\n", "unknown field 'colour'"},
        };
        for (String[] c : cases) {
            Path file = TokenFixture.write(dir, c[0]);
            SecurityConfigException e = assertThrows(SecurityConfigException.class, () -> MasterSecurity.of(null, null, null, file));
            assertTrue(e.getMessage().contains(c[1]) && e.getMessage().startsWith(file.toString()), e.getMessage());
            assertEquals(1, e.getMessage().lines().count());
        }
        assertTrue(assertThrows(SecurityConfigException.class, () -> MasterSecurity.of(null, null, null, dir.resolve("none.yaml")))
                .getMessage().endsWith("no such file"));
    }

    @Test
    void a_connection_stays_up_across_a_reload() throws Exception {
        Path file = TokenFixture.write(dir, TokenFixture.standardTokens());
        MasterSecurity security = MasterSecurity.of(null, null, null, file);
        try (MasterServer master = TokenFixture.start(dir.resolve("root"), security)) {
            io.grpc.ManagedChannel channel = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder.forTarget("127.0.0.1:" + master.port())
                    .usePlaintext().build();
            try {
                io.mcctl.master.proto.v1.MasterServiceGrpc.MasterServiceBlockingStub stub = io.mcctl.master.proto.v1.MasterServiceGrpc
                        .newBlockingStub(channel).withCallCredentials(bearer(TokenFixture.ADMIN));
                stub.getStats(io.mcctl.master.proto.v1.GetStatsRequest.getDefaultInstance());
                assertEquals(ConnectivityState.READY, channel.getState(false));
                security.reloadTokens();
                stub.getStats(io.mcctl.master.proto.v1.GetStatsRequest.getDefaultInstance());
                assertEquals(ConnectivityState.READY, channel.getState(false));
            } finally {
                channel.shutdownNow();
            }
        }
    }

    private static io.grpc.CallCredentials bearer(String token) {
        return new io.grpc.CallCredentials() {
            @Override
            public void applyRequestMetadata(RequestInfo info, java.util.concurrent.Executor executor, MetadataApplier applier) {
                io.grpc.Metadata headers = new io.grpc.Metadata();
                headers.put(AccessControl.AUTHORIZATION, "Bearer " + token);
                applier.apply(headers);
            }
        };
    }

    private static MasterClient client(MasterServer master, String token) {
        return new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(5), ClientSecurity.NONE.withToken(token));
    }
}
