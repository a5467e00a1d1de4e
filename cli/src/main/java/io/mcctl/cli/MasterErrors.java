package io.mcctl.cli;

import io.mcctl.master.client.MasterClient;
import java.net.UnknownHostException;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * One-line reports of a master address that cannot work at all: a host name that does not resolve, or a port
 * that answers but does not speak gRPC (the metrics port, a web server). Both are {@link ExitCodes#UNAVAILABLE}.
 */
final class MasterErrors {

    /** The start of what an HTTP/1 server answers; Netty's HTTP/2 codec names the first bytes it got in hex. */
    private static final String HTTP1_ANSWER_HEX = "485454502f"; // "HTTP/"

    private MasterErrors() {
    }

    /** The one-line report when {@code failure} is one of those, else null. */
    static String unreachable(Throwable failure, CommandSpec command) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof UnknownHostException) {
                String target = target(command);
                String host = target == null ? cause.getMessage() : target.substring(0, target.lastIndexOf(':'));
                return "cannot resolve host " + host + " (the master address given by --master or " + ClientOptions.MASTER_ENV + ")";
            }
            // Netty's Http2Exception, matched by name: grpc-netty-shaded relocates its package.
            if (cause.getClass().getSimpleName().equals("Http2Exception") && cause.getMessage() != null
                    && cause.getMessage().contains("not SETTINGS")) {
                String target = target(command);
                String what = target == null ? "the master address" : target;
                return what + " does not speak gRPC: is it the metrics port? (it answered "
                        + (cause.getMessage().contains(HTTP1_ANSWER_HEX) ? "HTTP/1" : "something else") + "; the master's gRPC port is "
                        + MasterClient.DEFAULT_TARGET.substring(MasterClient.DEFAULT_TARGET.lastIndexOf(':') + 1) + " by default)";
            }
        }
        return null;
    }

    /** The master address {@code command} used: its --master, else the environment's, else the default. */
    static String target(CommandSpec command) {
        OptionSpec option = command.findOption("--master");
        Object value = option == null ? null : option.getValue();
        if (value != null) {
            return value.toString();
        }
        return CommandEnvironment.of(command).getOrDefault(ClientOptions.MASTER_ENV, MasterClient.DEFAULT_TARGET);
    }
}
