package io.mcctl.master.client;

import io.grpc.ClientInterceptor;
import io.grpc.Metadata;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import io.mcctl.master.protocol.SecurityConfigException;
import io.mcctl.master.protocol.TlsFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * How a client reaches a master: TLS when {@code tlsCa} is set (trusting only the CAs in that file), its own
 * certificate for mutual TLS when {@code tlsCert} and {@code tlsKey} are set, and a bearer token when
 * {@code token} is set. {@link #toString} never shows the token.
 */
public record ClientSecurity(Path tlsCa, Path tlsCert, Path tlsKey, String token) {

    /** Plaintext, no token: a master on loopback without tokens. */
    public static final ClientSecurity NONE = new ClientSecurity(null, null, null, null);

    static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    public ClientSecurity {
        if ((tlsCert == null) != (tlsKey == null)) {
            throw new IllegalArgumentException(tlsCert == null ? "--tls-key needs --tls-cert" : "--tls-cert needs --tls-key");
        }
        if (tlsCert != null && tlsCa == null) {
            throw new IllegalArgumentException("--tls-cert needs --tls-ca: the CA that signed the master's certificate");
        }
        if (token != null && (token.isEmpty() || token.chars().anyMatch(c -> c <= 0x20 || c >= 0x7f))) {
            throw new IllegalArgumentException("the token is empty or has spaces or characters outside printable ASCII");
        }
    }

    public boolean tls() {
        return tlsCa != null;
    }

    public ClientSecurity withToken(String newToken) {
        return new ClientSecurity(tlsCa, tlsCert, tlsKey, newToken);
    }

    /** The token in {@code file}: its first line, trimmed. */
    public static String readTokenFile(Path file) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalArgumentException("token file " + file + " cannot be read: "
                    + (e instanceof java.nio.file.NoSuchFileException ? "no such file" : e.getMessage()));
        }
        String line = text.lines().findFirst().orElse("").trim();
        if (line.isEmpty()) {
            throw new IllegalArgumentException("token file " + file + " is empty: allowed is the token on its first line");
        }
        return line;
    }

    /** TLS (or plaintext) and the token on {@code builder}. */
    void configure(NettyChannelBuilder builder) {
        if (tlsCa == null) {
            builder.usePlaintext();
        } else {
            try {
                TlsFiles.KeyPair own = tlsCert == null ? null : TlsFiles.readKeyPair(tlsCert, tlsKey);
                builder.sslContext(TlsFiles.grpcClientContext(TlsFiles.readCertificates(tlsCa, "CA"), own)).useTransportSecurity();
            } catch (SecurityConfigException e) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
        }
        if (token != null) {
            Metadata headers = new Metadata();
            headers.put(AUTHORIZATION, "Bearer " + token);
            ClientInterceptor attach = MetadataUtils.newAttachHeadersInterceptor(headers);
            builder.intercept(attach);
        }
    }

    @Override
    public String toString() {
        return "ClientSecurity[tls=" + tls() + ", tlsCa=" + tlsCa + ", tlsCert=" + tlsCert + ", token=" + (token == null ? "none" : "set") + "]";
    }
}
