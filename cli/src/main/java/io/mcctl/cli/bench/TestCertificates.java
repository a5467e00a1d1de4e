package io.mcctl.cli.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A throw-away CA and certificates made with {@code openssl} (Debian's, on PATH) in a directory, for the TLS
 * benchmark and the tests: never for production, where certificates come from the site's own CA.
 * Keys are P-256 in PKCS#8 PEM, as the master wants them.
 */
public final class TestCertificates {

    /** A certificate and its key. */
    public record Pair(Path cert, Path key) {
    }

    private final Path dir;
    private final Path caCert;
    private final Path caKey;

    private TestCertificates(Path dir, Path caCert, Path caKey) {
        this.dir = dir;
        this.caCert = caCert;
        this.caKey = caKey;
    }

    /** A new CA named {@code name} in {@code dir}, valid for two days. */
    public static TestCertificates newCa(Path dir, String name) throws IOException {
        Files.createDirectories(dir);
        Path cert = dir.resolve(name + ".pem");
        Path key = dir.resolve(name + ".key");
        openssl(dir, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key.toString(),
                "-out", cert.toString(), "-days", "2", "-subj", "/CN=" + name, "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign");
        return new TestCertificates(dir, cert, key);
    }

    public Path caCert() {
        return caCert;
    }

    /** The master's certificate for 127.0.0.1 and localhost. */
    public Pair server(String name) throws IOException {
        return issue(name, "/CN=" + name, "IP:127.0.0.1,DNS:localhost", 2);
    }

    /**
     * A client certificate with subject CN {@code cn} and the given URI SANs (e.g. {@code mcctl:tenant:a});
     * {@code days} 0 makes one that expires the second it is issued.
     */
    public Pair client(String name, String cn, List<String> uriSans, int days) throws IOException {
        String sans = String.join(",", uriSans.stream().map(u -> "URI:" + u).toList());
        return issue(name, "/CN=" + cn, sans, days);
    }

    /** A certificate for 127.0.0.1 that has expired by the time this returns. */
    public Pair expiredServer(String name) throws IOException, InterruptedException {
        Pair pair = issue(name, "/CN=" + name, "IP:127.0.0.1,DNS:localhost", 0);
        waitUntilExpired(pair.cert());
        return pair;
    }

    /** Waits until a certificate issued with {@code -days 0} (not after = the second it was made) has passed that second. */
    public static void waitUntilExpired(Path cert) throws IOException, InterruptedException {
        java.security.cert.X509Certificate x509;
        try (var in = Files.newInputStream(cert)) {
            x509 = (java.security.cert.X509Certificate) java.security.cert.CertificateFactory.getInstance("X.509").generateCertificate(in);
        } catch (java.security.cert.CertificateException e) {
            throw new IOException(e);
        }
        while (!x509.getNotAfter().before(new java.util.Date())) {
            Thread.sleep(100);
        }
    }

    private Pair issue(String name, String subject, String sans, int days) throws IOException {
        Path key = dir.resolve(name + ".key");
        Path csr = dir.resolve(name + ".csr");
        Path cert = dir.resolve(name + ".pem");
        Path ext = dir.resolve(name + ".ext");
        Files.writeString(ext, (sans.isEmpty() ? "" : "subjectAltName=" + sans + "\n") + "extendedKeyUsage=serverAuth,clientAuth\n");
        openssl(dir, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key.toString(),
                "-out", csr.toString(), "-subj", subject);
        openssl(dir, "x509", "-req", "-in", csr.toString(), "-CA", caCert.toString(), "-CAkey", caKey.toString(), "-CAcreateserial",
                "-out", cert.toString(), "-days", Integer.toString(days), "-extfile", ext.toString());
        return new Pair(cert, key);
    }

    private static void openssl(Path dir, String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add("openssl");
        command.addAll(List.of(args));
        Path log = Files.createTempFile(dir, "openssl", ".log");
        Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException("openssl " + args[0] + " did not finish in 60 s");
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while openssl ran", e);
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        Files.deleteIfExists(log);
        if (process.exitValue() != 0) {
            throw new IOException("openssl " + String.join(" ", args) + " failed (exit " + process.exitValue() + "): " + output.strip());
        }
    }
}
