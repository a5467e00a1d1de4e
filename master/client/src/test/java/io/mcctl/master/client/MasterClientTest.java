package io.mcctl.master.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.master.proto.v1.ErrorCode;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.NullSource;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(60)
class MasterClientTest {

    static int portWithNothingListening() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return socket.getLocalPort();
        }
    }

    @Test
    void a_master_that_is_not_there_is_unreachable_with_a_message_naming_the_address_and_the_fix() throws IOException {
        String target = "127.0.0.1:" + portWithNothingListening();
        try (MasterClient client = new MasterClient(target, Duration.ofSeconds(5))) {
            MasterException read = assertThrows(MasterException.class, client::stats);
            assertTrue(read.unreachable());
            assertEquals(ErrorCode.INTERNAL_ERROR, read.code());
            assertTrue(read.getMessage().contains(target), read.getMessage());
            assertTrue(read.getMessage().contains("mcctl master start"), "says what to start: " + read.getMessage());
            assertTrue(read.getMessage().contains("--master") && read.getMessage().contains("MCCTL_MASTER"),
                    "says how to point at another master: " + read.getMessage());

            MasterException write = assertThrows(MasterException.class, () -> client.allocate("t", "k", 1, false));
            assertTrue(write.unreachable(), "a call that changes state fails the same way (it is never retried)");
            assertTrue(write.getMessage().contains(target), write.getMessage());
        }
    }

    @ParameterizedTest(name = "\"{0}\"")
    @NullSource
    @ValueSource(strings = {"", "localhost", "localhost:", ":50051", "localhost:0", "localhost:65536", "localhost:http"})
    void an_address_that_is_not_host_colon_port_is_refused_before_any_call(String target) {
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> new MasterClient(target));
        assertTrue(refused.getMessage().contains("'" + target + "'"), refused.getMessage());
        assertTrue(refused.getMessage().contains("host:port"), refused.getMessage());
    }

    @Test
    void a_good_address_is_kept_as_given() {
        try (MasterClient client = new MasterClient("localhost:50051")) {
            assertEquals("localhost:50051", client.target());
        }
    }

    @Test
    void a_connection_closed_under_a_call_counts_as_lost_whatever_status_the_transport_chose() {
        assertTrue(MasterClient.connectionLost(io.grpc.Status.UNAVAILABLE.asRuntimeException()));
        // gRPC's Netty transport reports a channel closed under a started call as UNKNOWN "channel closed".
        assertTrue(MasterClient.connectionLost(io.grpc.Status.UNKNOWN.withDescription("channel closed")
                .withCause(new java.nio.channels.ClosedChannelException()).asRuntimeException()));
        org.junit.jupiter.api.Assertions.assertFalse(MasterClient.connectionLost(io.grpc.Status.UNKNOWN.withDescription("boom").asRuntimeException()));
        org.junit.jupiter.api.Assertions.assertFalse(MasterClient.connectionLost(io.grpc.Status.INTERNAL
                .withCause(new java.nio.channels.ClosedChannelException()).asRuntimeException()));
    }
}
