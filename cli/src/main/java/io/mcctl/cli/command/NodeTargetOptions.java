package io.mcctl.cli.command;

import io.grpc.Status;
import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.MasterOptions;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.node.NodeClient;
import io.mcctl.master.node.NodeException;
import io.mcctl.master.protocol.KeyRules;
import picocli.CommandLine.Option;

/** {@code --node}, {@code --tenant} and {@code --timeout} of the commands that go through a node. */
public final class NodeTargetOptions {

    @Option(names = "--node", paramLabel = "HOST:PORT", required = true,
            description = "The node's endpoint, as mcctl node start printed it (mcctl node status lists them).")
    String node;

    @Option(names = "--tenant", paramLabel = "TENANT", defaultValue = "default",
            description = "Tenant whose keys to use: " + KeyRules.TENANT_CHARACTERS + ", at most 64 (default: ${DEFAULT-VALUE}).")
    String tenant;

    @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "30s",
            description = "Deadline of the call to the node (default: ${DEFAULT-VALUE}).")
    String timeout;

    String tenant() {
        String problem = KeyRules.checkTenant(tenant);
        if (problem != null) {
            throw new CliException(ExitCodes.USAGE, "invalid --tenant: " + problem);
        }
        return tenant;
    }

    NodeClient connect() {
        tenant();
        try {
            MasterClient.checkTarget(node);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --node '" + node + "': allowed is host:port");
        }
        return new NodeClient(node, MasterOptions.parseTimeout(timeout));
    }

    /** A node's refusal as the command's exit: one line, the code its status means. */
    static CliException failure(NodeException e) {
        int code = switch (e.code()) {
            case NOT_FOUND -> ExitCodes.NOT_FOUND;
            case INVALID_ARGUMENT -> ExitCodes.USAGE;
            case UNAVAILABLE, DEADLINE_EXCEEDED -> ExitCodes.UNAVAILABLE;
            default -> ExitCodes.FAILED;
        };
        return new CliException(code, e.getMessage(), e);
    }

    static boolean isStatus(NodeException e, Status.Code code) {
        return e.code() == code;
    }
}
