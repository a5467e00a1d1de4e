package io.mcctl.master.security;

import io.grpc.ServerInterceptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.mcctl.master.protocol.SecurityConfigException;
import io.mcctl.master.protocol.TlsFiles;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The master's transport security and access control, from its settings (tls_cert, tls_key, tls_client_ca,
 * tokens_file): all files are read and checked when this is made, so a master with a bad file never serves.
 */
public final class MasterSecurity {

    private static final Logger LOG = LoggerFactory.getLogger(MasterSecurity.class);

    private final TlsFiles.KeyPair serverPair;
    private final X509Certificate[] clientCa;
    private final AccessControl access;

    private MasterSecurity(TlsFiles.KeyPair serverPair, X509Certificate[] clientCa, AccessControl access) {
        this.serverPair = serverPair;
        this.clientCa = clientCa;
        this.access = access;
    }

    /** Plaintext, no tokens: anyone who reaches the port may do anything (admin actions are still audited). */
    public static MasterSecurity plaintext() {
        try {
            return new MasterSecurity(null, null, new AccessControl(null, false));
        } catch (SecurityConfigException e) {
            throw new IllegalStateException(e); // no file is read
        }
    }

    /** Any of the paths may be null (not configured); a key without a certificate, or a client CA without TLS, is refused. */
    public static MasterSecurity of(Path tlsCert, Path tlsKey, Path tlsClientCa, Path tokensFile) throws SecurityConfigException {
        if ((tlsCert == null) != (tlsKey == null)) {
            throw new SecurityConfigException(tlsCert == null ? "tls_key is set but tls_cert is not: set both, or neither for plaintext"
                    : "tls_cert is set but tls_key is not: set both, or neither for plaintext");
        }
        if (tlsClientCa != null && tlsCert == null) {
            throw new SecurityConfigException("tls_client_ca is set but tls_cert is not: client certificates need TLS; set tls_cert and tls_key");
        }
        TlsFiles.KeyPair pair = tlsCert == null ? null : TlsFiles.readKeyPair(tlsCert, tlsKey);
        X509Certificate[] ca = tlsClientCa == null ? null : TlsFiles.readCertificates(tlsClientCa, "client CA");
        if (pair != null) {
            TlsFiles.grpcServerContext(pair, ca); // fails here, with the file named, rather than at the first connection
        }
        return new MasterSecurity(pair, ca, new AccessControl(tokensFile, ca != null));
    }

    public boolean tls() {
        return serverPair != null;
    }

    public boolean mutualTls() {
        return clientCa != null;
    }

    public AccessControl access() {
        return access;
    }

    /** See {@link AccessControl#reloadTokens}. */
    public String reloadTokens() {
        return access.reloadTokens();
    }

    /** TLS on the gRPC port when configured; a warning when the master would serve plaintext beyond this machine. */
    public void configure(NettyServerBuilder builder, String bindHost) throws SecurityConfigException {
        if (serverPair != null) {
            builder.sslContext(TlsFiles.grpcServerContext(serverPair, clientCa));
            LOG.info("gRPC and metrics over TLS ({}){}", serverPair.chain()[0].getSubjectX500Principal().getName(),
                    clientCa != null ? ", client certificates required" : "");
        } else if (!loopback(bindHost)) {
            LOG.warn("serving plaintext on {}, which is not a loopback address: anyone on the network can read{} the calls; "
                    + "set tls_cert and tls_key (docs/security.md)", bindHost, access.tokens() != null ? " the tokens and" : "");
        }
        if (access.tokens() != null) {
            LOG.info("tokens from {}: {} tokens", access.tokens().file(), access.tokens().size());
        }
    }

    /** HTTPS for metrics and health when configured; client certificates are not asked for there (scrapers, probes). */
    public void configure(HTTPServer.Builder builder) throws SecurityConfigException {
        if (serverPair != null) {
            builder.httpsConfigurator(new com.sun.net.httpserver.HttpsConfigurator(TlsFiles.jdkServerContext(serverPair)));
        }
    }

    /** The interceptor that checks every call; its refusal counters go to {@code registry}. */
    /** The access control interceptor, its refusals counted in a registry that another service registered. */
    public ServerInterceptor interceptor() {
        return access;
    }

    public ServerInterceptor interceptor(PrometheusRegistry registry) {
        access.register(registry);
        if (serverPair != null) {
            X509Certificate served = serverPair.chain()[0];
            io.prometheus.metrics.core.metrics.GaugeWithCallback.builder().name("mcctl_master_tls_certificate_expiry_timestamp_seconds")
                    .help("When the certificate the master serves gRPC and metrics with (tls_cert, read at start) expires")
                    .callback(cb -> cb.call(served.getNotAfter().getTime() / 1000.0)).register(registry);
        }
        return access;
    }

    static boolean loopback(String host) {
        try {
            return InetAddress.getByName(host).isLoopbackAddress();
        } catch (UnknownHostException e) {
            return false;
        }
    }
}
