package io.mcctl.master.durability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The snapshot writer's scheduling policy, read back from the kernel. */
@Timeout(30)
class IdlePriorityTest {

    @Test
    void a_thread_that_lowers_itself_runs_under_sched_idle_and_other_threads_keep_their_policy() throws Exception {
        int[] before = new int[1];
        CompletableFuture<Integer> lowered = new CompletableFuture<>();
        Thread worker = new Thread(() -> {
            try {
                before[0] = IdlePriority.policyOfCurrentThread();
                boolean ok = IdlePriority.lowerCurrentThread();
                lowered.complete(ok ? IdlePriority.policyOfCurrentThread() : -1);
            } catch (Exception e) {
                lowered.completeExceptionally(e);
            }
        });
        worker.start();
        assertEquals(IdlePriority.SCHED_IDLE, lowered.get(20, TimeUnit.SECONDS), "policy after chrt --idle (-1: chrt failed)");
        assertEquals(0, before[0], "a new thread starts under SCHED_OTHER");
        assertEquals(0, IdlePriority.policyOfCurrentThread(), "the test's own thread is untouched");
        assertTrue(IdlePriority.currentThreadId().matches("[0-9]+"));
    }
}
