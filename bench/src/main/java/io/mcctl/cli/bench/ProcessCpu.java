package io.mcctl.cli.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/** CPU time of a process: another one's from /proc/PID/stat (user plus system, all its threads), or this JVM's own. */
public final class ProcessCpu {

    /** Clock ticks per second of /proc's times (USER_HZ, 100 on every Linux the JDK supports). */
    private static final long TICKS_PER_SECOND = 100;

    private ProcessCpu() {
    }

    /** User plus system CPU of process {@code pid} so far, in nanoseconds (10 ms resolution). */
    public static long ofPid(long pid) {
        try {
            return ofStat(Files.readString(Path.of("/proc", Long.toString(pid), "stat")));
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read the CPU time of process " + pid + " from /proc: " + e.getMessage(), e);
        }
    }

    /** User plus system CPU in a /proc stat line (of a process or of one of its threads), in nanoseconds. */
    public static long ofStat(String stat) {
        // Fields after the command name, which is in parentheses and may hold spaces: state is field 3, utime 14, stime 15.
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
        return ticks * (1_000_000_000L / TICKS_PER_SECOND);
    }

    /**
     * The groups {@link #ofThreads} sums a master's threads into, by the kernel's name of each thread (its first 15
     * characters): the transport loops that serve calls, the log's writer, the snapshot writer, the collector's threads,
     * the JIT compilers, and every other thread (the reaper, the accept loop, the JVM's own).
     */
    public static final List<String> THREAD_GROUPS = List.of("transport", "log_writer", "snapshots", "collector", "compiler", "other");

    /**
     * User plus system CPU so far of each of {@link #THREAD_GROUPS} of a master's process {@code pid}, in nanoseconds (10 ms
     * resolution per thread), every group present. A thread that has ended is in none: over an interval the groups' sum
     * may fall short of {@link #ofPid}'s difference by the CPU of threads that ended within it.
     */
    public static Map<String, Long> ofThreads(long pid) {
        Map<String, Long> byGroup = new LinkedHashMap<>();
        for (String group : THREAD_GROUPS) {
            byGroup.put(group, 0L);
        }
        Path tasks = Path.of("/proc", Long.toString(pid), "task");
        try (Stream<Path> threads = Files.list(tasks)) {
            for (Path thread : (Iterable<Path>) threads::iterator) {
                String stat;
                try {
                    stat = Files.readString(thread.resolve("stat"));
                } catch (IOException ended) {
                    continue; // the thread ended after the listing
                }
                // The name is between the first '(' and the last ')': the kernel's copy of the thread's name.
                String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
                byGroup.merge(groupOf(name), ofStat(stat), Long::sum);
            }
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot read the CPU time of the threads of process " + pid + " from /proc: " + e.getMessage(), e);
        }
        return byGroup;
    }

    /** Which of {@link #THREAD_GROUPS} a thread of a master's process is in, by the kernel's (truncated) name of it. */
    static String groupOf(String name) {
        if (name.startsWith("mcctl-master-tr")) {
            return "transport"; // mcctl-master-transport-N-M
        }
        if (name.startsWith("mcctl-wal-write")) {
            return "log_writer";
        }
        if (name.startsWith("mcctl-snapshot")) {
            return "snapshots";
        }
        if (name.startsWith("GC Thread") || name.startsWith("G1 ")) {
            return "collector";
        }
        if (name.startsWith("C1 CompilerThre") || name.startsWith("C2 CompilerThre")) {
            return "compiler";
        }
        return "other";
    }

    /** This JVM's CPU time so far, in nanoseconds. */
    public static long ofThisProcess() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }
}
