package io.mcctl.testkit;

import static io.mcctl.testkit.TestObjects.bytesOf;
import static io.mcctl.testkit.TestObjects.content;
import static io.mcctl.testkit.TestObjects.object;

import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.client.TierReader;
import io.mcctl.master.client.TierWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP relay on loopback in front of a real master, for the failures a client cannot be made to meet otherwise: a call
 * that reaches the master (which acts on it) while its answer never comes back, and a master that cannot be reached
 * afterwards. It reads just enough of the HTTP/2 the clients send to count the calls (streams) they open: from the one
 * {@link #holdAnswersFrom} names, nothing the master sends reaches the clients, and {@link #cut} then closes every
 * connection and the listening socket, so that the next connection is refused.
 *
 * <p>Thread-safe: one thread accepts, two threads pump each connection; {@code connections} is guarded by itself.
 */
public final class AnswerCuttingRelay implements AutoCloseable {

    private static final int PREFACE_BYTES = 24; // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    private static final int FRAME_HEADER_BYTES = 9;
    private static final int HEADERS_FRAME = 0x1;

    private final ServerSocket listener;
    private final String upstreamHost;
    private final int upstreamPort;
    private final List<Socket> connections = new ArrayList<>();
    private final AtomicInteger streamsOpened = new AtomicInteger();
    private volatile int holdFrom = Integer.MAX_VALUE;
    private volatile boolean holding;

    private AnswerCuttingRelay(ServerSocket listener, String upstreamHost, int upstreamPort) {
        this.listener = listener;
        this.upstreamHost = upstreamHost;
        this.upstreamPort = upstreamPort;
    }

    /** A relay on a free loopback port to {@code upstream} ({@code host:port}). */
    public static AnswerCuttingRelay start(String upstream) throws IOException {
        int colon = upstream.lastIndexOf(':');
        AnswerCuttingRelay relay = new AnswerCuttingRelay(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()),
                upstream.substring(0, colon), Integer.parseInt(upstream.substring(colon + 1)));
        Thread accepting = new Thread(relay::accept, "relay-accept");
        accepting.setDaemon(true);
        accepting.start();
        return relay;
    }

    /** The address clients connect to. */
    public String target() {
        return "127.0.0.1:" + listener.getLocalPort();
    }

    /** How many calls (HTTP/2 streams) the clients have opened through the relay so far. */
    public int streamsOpened() {
        return streamsOpened.get();
    }

    /** From the {@code stream}-th call the clients open (counting from 1), no byte from the master reaches them. */
    public void holdAnswersFrom(int stream) {
        holdFrom = stream;
    }

    /** Whether the call {@link #holdAnswersFrom} named has been opened (and so has reached, or is reaching, the master). */
    public boolean holding() {
        return holding;
    }

    /** Closes the listening socket (a connection is refused from now on) and every connection relayed. */
    public void cut() {
        try {
            listener.close();
        } catch (IOException ignored) {
            // closed either way
        }
        synchronized (connections) {
            for (Socket socket : connections) {
                try {
                    socket.setSoLinger(true, 0); // a reset, as a host that went away leaves it
                    socket.close();
                } catch (IOException ignored) {
                    // closed either way
                }
            }
            connections.clear();
        }
    }

    @Override
    public void close() {
        cut();
    }

    /**
     * Offloads {@code key} ({@link TestObjects#content} of {@code size} bytes) through {@code node}, whose master is
     * {@code cluster}'s behind this relay: the notify's answer is held, and once the master has committed the key the
     * relay is cut, so that the notify's connection is lost and every later attempt is refused. Checks that the key is
     * committed with its bytes, and returns what the offload threw (an offload that returns is an error: its answer was
     * held).
     */
    public MasterException offloadLosingTheNotifyAnswer(TierCluster cluster, TierNode node, String tenant, String key, int size)
            throws IOException, InterruptedException, ExecutionException, TimeoutException {
        TierWriter writer = new TierWriter(node, new TierWriter.Listener() {
            @Override
            public void beforeNotify(List<String> keys) {
                holdAnswersFrom(streamsOpened() + 1); // the notify's answer never comes back
            }
        });
        CompletableFuture<List<TierWriter.Outcome>> offload = CompletableFuture.supplyAsync(
                () -> writer.offload(tenant, List.of(object(key, size)), true));
        MasterClient direct = cluster.newClient();
        if (!TierCluster.await(Duration.ofSeconds(20), () -> holding() && direct.exists(tenant, key))) {
            throw new AssertionError("the notify did not commit " + key + " on the master (relay holding: " + holding() + ")");
        }
        cut();
        MasterException failure;
        try {
            List<TierWriter.Outcome> outcomes = offload.get(60, TimeUnit.SECONDS);
            throw new AssertionError("the offload was answered although its answer was held: " + outcomes);
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof MasterException thrown)) {
                throw e;
            }
            failure = thrown;
        }
        TierReader.Outcome read = cluster.addNode().reader().get(tenant, List.of(key)).get(0);
        if (!read.ok() || !Arrays.equals(content(key, size), bytesOf(read.data()))) {
            throw new AssertionError("the master committed " + key + " but it does not read back: " + read.message());
        }
        return failure;
    }

    private void accept() {
        while (!listener.isClosed()) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException closed) {
                return;
            }
            Socket master;
            try {
                master = new Socket(upstreamHost, upstreamPort);
            } catch (IOException e) {
                closeQuietly(client);
                continue;
            }
            synchronized (connections) {
                if (listener.isClosed()) {
                    closeQuietly(client);
                    closeQuietly(master);
                    return;
                }
                connections.add(client);
                connections.add(master);
            }
            pump("relay-to-master", client, master, new StreamCounter());
            pump("relay-to-client", master, client, null);
        }
    }

    /** Copies {@code from} to {@code to}: counting the streams opened when {@code counter} is given, else dropping what a hold covers. */
    private void pump(String name, Socket from, Socket to, StreamCounter counter) {
        Thread thread = new Thread(() -> {
            byte[] buffer = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                for (int n; (n = in.read(buffer)) > 0; ) {
                    if (counter != null) {
                        counter.scan(buffer, n); // before the bytes go on: a hold is in place before the master has the call
                    } else if (holding) {
                        continue;
                    }
                    out.write(buffer, 0, n);
                }
            } catch (IOException ended) {
                // one side closed or was cut
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, name);
        thread.setDaemon(true);
        thread.start();
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closed either way
        }
    }

    /** Follows the HTTP/2 frames a client sends on one connection, counting the streams its HEADERS frames open. */
    private final class StreamCounter {
        private int prefaceLeft = PREFACE_BYTES;
        private final byte[] header = new byte[FRAME_HEADER_BYTES];
        private int headerHave;
        private long payloadLeft;
        private int lastStream;

        void scan(byte[] bytes, int length) {
            int i = 0;
            while (i < length) {
                if (prefaceLeft > 0) {
                    int skip = Math.min(prefaceLeft, length - i);
                    prefaceLeft -= skip;
                    i += skip;
                } else if (payloadLeft > 0) {
                    int skip = (int) Math.min(payloadLeft, length - i);
                    payloadLeft -= skip;
                    i += skip;
                } else {
                    header[headerHave++] = bytes[i++];
                    if (headerHave == FRAME_HEADER_BYTES) {
                        headerHave = 0;
                        frame();
                    }
                }
            }
        }

        private void frame() {
            payloadLeft = ((header[0] & 0xffL) << 16) | ((header[1] & 0xffL) << 8) | (header[2] & 0xffL);
            int type = header[3] & 0xff;
            int stream = ((header[5] & 0x7f) << 24) | ((header[6] & 0xff) << 16) | ((header[7] & 0xff) << 8) | (header[8] & 0xff);
            if (type == HEADERS_FRAME && stream > lastStream) {
                lastStream = stream;
                if (streamsOpened.incrementAndGet() >= holdFrom) {
                    holding = true;
                }
            }
        }
    }
}
