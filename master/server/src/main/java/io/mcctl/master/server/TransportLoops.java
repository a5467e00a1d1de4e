package io.mcctl.master.server;

import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.DefaultSelectStrategyFactory;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.SelectStrategyFactory;
import io.grpc.netty.shaded.io.netty.channel.ServerChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.grpc.netty.shaded.io.netty.util.concurrent.EventExecutor;
import io.mcctl.storage.config.DurationParser;
import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The master's gRPC transport threads, as event loops of its own rather than gRPC's shared ones: calls are served on
 * these threads (the server runs its handlers on them directly), and an answer that is completed on another thread,
 * the log's writer after a group commit, is handed back to the very loop its call is served on. That loop then encodes
 * and sends it with no thread in between, where a reply thread would be one more wake-up per answer, and the loop a
 * second one when the reply thread hands it the bytes. Epoll where the platform has it, as gRPC's own loops.
 *
 * <p>The listening channel carries a {@link ConnectionLimiter}, which holds the connections to the limits in force.
 *
 * <p>Thread-safe; closed once the server has stopped.
 */
public final class TransportLoops implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(TransportLoops.class);

    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final java.util.function.Supplier<ServerChannel> newListeningChannel;
    private final ConnectionLimiter limiter;

    private TransportLoops(EventLoopGroup boss, EventLoopGroup workers, java.util.function.Supplier<ServerChannel> newListeningChannel,
                           ConnectionLimits limits) {
        this.boss = boss;
        this.workers = workers;
        this.newListeningChannel = newListeningChannel;
        this.limiter = new ConnectionLimiter(limits);
    }

    /**
     * One thread accepting connections and Netty's default number of loops serving them, named after {@code name}; the
     * loops poll for {@code busyPoll} after their last work before they sleep ({@link PollBeforeSleep}), zero: they
     * sleep at once. Only epoll loops poll. Connections are held to {@code limits}.
     */
    public static TransportLoops start(String name, Duration busyPoll, ConnectionLimits limits) {
        long busyPollNanos = busyPoll.toNanos();
        if (Epoll.isAvailable()) {
            SelectStrategyFactory waiting = busyPollNanos > 0 ? () -> new PollBeforeSleep(busyPollNanos, System::nanoTime)
                    : DefaultSelectStrategyFactory.INSTANCE;
            return new TransportLoops(new EpollEventLoopGroup(1, new DefaultThreadFactory(name + "-accept", true)),
                    new EpollEventLoopGroup(0, new DefaultThreadFactory(name + "-transport", true), waiting), EpollServerSocketChannel::new,
                    limits);
        }
        if (busyPollNanos > 0) {
            // Netty's NIO loop takes a run of empty polls for the JDK's selector bug and rebuilds its selector every 512.
            LOG.warn("busy_poll {} is not used: it needs the epoll transport, which this platform lacks; the transport threads sleep "
                    + "as soon as they have nothing to do", DurationParser.format(busyPoll));
        }
        return new TransportLoops(new NioEventLoopGroup(1, new DefaultThreadFactory(name + "-accept", true)),
                new NioEventLoopGroup(0, new DefaultThreadFactory(name + "-transport", true)), NioServerSocketChannel::new, limits);
    }

    /**
     * Serves {@code builder}'s server on these loops, its connections held to the limits: at most so many open, the
     * {@link ConnectionLimiter} first in each listening channel's pipeline, and idle ones closed.
     */
    public NettyServerBuilder configure(NettyServerBuilder builder) {
        return builder.bossEventLoopGroup(boss).workerEventLoopGroup(workers)
                .channelFactory(() -> {
                    ServerChannel listening = newListeningChannel.get();
                    listening.pipeline().addLast("mcctl-connection-limit", limiter);
                    return listening;
                })
                .maxConnectionIdle(limiter.limits().idleTimeout().toNanos(), TimeUnit.NANOSECONDS);
    }

    /** The limits connections are held to. */
    public ConnectionLimits connectionLimits() {
        return limiter.limits();
    }

    /** Registers the connection metrics and the direct memory the transport's buffers take in {@code registry}. */
    public void registerMetrics(io.prometheus.metrics.model.registry.PrometheusRegistry registry) {
        io.prometheus.metrics.core.metrics.GaugeWithCallback.builder().name("mcctl_master_connections")
                .help("Client connections to the gRPC port open now").callback(cb -> cb.call(limiter.open())).register(registry);
        io.prometheus.metrics.core.metrics.GaugeWithCallback.builder().name("mcctl_master_max_connections")
                .help("Most client connections the gRPC port holds open at once (max_connections)")
                .callback(cb -> cb.call(limiter.limits().maxConnections())).register(registry);
        io.prometheus.metrics.core.metrics.CounterWithCallback.builder().name("mcctl_master_connections_accepted_total")
                .help("Client connections accepted since start").callback(cb -> cb.call(limiter.accepted())).register(registry);
        io.prometheus.metrics.core.metrics.CounterWithCallback.builder().name("mcctl_master_connections_refused_total")
                .help("Client connections closed as soon as they were accepted, max_connections being open")
                .callback(cb -> cb.call(limiter.refused())).register(registry);
        io.prometheus.metrics.core.metrics.CounterWithCallback.builder().name("mcctl_master_accept_failures_total")
                .help("Failed accepts of connections, such as for want of a file descriptor")
                .callback(cb -> cb.call(limiter.acceptFailures())).register(registry);
        io.prometheus.metrics.core.metrics.GaugeWithCallback.builder().name("mcctl_master_direct_memory_bytes")
                .help("Direct (off-heap) memory in use, most of it the transport's buffers of requests and answers")
                .callback(cb -> cb.call(directMemoryBytes())).register(registry);
    }

    /**
     * Direct memory in use: Netty's own allocations where it makes them without the JDK (its counter), plus the JDK's
     * direct buffers (where Netty allocates through the JDK, and anything else that does).
     */
    static long directMemoryBytes() {
        long netty = Math.max(0, io.grpc.netty.shaded.io.netty.util.internal.PlatformDependent.usedDirectMemory());
        long jdk = 0;
        for (java.lang.management.BufferPoolMXBean pool : java.lang.management.ManagementFactory
                .getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class)) {
            if (pool.getName().equals("direct")) {
                jdk += pool.getMemoryUsed();
            }
        }
        return netty + jdk;
    }

    /**
     * Where to complete an answer of a call served on the calling thread: that thread's loop when it is one of these
     * (tasks run after the loop's current reads), else {@code otherwise}. A loop that is shutting down refuses the task,
     * which then runs on {@code otherwise}: a task is never lost, nor thrown back at the thread that completes it.
     */
    public Executor currentLoopOr(Executor otherwise) {
        for (EventExecutor loop : workers) {
            if (loop.inEventLoop()) {
                return task -> {
                    try {
                        loop.execute(task);
                    } catch (RejectedExecutionException shuttingDown) {
                        otherwise.execute(task);
                    }
                };
            }
        }
        return otherwise;
    }

    /** Stops the loops once the server using them has stopped; returns at once (they finish in the background). */
    @Override
    public void close() {
        boss.shutdownGracefully(0, 2, TimeUnit.SECONDS);
        workers.shutdownGracefully(0, 2, TimeUnit.SECONDS);
    }
}
