package io.mcctl.cli.command;

import io.mcctl.master.client.TierWriter;
import java.io.PrintWriter;
import java.util.ServiceLoader;

/**
 * Watches the steps of {@code mcctl offload} (allocated, written, about to notify). The binary ships none: one is
 * found through {@link ServiceLoader} only when a jar or directory on the classpath declares it, which is how the
 * process tests stop an offload at a chosen step.
 */
public interface OffloadObserver {

    /** The listener for one offload; {@code err} is where it may say what it does. */
    TierWriter.Listener listener(PrintWriter err);

    /** The listener of the first observer on the classpath, or one that does nothing. */
    static TierWriter.Listener load(PrintWriter err) {
        for (OffloadObserver observer : ServiceLoader.load(OffloadObserver.class)) {
            return observer.listener(err);
        }
        return TierWriter.Listener.NONE;
    }
}
