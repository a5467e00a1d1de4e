package io.mcctl.cli;

import io.mcctl.master.client.ClientSecurity;
import java.nio.file.Path;
import java.util.Map;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/**
 * {@code --tls-ca}, {@code --tls-cert}, {@code --tls-key} and {@code --token-file}: how a command proves itself to
 * a master that serves TLS or wants tokens (docs/security.md). The token is never taken on the command line, where
 * other users of the machine could read it.
 */
public final class ConnectionOptions {

    public static final String TLS_CA_ENV = "MCCTL_TLS_CA";
    public static final String TLS_CERT_ENV = "MCCTL_TLS_CERT";
    public static final String TLS_KEY_ENV = "MCCTL_TLS_KEY";
    /** Environment variable holding the token itself (not a file). */
    public static final String TOKEN_ENV = "MCCTL_TOKEN";

    @Option(names = "--tls-ca", paramLabel = "FILE",
            description = "Connect over TLS, trusting only the CA certificates in this PEM file (default: $" + TLS_CA_ENV + ", else plaintext).")
    Path tlsCa;

    @Option(names = "--tls-cert", paramLabel = "FILE",
            description = "Client certificate (PEM) for a master that wants one; needs --tls-key and --tls-ca (default: $" + TLS_CERT_ENV + ").")
    Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "FILE",
            description = "Private key (PEM, PKCS#8) of --tls-cert (default: $" + TLS_KEY_ENV + ").")
    Path tlsKey;

    @Option(names = "--token-file", paramLabel = "FILE",
            description = "File whose first line is the bearer token to present (default: the token in $" + TOKEN_ENV + ", else none).")
    Path tokenFile;

    /** What these options and the environment say; a bad combination or an unreadable file is a usage error. */
    public ClientSecurity security(CommandSpec spec) {
        Map<String, String> env = CommandEnvironment.of(spec);
        try {
            String token = tokenFile != null ? ClientSecurity.readTokenFile(tokenFile) : env.get(TOKEN_ENV);
            return new ClientSecurity(pathOr(tlsCa, env.get(TLS_CA_ENV)), pathOr(tlsCert, env.get(TLS_CERT_ENV)),
                    pathOr(tlsKey, env.get(TLS_KEY_ENV)), token == null || token.isEmpty() ? null : token.trim());
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, e.getMessage());
        }
    }

    /**
     * What the environment alone says ({@code MCCTL_TLS_*}, {@code MCCTL_TOKEN}): for the shell's key completion,
     * which talks to the master outside any one command's options. Unusable settings give plaintext without a token:
     * completion is a convenience and the command itself reports the problem.
     */
    public static ClientSecurity fromEnvironment(Map<String, String> env) {
        try {
            String token = env.get(TOKEN_ENV);
            return new ClientSecurity(pathOr(null, env.get(TLS_CA_ENV)), pathOr(null, env.get(TLS_CERT_ENV)), pathOr(null, env.get(TLS_KEY_ENV)),
                    token == null || token.isEmpty() ? null : token.trim());
        } catch (IllegalArgumentException e) {
            return ClientSecurity.NONE;
        }
    }

    private static Path pathOr(Path option, String env) {
        return option != null ? option : env == null || env.isEmpty() ? null : Path.of(env);
    }
}
