package io.mcctl.cli;

import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.proto.v1.GetLayoutResponse;
import io.mcctl.master.service.KeyRules;
import io.mcctl.storage.config.DurationParser;
import io.mcctl.storage.layout.BucketLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/** {@code --master}, {@code --tenant} and {@code --timeout} for every command that talks to a master. */
public final class ClientOptions {

    /** Environment variable with the master's address. */
    public static final String MASTER_ENV = "MCCTL_MASTER";

    @Option(names = "--master", paramLabel = "HOST:PORT",
            description = "Master address (default: $" + MASTER_ENV + ", else " + MasterClient.DEFAULT_TARGET + ").")
    String master;

    @Option(names = "--tenant", paramLabel = "TENANT", defaultValue = "default",
            description = "Tenant whose keys to use: " + KeyRules.TENANT_CHARACTERS + ", at most 64 (default: ${DEFAULT-VALUE}).")
    String tenant;

    @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "10s",
            description = "Deadline of each call to the master (default: ${DEFAULT-VALUE}).")
    String timeout;

    public String tenant() {
        String problem = KeyRules.checkTenant(tenant);
        if (problem != null) {
            throw new CliException(ExitCodes.USAGE, "invalid --tenant: " + problem);
        }
        return tenant;
    }

    public String target(CommandSpec spec) {
        String target = master != null ? master : McctlCommand.environment(spec).getOrDefault(MASTER_ENV, MasterClient.DEFAULT_TARGET);
        try {
            return MasterClient.checkTarget(target);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, e.getMessage() + (master == null && McctlCommand.environment(spec).containsKey(MASTER_ENV)
                    ? " (from environment " + MASTER_ENV + ")" : ""));
        }
    }

    public MasterClient connect(CommandSpec spec) {
        Duration deadline;
        try {
            deadline = DurationParser.parse(timeout);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --timeout '" + timeout + "': allowed is " + DurationParser.ALLOWED);
        }
        if (deadline.isZero()) {
            throw new CliException(ExitCodes.USAGE, "invalid --timeout '" + timeout + "': allowed is more than zero");
        }
        String target = target(spec);
        tenant();
        return new MasterClient(target, deadline);
    }

    /**
     * This node's view of the master's root, checked against the master's layout. A root that is not there (the
     * shared filesystem not mounted) is {@link ExitCodes#UNAVAILABLE}, naming the bucket file that was expected.
     */
    public static TierNode node(MasterClient master, boolean writable) throws IOException {
        try {
            return TierNode.connect(master, writable, new ClientMetrics());
        } catch (NoSuchFileException e) {
            GetLayoutResponse layout = master.layout();
            Path root = Path.of(layout.getRootDir());
            if (Files.isDirectory(root)) {
                throw e;
            }
            Path expected = root.resolve(BucketLayout.bucketFileName(0));
            throw new CliException(ExitCodes.UNAVAILABLE, "the master at " + master.target() + " keeps its bucket files under " + root
                    + ", but " + expected + " is not on this node: check that the shared filesystem is mounted at " + root
                    + " (mcctl mount validate)", e);
        }
    }
}
