package io.mcctl.master.durability;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Puts the calling thread under Linux's SCHED_IDLE scheduling policy, for background work that must not
 * lengthen the tail latency of the calls it shares the machine with.
 *
 * <p>Why a policy and not rests: a snapshot thread that works in short stretches and sleeps in between still
 * holds a core for the rest of its time slice whenever a serving thread wakes up on it, and with two cores
 * that wait shows in every lookup's p99 (measured: p99 during a snapshot 2.5-3x idle however little of a
 * core the export took). The kernel preempts a SCHED_IDLE thread as soon as any normal thread on its core
 * wakes up, and gives it only time nobody else wants. Such a thread must never hold a lock that serving
 * threads take: under full load it may not run again for a long time.
 *
 * <p>Java has no call for this, so the policy is set by running {@code chrt --idle -p 0 TID} (util-linux) on
 * the thread's own id, read from {@code /proc/thread-self}. An unprivileged thread may always lower its
 * policy but cannot raise it back, so only a thread that ends with its work should call this.
 */
final class IdlePriority {

    /** The kernel's number for SCHED_IDLE, as {@code /proc/.../stat} reports the policy. */
    static final int SCHED_IDLE = 5;

    private IdlePriority() {
    }

    /** Lowers the calling thread to SCHED_IDLE; returns whether it now runs under it (false where Linux or chrt is missing). */
    static boolean lowerCurrentThread() {
        try {
            String tid = currentThreadId();
            Process chrt = new ProcessBuilder("chrt", "--idle", "-p", "0", tid).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!chrt.waitFor(10, TimeUnit.SECONDS)) {
                chrt.destroyForcibly();
                return false;
            }
            return chrt.exitValue() == 0 && policyOfCurrentThread() == SCHED_IDLE;
        } catch (IOException | RuntimeException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The calling thread's kernel id: {@code /proc/thread-self} links to {@code PID/task/TID}. */
    static String currentThreadId() throws IOException {
        return Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName().toString();
    }

    /** The calling thread's scheduling policy, field 41 of its stat line (0 is SCHED_OTHER). */
    static int policyOfCurrentThread() throws IOException {
        String stat = Files.readString(Path.of("/proc/thread-self/stat"));
        // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        return Integer.parseInt(fields[41 - 3]);
    }
}
