package io.mcctl.cli.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

/** The floor for RPC latency: the round trip of one byte over a plain TCP connection on loopback. */
public final class TcpEcho {

    private TcpEcho() {
    }

    /** Measures {@code rounds} one-byte round trips after a warm-up. */
    public static LatencyRecorder measure(int rounds) throws IOException, InterruptedException {
        LatencyRecorder latencies = new LatencyRecorder();
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread echo = new Thread(() -> {
                try (Socket peer = server.accept()) {
                    peer.setTcpNoDelay(true);
                    InputStream in = peer.getInputStream();
                    OutputStream out = peer.getOutputStream();
                    int b;
                    while ((b = in.read()) >= 0) {
                        out.write(b);
                        out.flush();
                    }
                } catch (IOException ignored) {
                    // the client closed
                }
            }, "tcp-echo");
            echo.setDaemon(true);
            echo.start();
            try (Socket client = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort())) {
                client.setTcpNoDelay(true);
                InputStream in = client.getInputStream();
                OutputStream out = client.getOutputStream();
                for (int i = 0; i < rounds + rounds / 5; i++) {
                    long start = System.nanoTime();
                    out.write(1);
                    out.flush();
                    if (in.read() < 0) {
                        throw new IOException("echo closed");
                    }
                    if (i >= rounds / 5) {
                        latencies.record(System.nanoTime() - start);
                    }
                }
            }
            echo.join(1000);
        }
        return latencies;
    }
}
