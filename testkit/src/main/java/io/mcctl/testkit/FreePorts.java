package io.mcctl.testkit;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;

/**
 * Loopback ports that nothing listens on when asked for, for a test to hand to what binds them itself (a master's
 * endpoints, a process's port). Another process may still take one before it is bound; what this rules out is the same
 * port twice in one call.
 */
public final class FreePorts {

    private FreePorts() {
    }

    /** One free port. */
    public static int one() throws IOException {
        return distinct(1)[0];
    }

    /**
     * {@code count} different free ports. Each is held open until all are chosen: ports asked for one after another, each
     * closed at once, can be the same port twice, since the kernel may hand a just-closed port out again.
     */
    public static int[] distinct(int count) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        try {
            int[] ports = new int[count];
            for (int i = 0; i < count; i++) {
                ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(socket);
                ports[i] = socket.getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket socket : held) {
                socket.close();
            }
        }
    }
}
