package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class CliReferenceTest {

    @Test
    void checked_in_reference_matches_the_command_model() throws Exception {
        assertEquals(CliReference.markdown(), Files.readString(Path.of("..", "docs", "cli-reference.md"), StandardCharsets.UTF_8),
                "docs/cli-reference.md is stale; regenerate with: "
                        + "java -cp bench/target/mcctl-all.jar io.mcctl.cli.CliReference > docs/cli-reference.md");
    }

    @Test
    void reference_has_a_section_for_every_leaf_command() {
        String reference = CliReference.markdown();
        for (String command : new String[] {"mcctl master start", "mcctl offload", "mcctl snapshot wal dump", "mcctl bench restart",
                "mcctl mount validate", "mcctl bitmap inspect", "mcctl config show", "mcctl completion"}) {
            assertTrue(reference.contains("\n## " + command + "\n"), () -> command + " has no section");
        }
    }
}
