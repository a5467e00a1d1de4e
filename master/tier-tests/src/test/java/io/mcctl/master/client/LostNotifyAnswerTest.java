package io.mcctl.master.client;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.testkit.AnswerCuttingRelay;
import io.mcctl.testkit.TierCluster;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A notify that reached the master, which committed it, whose answer was lost with its connection, and whose later
 * attempts could not reach the master before the allocation deadline (a real master behind a relay that holds the
 * answer, then closes every connection and stops listening): the writer must report that the outcome is unknown, never
 * that the notify was not sent or failed, since the key is committed.
 */
@Timeout(60)
class LostNotifyAnswerTest {

    static final String TENANT = "t";

    @TempDir
    Path root;

    @Test
    void a_notify_whose_answer_was_lost_ends_outcome_unknown_though_every_later_attempt_was_refused() throws Exception {
        String key = "lost-answer";
        try (TierCluster cluster = TierCluster.start(TierCluster.smallLayout(root, 4), Duration.ofSeconds(3), Duration.ofSeconds(30), 0);
             AnswerCuttingRelay relay = AnswerCuttingRelay.start(cluster.target());
             MasterClient viaRelay = new MasterClient(relay.target(), Duration.ofSeconds(10), ClientSecurity.NONE, MasterClient.Transport.UNARY);
             TierNode node = TierNode.connect(viaRelay, true, new ClientMetrics())) {
            MasterException failure = relay.offloadLosingTheNotifyAnswer(cluster, node, TENANT, key, 9000);
            assertFalse(failure.notSent(), "told not sent, though the first attempt reached the master: " + failure.getMessage());
            assertTrue(failure.outcomeUnknown(), failure.getMessage());
            assertTrue(failure.getMessage().contains("the outcome is unknown: check with mcctl stat " + key), failure.getMessage());
        }
    }
}
