package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class StatUseAndPinTest {

    @TempDir
    Path dir;

    @Test
    void stat_shows_whether_an_object_is_pinned_and_when_it_was_last_used() throws Exception {
        BucketLayout layout = new BucketLayout(dir.resolve("root"), 2, 4096, 1 << 20);
        try (MasterServer master = MasterServer.start(MasterServer.Options.builder(layout).fsType("test").build())) {
            String address = "127.0.0.1:" + master.port();
            Path file = Files.writeString(dir.resolve("f"), "bytes of an object");
            CliRun.run("offload", "kept", file.toString(), "--pin", "--master", address).expectOk();
            CliRun.run("offload", "plain", file.toString(), "--master", address).expectOk();
            JsonNode kept = new ObjectMapper().readTree(CliRun.run("stat", "kept", "-o", "json", "--master", address).expectOk().out());
            assertTrue(kept.get("pinned").asBoolean());
            assertTrue(kept.get("last_use_age_ms").asLong() >= 0);
            JsonNode plain = new ObjectMapper().readTree(CliRun.run("stat", "plain", "-o", "json", "--master", address).expectOk().out());
            assertEquals(false, plain.get("pinned").asBoolean());
            String text = CliRun.run("stat", "kept", "--master", address).expectOk().out();
            assertTrue(text.contains("last used ") && text.contains("; pinned"), text);
            assertEquals(1, master.pages().pinnedMappingCount());
        }
    }
}
