package io.mcctl.cli;

import io.mcctl.master.client.MasterClient;
import io.mcctl.storage.config.DurationParser;
import java.time.Duration;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/**
 * {@code --master}, {@code --timeout} and the TLS and token options for every command that talks to a master;
 * {@link ClientOptions} adds the tenant.
 */
public final class MasterOptions {

    @Option(names = "--master", paramLabel = "HOST:PORT",
            description = "Master address, or etcd://h1:2379,h2:2379[/prefix] to follow the leader of masters started with --ha "
                    + "(default: $" + ClientOptions.MASTER_ENV + ", else " + MasterClient.DEFAULT_TARGET + ").")
    String master;

    @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "10s",
            description = "Deadline of each call to the master (default: ${DEFAULT-VALUE}).")
    String timeout;

    /** TLS and the bearer token (docs/security.md). */
    @picocli.CommandLine.Mixin
    ConnectionOptions connection;

    public String target(CommandSpec spec) {
        String fromEnvironment = CommandEnvironment.of(spec).get(ClientOptions.MASTER_ENV);
        String target = master != null ? master : fromEnvironment != null ? fromEnvironment : MasterClient.DEFAULT_TARGET;
        try {
            return MasterClient.checkTarget(target);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, e.getMessage() + (master == null && fromEnvironment != null
                    ? " (from environment " + ClientOptions.MASTER_ENV + ")" : ""));
        }
    }

    public MasterClient connect(CommandSpec spec) {
        Duration deadline = parseTimeout(timeout);
        String target = target(spec);
        String recent = io.mcctl.cli.shell.UnreachableMasters.recentFailure(target);
        if (recent != null) {
            throw new CliException(ExitCodes.UNAVAILABLE, recent);
        }
        io.mcctl.master.client.ClientSecurity security = connection.security(spec);
        try {
            return new MasterClient(target, deadline, security);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, e.getMessage());
        }
    }

    /** The call deadline {@code --timeout} gives. */
    public Duration callTimeout() {
        return parseTimeout(timeout);
    }

    /** TLS and token settings for a client of the master that is not a MasterClient of this command (a node's). */
    public io.mcctl.master.client.ClientSecurity security(CommandSpec spec) {
        return connection.security(spec);
    }

    /** A {@code --timeout} value: a duration of more than zero, else bad input naming what is allowed. */
    public static Duration parseTimeout(String timeout) {
        Duration deadline;
        try {
            deadline = DurationParser.parse(timeout);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --timeout '" + timeout + "': allowed is " + DurationParser.ALLOWED);
        }
        if (deadline.isZero()) {
            throw new CliException(ExitCodes.USAGE, "invalid --timeout '" + timeout + "': allowed is more than zero");
        }
        return deadline;
    }
}
