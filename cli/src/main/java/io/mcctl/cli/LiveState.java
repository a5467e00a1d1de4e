package io.mcctl.cli;

import io.mcctl.master.durability.StateLock;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;

/**
 * For the offline tools that only read a state directory: says once, on stderr, when a master holds it, since what
 * they read may then change under them. Detected by trying the master's lock without keeping it ({@link StateLock#probe}).
 */
public final class LiveState {

    private LiveState() {
    }

    /** Warns once per state directory among {@code paths} (state directories, or snapshot files within one) that a master holds. */
    public static void warnIfLive(PrintWriter err, Path... paths) {
        Set<Path> dirs = new LinkedHashSet<>();
        for (Path path : paths) {
            if (path != null) {
                Path dir = Files.isDirectory(path) ? path : path.toAbsolutePath().getParent();
                if (dir != null) {
                    dirs.add(dir.toAbsolutePath().normalize());
                }
            }
        }
        Set<Path> warned = new LinkedHashSet<>();
        for (Path dir : dirs) {
            Optional<StateLock.Holder> holder;
            try {
                holder = StateLock.probe(dir);
            } catch (IOException e) {
                continue; // unreadable: the tool itself says what is wrong with it
            }
            if (holder.isPresent() && warned.add(holder.get().stateDir())) {
                err.println("mcctl: warning: " + holder.get().describe() + ": the state is live and may change while this reads it");
                err.flush();
            }
        }
    }
}
