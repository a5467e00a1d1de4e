package io.mcctl.master.protocol;

import io.grpc.Server;
import java.util.concurrent.TimeUnit;

/** How the master's and the node's gRPC servers stop, so that a caller of either sees the same grace. */
public final class GrpcServers {

    private GrpcServers() {
    }

    /** Stops a gRPC server: calls in progress get 5 s to finish, then the rest are cut (5 s more to let go). */
    public static void stop(Server server) {
        server.shutdown();
        try {
            if (!server.awaitTermination(5, TimeUnit.SECONDS)) {
                server.shutdownNow();
                server.awaitTermination(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            server.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }
}
