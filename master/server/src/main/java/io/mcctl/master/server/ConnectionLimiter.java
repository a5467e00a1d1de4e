package io.mcctl.master.server;

import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelConfig;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandler;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Holds the gRPC port's connections to {@link ConnectionLimits#maxConnections}. It sits in the listening channel's
 * pipeline ahead of Netty's acceptor, so it sees each accepted connection first: one past the limit is closed at once,
 * before gRPC sets anything up for it (the client sees the connection closed and retries later), and counted. A failed
 * accept, such as the process running out of descriptors, pauses accepting for a second as Netty's acceptor would,
 * without the acceptor's warning and stack trace every second. Both conditions are logged in one line at most every
 * {@link #LOG_INTERVAL}, with how often they occurred.
 *
 * <p>Thread-safe: counters only. Accepts and accept failures come on the accepting thread; closes on the transport threads.
 */
@ChannelHandler.Sharable
final class ConnectionLimiter extends ChannelInboundHandlerAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(ConnectionLimiter.class);
    static final Duration LOG_INTERVAL = Duration.ofSeconds(10);
    /** How long accepting pauses after an accept failed (Netty's acceptor pauses as long). */
    private static final long ACCEPT_PAUSE_MILLIS = 1000;

    private final ConnectionLimits limits;
    private final AtomicInteger open = new AtomicInteger();
    private final LongAdder accepted = new LongAdder();
    private final LongAdder refused = new LongAdder();
    private final LongAdder acceptFailures = new LongAdder();
    private final RateLimitedLog refusedLog = new RateLimitedLog(LOG, LOG_INTERVAL, System::nanoTime);
    private final RateLimitedLog failedLog = new RateLimitedLog(LOG, LOG_INTERVAL, System::nanoTime);

    ConnectionLimiter(ConnectionLimits limits) {
        this.limits = limits;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        Channel connection = (Channel) msg;
        if (open.incrementAndGet() > limits.maxConnections()) {
            open.decrementAndGet();
            // Not registered with a loop yet: closed here, on the accepting thread, as Netty's acceptor closes one it cannot register.
            connection.unsafe().closeForcibly();
            refused.increment();
            refusedLog.occurred(() -> "connection from " + connection.remoteAddress() + " refused: all " + limits.maxConnections()
                    + " connections max_connections allows are open (" + limits.derivation() + "); find the clients that hold so many, "
                    + "or raise max_connections (mcctl_master_connections_refused_total counts the refusals)");
            return;
        }
        accepted.increment();
        connection.closeFuture().addListener(closed -> open.decrementAndGet());
        ctx.fireChannelRead(connection);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        acceptFailures.increment();
        failedLog.occurred(() -> "accepting a connection failed: " + cause.getMessage() + "; " + open.get() + " connections open "
                + "(max_connections " + limits.maxConnections() + "); accepting pauses for a second. Too many open files means "
                + "something other than connections holds the descriptors, or the open-file limit is below what max_connections "
                + "was set for (LimitNOFILE=, ulimit -n)");
        ChannelConfig config = ctx.channel().config();
        if (config.isAutoRead()) {
            config.setAutoRead(false);
            ctx.channel().eventLoop().schedule(() -> config.setAutoRead(true), ACCEPT_PAUSE_MILLIS, TimeUnit.MILLISECONDS);
        }
    }

    int open() {
        return open.get();
    }

    long accepted() {
        return accepted.sum();
    }

    long refused() {
        return refused.sum();
    }

    long acceptFailures() {
        return acceptFailures.sum();
    }

    ConnectionLimits limits() {
        return limits;
    }
}
