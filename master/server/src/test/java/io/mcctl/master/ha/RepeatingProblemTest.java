package io.mcctl.master.ha;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A problem that repeats every two seconds, each time with another detail (the time its deadline took), as etcd's
 * lease grants fail while etcd is down: one line per condition and interval, with a count, on a clock the test moves.
 */
@Timeout(10)
class RepeatingProblemTest {

    static final String GRANT = "etcd at 127.0.0.1:2379 did not answer a lease grant: DEADLINE_EXCEEDED";

    final AtomicLong now = new AtomicLong(1_000_000_000L);
    final RepeatingProblem problems = new RepeatingProblem(Duration.ofMinutes(1), now::get);

    /** The failures of {@code seconds} seconds, one every two, each with its own timeout in the detail; the lines told. */
    List<String> failFor(int seconds, String condition) {
        List<String> told = new ArrayList<>();
        for (int s = 0; s < seconds; s += 2) {
            String line = problems.occurred(condition, "high availability: " + condition + " deadline exceeded after 1." + s + "s; trying again");
            if (line != null) {
                told.add(line);
            }
            now.addAndGet(Duration.ofSeconds(2).toNanos());
        }
        return told;
    }

    @Test
    void a_condition_repeating_with_different_details_is_told_once_a_minute_with_its_count() {
        List<String> told = failFor(150, GRANT);
        assertEquals(List.of(
                "high availability: " + GRANT + " deadline exceeded after 1.0s; trying again",
                "high availability: " + GRANT + " deadline exceeded after 1.60s; trying again (30 times since the last such line, 31 in all)",
                "high availability: " + GRANT + " deadline exceeded after 1.120s; trying again (30 times since the last such line, 61 in all)"),
                told);
        assertEquals("high availability: working again after 75 failures of: " + GRANT, problems.cleared("high availability: working again"));
    }

    @Test
    void another_condition_is_told_at_once_and_a_cleared_problem_starts_afresh() {
        failFor(10, GRANT);
        String other = "etcd at 127.0.0.1:2379 did not answer a campaign for /k: UNAVAILABLE";
        assertEquals(List.of("high availability: " + other + " deadline exceeded after 1.0s; trying again"), failFor(2, other));
        assertEquals("over after 1 failure of: " + other, problems.cleared("over"));
        assertNull(problems.cleared("over"), "nothing to tell without a problem");
        assertEquals(1, failFor(2, GRANT).size(), "after it cleared, the same condition is new again");
    }
}
