package io.mcctl.master.server;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.mcctl.master.client.ClientSecurity;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.proto.v1.DistributedDiskDescriptor;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A master that is still recovering its state refuses every call before any method runs; a client knows that such a
 * refusal changed nothing, so that a writer whose master restarted sends its notify again instead of calling the
 * outcome unknown.
 */
@Timeout(60)
class StartingRefusalTest {

    @ParameterizedTest
    @EnumSource(MasterClient.Transport.class)
    void a_call_refused_while_the_master_recovers_was_not_acted_on(MasterClient.Transport transport) throws Exception {
        // The registry a master serves with until its state is recovered, never made ready here.
        Server starting = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                .fallbackHandlerRegistry(new MasterServer.Starting()).build().start();
        try (MasterClient client = new MasterClient("127.0.0.1:" + starting.getPort(), Duration.ofSeconds(10), ClientSecurity.NONE, transport)) {
            MasterException notify = assertThrows(MasterException.class, () -> client.notifySuccess(List.of("k"), List.of("t"),
                    List.of(DistributedDiskDescriptor.newBuilder().setBucket(0).setObjectSize(10).build())));
            assertTrue(notify.getMessage().contains("the master is starting"), notify.getMessage());
            assertTrue(notify.notSent(), "a refusal before any method ran changed nothing: " + notify.getMessage());
            assertFalse(notify.outcomeUnknown(), notify.getMessage());

            MasterException allocate = assertThrows(MasterException.class, () -> client.allocate("t", "k", 10, false));
            assertTrue(allocate.notSent(), allocate.getMessage());
        } finally {
            starting.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        }
    }
}
