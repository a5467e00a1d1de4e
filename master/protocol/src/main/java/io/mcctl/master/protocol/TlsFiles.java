package io.mcctl.master.protocol;

import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/**
 * PEM certificates and keys for the master and its clients, read with the JDK so every problem is one line that
 * names the file: a missing file, a key in a form Netty cannot load, a certificate that expired or is not valid yet.
 */
public final class TlsFiles {

    /** URI subject alternative name that gives a client certificate a tenant: {@code mcctl:tenant:<tenant>} ({@code *}: every tenant). */
    public static final String TENANT_SAN_PREFIX = "mcctl:tenant:";
    /** URI subject alternative name that gives a client certificate a role: {@code mcctl:role:monitor} or {@code mcctl:role:admin}. */
    public static final String ROLE_SAN_PREFIX = "mcctl:role:";

    private TlsFiles() {
    }

    /** A certificate chain and its private key, checked to be in date now. */
    public record KeyPair(X509Certificate[] chain, PrivateKey key) {
    }

    public static KeyPair readKeyPair(Path certFile, Path keyFile) throws SecurityConfigException {
        X509Certificate[] chain = readCertificates(certFile, "certificate");
        checkInDate(certFile, chain[0]);
        return new KeyPair(chain, readPrivateKey(keyFile));
    }

    /** Every certificate in a PEM file (a chain, or a bundle of CA certificates). */
    public static X509Certificate[] readCertificates(Path file, String what) throws SecurityConfigException {
        byte[] bytes = read(file, what);
        try {
            Collection<? extends java.security.cert.Certificate> certs = CertificateFactory.getInstance("X.509")
                    .generateCertificates(new ByteArrayInputStream(bytes));
            if (certs.isEmpty()) {
                throw new SecurityConfigException("TLS " + what + " " + file + " holds no certificate; allowed is PEM (BEGIN CERTIFICATE)");
            }
            return certs.stream().map(c -> (X509Certificate) c).toArray(X509Certificate[]::new);
        } catch (CertificateException e) {
            throw new SecurityConfigException("TLS " + what + " " + file + " is not a PEM certificate: " + e.getMessage());
        }
    }

    private static void checkInDate(Path file, X509Certificate certificate) throws SecurityConfigException {
        try {
            certificate.checkValidity();
        } catch (CertificateExpiredException e) {
            throw new SecurityConfigException("TLS certificate " + file + " expired on " + certificate.getNotAfter().toInstant()
                    + "; renew it");
        } catch (CertificateNotYetValidException e) {
            throw new SecurityConfigException("TLS certificate " + file + " is not valid before " + certificate.getNotBefore().toInstant()
                    + "; check this machine's clock or the certificate");
        }
    }

    public static PrivateKey readPrivateKey(Path file) throws SecurityConfigException {
        String text = new String(read(file, "key"), StandardCharsets.US_ASCII);
        if (text.contains("BEGIN RSA PRIVATE KEY") || text.contains("BEGIN EC PRIVATE KEY") || text.contains("BEGIN ENCRYPTED PRIVATE KEY")) {
            throw new SecurityConfigException("TLS key " + file + " is not an unencrypted PKCS#8 key; convert it with: "
                    + "openssl pkcs8 -topk8 -nocrypt -in " + file + " -out key.pem");
        }
        int begin = text.indexOf("-----BEGIN PRIVATE KEY-----");
        int end = text.indexOf("-----END PRIVATE KEY-----");
        if (begin < 0 || end < begin) {
            throw new SecurityConfigException("TLS key " + file + " holds no private key; allowed is PEM PKCS#8 (BEGIN PRIVATE KEY)");
        }
        byte[] der;
        try {
            der = Base64.getMimeDecoder().decode(text.substring(begin + "-----BEGIN PRIVATE KEY-----".length(), end));
        } catch (IllegalArgumentException e) {
            throw new SecurityConfigException("TLS key " + file + " is not valid base64 PEM: " + e.getMessage());
        }
        for (String algorithm : List.of("RSA", "EC", "Ed25519", "Ed448")) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                // not this algorithm: try the next
            }
        }
        throw new SecurityConfigException("TLS key " + file + " is not an RSA, EC or EdDSA private key");
    }

    private static byte[] read(Path file, String what) throws SecurityConfigException {
        try {
            return Files.readAllBytes(file);
        } catch (java.nio.file.NoSuchFileException e) {
            throw new SecurityConfigException("TLS " + what + " " + file + " does not exist");
        } catch (IOException e) {
            throw new SecurityConfigException("TLS " + what + " " + file + " cannot be read: " + e.getMessage());
        }
    }

    /** The master's gRPC TLS: its own pair, and with {@code clientCa} a client certificate that chains to it is required. */
    public static SslContext grpcServerContext(KeyPair pair, X509Certificate[] clientCa) throws SecurityConfigException {
        try {
            SslContextBuilder builder = GrpcSslContexts.configure(SslContextBuilder.forServer(pair.key(), pair.chain()));
            if (clientCa != null) {
                builder.trustManager(clientCa).clientAuth(ClientAuth.REQUIRE);
            }
            return builder.build();
        } catch (IOException | RuntimeException e) {
            throw new SecurityConfigException("TLS set-up failed: " + e.getMessage());
        }
    }

    /** A client's TLS: trust {@code ca}; with {@code own} non-null, present that certificate. */
    public static SslContext grpcClientContext(X509Certificate[] ca, KeyPair own) throws SecurityConfigException {
        try {
            SslContextBuilder builder = GrpcSslContexts.forClient().trustManager(ca);
            if (own != null) {
                builder.keyManager(own.key(), own.chain());
            }
            return builder.build();
        } catch (IOException | RuntimeException e) {
            throw new SecurityConfigException("TLS set-up failed: " + e.getMessage());
        }
    }

    /** The JDK's TLS for the metrics and health endpoint (the Prometheus HTTPServer), with the same pair. */
    public static SSLContext jdkServerContext(KeyPair pair) throws SecurityConfigException {
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            char[] password = new char[0];
            store.setKeyEntry("master", pair.key(), password, pair.chain());
            KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(store, password);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys.getKeyManagers(), null, null);
            return context;
        } catch (GeneralSecurityException | IOException e) {
            throw new SecurityConfigException("TLS set-up of the metrics endpoint failed: " + e.getMessage());
        }
    }
}
