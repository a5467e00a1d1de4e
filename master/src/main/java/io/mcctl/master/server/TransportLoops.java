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
import java.nio.channels.spi.SelectorProvider;
import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The master's gRPC transport threads, as event loops of its own rather than gRPC's shared ones: calls are served on
 * these threads (the server runs its handlers on them directly), and an answer that is completed on another thread,
 * the log's writer after a group commit, is handed back to the very loop its call is served on. That loop then encodes
 * and sends it with no thread in between, where a reply thread would be one more wake-up per answer, and the loop a
 * second one when the reply thread hands it the bytes. Epoll where the platform has it, as gRPC's own loops.
 *
 * <p>Thread-safe; closed once the server has stopped.
 */
public final class TransportLoops implements AutoCloseable {

    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final Class<? extends ServerChannel> channelType;

    private TransportLoops(EventLoopGroup boss, EventLoopGroup workers, Class<? extends ServerChannel> channelType) {
        this.boss = boss;
        this.workers = workers;
        this.channelType = channelType;
    }

    /**
     * One thread accepting connections and Netty's default number of loops serving them, named after {@code name}; the
     * loops poll for {@code busyPoll} after their last work before they sleep ({@link PollBeforeSleep}), zero: they
     * sleep at once.
     */
    public static TransportLoops start(String name, Duration busyPoll) {
        long busyPollNanos = busyPoll.toNanos();
        SelectStrategyFactory waiting = busyPollNanos > 0 ? () -> new PollBeforeSleep(busyPollNanos, System::nanoTime)
                : DefaultSelectStrategyFactory.INSTANCE;
        if (Epoll.isAvailable()) {
            return new TransportLoops(new EpollEventLoopGroup(1, new DefaultThreadFactory(name + "-accept", true)),
                    new EpollEventLoopGroup(0, new DefaultThreadFactory(name + "-transport", true), waiting), EpollServerSocketChannel.class);
        }
        return new TransportLoops(new NioEventLoopGroup(1, new DefaultThreadFactory(name + "-accept", true)),
                new NioEventLoopGroup(0, new DefaultThreadFactory(name + "-transport", true), SelectorProvider.provider(), waiting),
                NioServerSocketChannel.class);
    }

    /** Serves {@code builder}'s server on these loops. */
    public NettyServerBuilder configure(NettyServerBuilder builder) {
        return builder.bossEventLoopGroup(boss).workerEventLoopGroup(workers).channelType(channelType);
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
