package io.mcctl.cli.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.mcctl.cli.bench.TestCertificates;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.node.NodeServer;
import io.mcctl.master.proto.v1.GetStatsRequest;
import io.mcctl.master.proto.v1.MasterServiceGrpc;
import io.mcctl.master.security.MasterSecurity;
import io.mcctl.master.protocol.SecurityConfigException;
import io.mcctl.master.protocol.TlsFiles;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** TLS and mutual TLS between a real master on loopback and its clients, with certificates made here by openssl. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TlsTest {

    @TempDir
    static Path certs;
    static TestCertificates ca;
    static TestCertificates otherCa;
    static TestCertificates.Pair server;

    @TempDir
    Path dir;

    @BeforeAll
    static void makeCertificates() throws Exception {
        ca = TestCertificates.newCa(certs.resolve("ca"), "test-ca");
        otherCa = TestCertificates.newCa(certs.resolve("other"), "other-ca");
        server = ca.server("master");
    }

    private MasterServer start(MasterSecurity security) throws Exception {
        return MasterServer.start(MasterServer.Options.builder(new BucketLayout(dir.resolve("root"), 4, 4096, 1 << 20))
                .fsType("test").build(), security);
    }

    private static MasterClient client(MasterServer master, ClientSecurity security) {
        return new MasterClient("127.0.0.1:" + master.port(), Duration.ofSeconds(5), security);
    }

    @Test
    void a_client_that_trusts_the_ca_talks_to_the_master_and_its_metrics_over_tls() throws Exception {
        try (MasterServer master = start(MasterSecurity.of(server.cert(), server.key(), null, null));
             MasterClient client = client(master, new ClientSecurity(ca.caCert(), null, null, null))) {
            client.allocate("a", "k", 100, false);
            assertEquals(1, client.stats().getInFlightAllocations());
            HttpResponse<String> metrics = HttpClient.newBuilder().sslContext(trusting(ca.caCert())).build().send(
                    HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + master.metricsPort() + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, metrics.statusCode());
            assertTrue(metrics.body().contains("mcctl_master_auth_refusals_total"), "refusal metrics are exported");
        }
    }

    @Test
    void a_client_without_the_ca_fails_with_one_clear_line() throws Exception {
        try (MasterServer master = start(MasterSecurity.of(server.cert(), server.key(), null, null));
             MasterClient wrongCa = client(master, new ClientSecurity(otherCa.caCert(), null, null, null));
             MasterClient plaintext = client(master, ClientSecurity.NONE)) {
            MasterException e = assertThrows(MasterException.class, wrongCa::stats);
            assertEquals(1, e.getMessage().lines().count(), e.getMessage());
            assertTrue(e.getMessage().startsWith("TLS with the master at 127.0.0.1:" + master.port() + " failed: the master's certificate "
                    + "is not signed by a CA in " + otherCa.caCert()), e.getMessage());
            assertTrue(e.tlsHandshakeFailed(), "a certificate not trusted fails the handshake");
            MasterException p = assertThrows(MasterException.class, plaintext::stats);
            assertEquals(1, p.getMessage().lines().count(), p.getMessage());
            assertTrue(p.getMessage().contains("if the master serves TLS, pass --tls-ca"), p.getMessage());
            assertFalse(p.tlsHandshakeFailed(), "plaintext makes no handshake: the closed connection may be a master going away");
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void a_node_that_does_not_trust_the_masters_certificate_stops_with_the_tls_line_instead_of_waiting() throws Exception {
        try (MasterServer master = start(MasterSecurity.of(server.cert(), server.key(), null, null))) {
            NodeServer.Options options = new NodeServer.Options("127.0.0.1:" + master.port(), "127.0.0.1", 0, null, dir.resolve("disk"),
                    false, Duration.ofSeconds(5), new ClientSecurity(otherCa.caCert(), null, null, null));
            // A node waiting for its master would never return from start: the time limit would end the test instead.
            MasterException e = assertThrows(MasterException.class, () -> NodeServer.start(options).close());
            assertEquals(1, e.getMessage().lines().count(), e.getMessage());
            assertTrue(e.getMessage().startsWith("TLS with the master at 127.0.0.1:" + master.port() + " failed: the master's certificate "
                    + "is not signed by a CA in " + otherCa.caCert()), e.getMessage());
        }
    }

    @Test
    void mutual_tls_refuses_a_client_without_a_certificate() throws Exception {
        TestCertificates.Pair clientA = ca.client("client-a", "node-1", List.of("mcctl:tenant:a"), 2);
        try (MasterServer master = start(MasterSecurity.of(server.cert(), server.key(), ca.caCert(), null));
             MasterClient without = client(master, new ClientSecurity(ca.caCert(), null, null, null));
             MasterClient with = client(master, new ClientSecurity(ca.caCert(), clientA.cert(), clientA.key(), null))) {
            MasterException e = assertThrows(MasterException.class, without::stats);
            assertEquals(1, e.getMessage().lines().count(), e.getMessage());
            assertTrue(e.getMessage().startsWith("TLS with the master at"), e.getMessage());
            assertEquals(0, with.stats().getMappings());
        }
    }

    @Test
    void a_client_certificate_names_its_tenants_by_uri_san_or_else_by_its_cn() throws Exception {
        TestCertificates.Pair bySan = ca.client("by-san", "node-1", List.of("mcctl:tenant:a"), 2);
        TestCertificates.Pair byCn = ca.client("by-cn", "b", List.of(), 2);
        try (MasterServer master = start(MasterSecurity.of(server.cert(), server.key(), ca.caCert(), null));
             MasterClient a = client(master, new ClientSecurity(ca.caCert(), bySan.cert(), bySan.key(), null));
             MasterClient b = client(master, new ClientSecurity(ca.caCert(), byCn.cert(), byCn.key(), null))) {
            a.allocate("a", "k", 100, false);
            b.allocate("b", "k", 100, false);
            MasterException e = assertThrows(MasterException.class, () -> a.allocate("b", "k2", 100, false));
            assertTrue(e.getMessage().contains("PERMISSION_DENIED") && e.getMessage().contains("may not use tenant 'b'"), e.getMessage());
            assertThrows(MasterException.class, () -> b.allocate("a", "k2", 100, false));
            assertThrows(MasterException.class, () -> a.createSnapshot(), "a certificate without mcctl:role:admin is no admin");
            assertEquals(2, master.pages().inFlightCount());
        }
    }

    @Test
    void an_expired_certificate_is_refused_with_a_message_that_says_so() throws Exception {
        TestCertificates.Pair expired = ca.expiredServer("expired");
        SecurityConfigException atStart = assertThrows(SecurityConfigException.class,
                () -> MasterSecurity.of(expired.cert(), expired.key(), null, null));
        assertTrue(atStart.getMessage().startsWith("TLS certificate " + expired.cert() + " expired on "), atStart.getMessage());

        TestCertificates.Pair expiredClient = ca.client("expired-client", "node-1", List.of("mcctl:tenant:a"), 0);
        TestCertificates.waitUntilExpired(expiredClient.cert());
        IllegalArgumentException ownCheck = assertThrows(IllegalArgumentException.class, () -> new MasterClient("127.0.0.1:1",
                Duration.ofSeconds(1), new ClientSecurity(ca.caCert(), expiredClient.cert(), expiredClient.key(), null)));
        assertTrue(ownCheck.getMessage().contains("expired on"), ownCheck.getMessage());

        // A client that presents it anyway is refused by the master's handshake, and the alert says why.
        try (MasterServer master = start(MasterSecurity.of(server.cert(), server.key(), ca.caCert(), null))) {
            TlsFiles.KeyPair pair = new TlsFiles.KeyPair(TlsFiles.readCertificates(expiredClient.cert(), "certificate"),
                    TlsFiles.readPrivateKey(expiredClient.key()));
            ManagedChannel channel = NettyChannelBuilder.forTarget("127.0.0.1:" + master.port())
                    .sslContext(TlsFiles.grpcClientContext(TlsFiles.readCertificates(ca.caCert(), "CA"), pair)).build();
            try {
                StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> MasterServiceGrpc.newBlockingStub(channel)
                        .withDeadlineAfter(10, TimeUnit.SECONDS).getStats(GetStatsRequest.getDefaultInstance()));
                assertTrue(rootMessage(e).toLowerCase(java.util.Locale.ROOT).contains("expired"), rootMessage(e));
            } finally {
                channel.shutdownNow();
            }
        }
    }

    private static String rootMessage(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append(" | ");
        }
        return all.toString();
    }

    private static SSLContext trusting(Path caFile) throws Exception {
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setCertificateEntry("ca", TlsFiles.readCertificates(caFile, "CA")[0]);
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(store);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, trust.getTrustManagers(), null);
        return context;
    }
}
