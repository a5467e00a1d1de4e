package io.mcctl.cli;

import java.util.concurrent.TimeUnit;

/**
 * Stops the Netty event loop that grpc-java shares between channels before mcctl exits. grpc-java keeps it for a
 * second after the last channel closes; its threads wait in epoll_wait, native code, and the JVM's exit waits up to
 * 300 ms for threads in native code, which would add 300 ms to every command that talked to the master.
 */
final class GrpcThreads {

    private GrpcThreads() {
    }

    /** Threads of grpc-java's shared event loop are named after it. */
    private static final String EVENT_LOOP_THREAD = "grpc-default-worker-ELG-";

    /**
     * Best effort: a grpc-java whose internals differ is left alone, costing only the wait. Nothing is done when no
     * channel was opened (the event loop's threads do not exist), so that commands without gRPC do not start it.
     */
    @SuppressWarnings("unchecked")
    static void stop() {
        Thread[] threads = new Thread[Thread.activeCount() + 16];
        int count = Thread.enumerate(threads);
        boolean running = false;
        for (int i = 0; i < count && !running; i++) {
            running = threads[i].getName().startsWith(EVENT_LOOP_THREAD);
        }
        if (!running) {
            return;
        }
        try {
            Class<?> utils = Class.forName("io.grpc.netty.shaded.io.grpc.netty.Utils", false, GrpcThreads.class.getClassLoader());
            java.lang.reflect.Field field = utils.getDeclaredField("DEFAULT_WORKER_EVENT_LOOP_GROUP");
            field.setAccessible(true);
            io.grpc.internal.SharedResourceHolder.Resource<Object> resource =
                    (io.grpc.internal.SharedResourceHolder.Resource<Object>) field.get(null);
            Object group = io.grpc.internal.SharedResourceHolder.get(resource);
            ((io.grpc.netty.shaded.io.netty.util.concurrent.EventExecutorGroup) group)
                    .shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).await(1, TimeUnit.SECONDS);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            // leave it: the exit is only slower
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
