package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.grpc.netty.shaded.io.netty.channel.SelectStrategy;
import io.grpc.netty.shaded.io.netty.util.IntSupplier;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A transport loop's choice between polling again and sleeping, on a clock the test moves: it polls while its last work
 * is younger than the busy poll, sleeps once it is older, and counts its wake-up, any ready connection and any task as
 * work.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class PollBeforeSleepTest {

    private long now = 1_000_000;
    /** What the loop's non-blocking poll finds ready next. */
    private int ready;
    private int polls;
    private final IntSupplier pollNow = () -> {
        polls++;
        return ready;
    };

    @Test
    void the_loop_polls_until_its_last_work_is_as_old_as_the_busy_poll_then_sleeps() throws Exception {
        PollBeforeSleep strategy = new PollBeforeSleep(50_000, () -> now);
        ready = 2;
        assertEquals(2, strategy.calculateStrategy(pollNow, false), "what is ready is served");
        ready = 0;
        now += 49_999;
        assertEquals(0, strategy.calculateStrategy(pollNow, false), "nothing ready yet: round again without sleeping");
        now += 1;
        assertEquals(SelectStrategy.SELECT, strategy.calculateStrategy(pollNow, false), "the busy poll has passed since the last work");
        assertEquals(3, polls, "each round polls once, the one that sleeps too");
    }

    @Test
    void a_wake_up_a_ready_connection_and_a_task_each_start_the_busy_poll_again() throws Exception {
        PollBeforeSleep strategy = new PollBeforeSleep(50_000, () -> now);
        now += 60_000;
        assertEquals(SelectStrategy.SELECT, strategy.calculateStrategy(pollNow, false), "no work since it was made: it sleeps");

        now += 10_000_000; // slept 10 ms, woken by a connection it served at once
        now += 40_000;
        assertEquals(0, strategy.calculateStrategy(pollNow, false), "its wake-up was work 40 µs ago: it polls");
        now += 40_000;
        assertEquals(0, strategy.calculateStrategy(pollNow, true), "a task to run is work");
        now += 40_000;
        assertEquals(0, strategy.calculateStrategy(pollNow, false), "40 µs after the task: it polls");
        ready = 1;
        now += 40_000;
        assertEquals(1, strategy.calculateStrategy(pollNow, false));
        ready = 0;
        now += 49_999;
        assertEquals(0, strategy.calculateStrategy(pollNow, false));
        now += 1;
        assertEquals(SelectStrategy.SELECT, strategy.calculateStrategy(pollNow, false));
    }

    @Test
    void a_busy_poll_that_is_not_positive_is_refused() {
        assertThrows(IllegalArgumentException.class, () -> new PollBeforeSleep(0, () -> now));
        assertThrows(IllegalArgumentException.class, () -> new PollBeforeSleep(-1, () -> now));
    }
}
