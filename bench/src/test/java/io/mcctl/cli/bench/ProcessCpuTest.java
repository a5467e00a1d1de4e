package io.mcctl.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A process's CPU by thread group, read from /proc of this very JVM. */
@Timeout(60)
class ProcessCpuTest {

    @Test
    void a_thread_is_grouped_by_the_kernels_fifteen_character_name_of_it() {
        assertEquals("transport", ProcessCpu.groupOf("mcctl-master-tr"));
        assertEquals("log_writer", ProcessCpu.groupOf("mcctl-wal-write"));
        assertEquals("snapshots", ProcessCpu.groupOf("mcctl-snapshot-"));
        assertEquals("collector", ProcessCpu.groupOf("GC Thread#1"));
        assertEquals("collector", ProcessCpu.groupOf("G1 Conc#0"));
        assertEquals("compiler", ProcessCpu.groupOf("C2 CompilerThre"));
        assertEquals("other", ProcessCpu.groupOf("mcctl-master-re"));
        assertEquals("other", ProcessCpu.groupOf("VM Thread"));
    }

    @Test
    void a_threads_cpu_is_counted_in_its_group_and_the_groups_sum_to_no_more_than_the_process() throws Exception {
        long pid = ProcessHandle.current().pid();
        long writerBefore = ProcessCpu.ofThreads(pid).get("log_writer");
        CountDownLatch spent = new CountDownLatch(1);
        CountDownLatch read = new CountDownLatch(1);
        // Named as the log's writer is; it spends 100 ms of its own CPU, then stays alive (parked) until it has been read.
        Thread writer = new Thread(() -> {
            var threads = ManagementFactory.getThreadMXBean();
            while (threads.getCurrentThreadCpuTime() < 100_000_000L) {
                Thread.onSpinWait();
            }
            spent.countDown();
            try {
                read.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "mcctl-wal-writer");
        writer.start();
        try {
            spent.await();
            Map<String, Long> after = ProcessCpu.ofThreads(pid);
            long total = ProcessCpu.ofPid(pid);
            assertEquals(ProcessCpu.THREAD_GROUPS, List.copyOf(after.keySet()));
            long counted = after.get("log_writer") - writerBefore;
            assertTrue(counted >= 80_000_000L, "100 ms of the thread's CPU, counted at 10 ms ticks: " + counted + " ns");
            long sum = after.values().stream().mapToLong(Long::longValue).sum();
            // Each thread's time is whole ticks, the process's too: at most a tick apart per thread.
            long threads;
            try (var tasks = java.nio.file.Files.list(java.nio.file.Path.of("/proc", Long.toString(pid), "task"))) {
                threads = tasks.count();
            }
            assertTrue(sum <= total + 10_000_000L * threads, sum + " > " + total);
        } finally {
            read.countDown();
            writer.join();
        }
    }
}
