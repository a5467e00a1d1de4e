package io.mcctl.master.client;

import static io.mcctl.testkit.TestObjects.bytesOf;
import static io.mcctl.testkit.TestObjects.content;
import static io.mcctl.testkit.TestObjects.object;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.mcctl.testkit.AnswerCuttingRelay;
import io.mcctl.testkit.TierCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
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
            TierWriter writer = new TierWriter(node, new TierWriter.Listener() {
                @Override
                public void beforeNotify(List<String> keys) {
                    relay.holdAnswersFrom(relay.streamsOpened() + 1); // the notify's answer never comes back
                }
            });
            CompletableFuture<List<TierWriter.Outcome>> offload = CompletableFuture.supplyAsync(
                    () -> writer.offload(TENANT, List.of(object(key, 9000)), true));

            MasterClient direct = cluster.newClient();
            if (!TierCluster.await(Duration.ofSeconds(20), () -> relay.holding() && direct.exists(TENANT, key))) {
                fail("the notify did not commit " + key + " on the master (relay holding: " + relay.holding() + ")");
            }
            relay.cut(); // the connection under the notify is lost; every later attempt is refused

            MasterException failure;
            try {
                List<TierWriter.Outcome> outcomes = offload.get(30, TimeUnit.SECONDS);
                throw new AssertionError("the offload was answered although its answer was held: " + outcomes);
            } catch (ExecutionException e) {
                failure = (MasterException) e.getCause();
            }
            assertFalse(failure.notSent(), "told not sent, though the first attempt reached the master: " + failure.getMessage());
            assertTrue(failure.outcomeUnknown(), failure.getMessage());
            assertTrue(failure.getMessage().contains("the outcome is unknown: check with mcctl stat " + key), failure.getMessage());

            TierCluster.Node reader = cluster.addNode();
            var read = reader.reader().get(TENANT, List.of(key)).get(0);
            assertTrue(read.ok(), "the master committed the key: " + read.message());
            assertArrayEquals(content(key, 9000), bytesOf(read.data()));
        }
    }
}
