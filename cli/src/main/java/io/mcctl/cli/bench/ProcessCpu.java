package io.mcctl.cli.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

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

    /** This JVM's CPU time so far, in nanoseconds. */
    public static long ofThisProcess() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }
}
