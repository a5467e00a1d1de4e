package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.cli.bench.EtcdCluster;
import io.mcctl.master.client.ClientMetrics;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.client.TierNode;
import io.mcctl.master.etcd.EtcdClient;
import io.mcctl.testkit.AnswerCuttingRelay;
import io.mcctl.testkit.TierCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client given {@code etcd://} whose notify reached the leader (a real master behind a relay, named in real etcd as
 * the leader), which committed it, while the answer was lost with the connection; the channel sends it again and every
 * later attempt is refused until the call's deadline. The channel must close the call as an unknown outcome, not as the
 * last attempt's refusal, and so must the writer.
 */
@Tag("process")
@Timeout(120)
class LeaderFollowingLostAnswerProcessTest {

    static final String TENANT = "t";

    @TempDir
    Path dir;

    @Test
    void a_resent_call_whose_first_attempt_may_have_landed_ends_outcome_unknown_though_the_later_attempts_were_refused() throws Exception {
        String key = "lost-answer";
        Path root = Files.createDirectories(dir.resolve("root"));
        try (EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"), 1);
             TierCluster cluster = TierCluster.start(TierCluster.smallLayout(root, 4), Duration.ofSeconds(4), Duration.ofSeconds(30), 0);
             AnswerCuttingRelay relay = AnswerCuttingRelay.start(cluster.target())) {
            try (EtcdClient names = new EtcdClient(etcd.target("/lost"), Duration.ofSeconds(5))) {
                names.put("/lost/mcctl/relayed/leader", relay.target(), 0);
            }
            // A call deadline well within the allocation deadline: the channel gives up on its own, then the writer resends.
            try (MasterClient client = new MasterClient(etcd.url("/lost"), Duration.ofMillis(1200));
                 TierNode node = TierNode.connect(client, true, new ClientMetrics())) {
                MasterException failure = relay.offloadLosingTheNotifyAnswer(cluster, node, TENANT, key, 5000);
                assertFalse(failure.notSent(), "told not sent, though the first attempt reached the master: " + failure.getMessage());
                assertTrue(failure.outcomeUnknown(), failure.getMessage());
                assertTrue(failure.getMessage().contains("the outcome is unknown: check with mcctl stat " + key), failure.getMessage());
            }
        }
    }
}
