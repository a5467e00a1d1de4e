package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class CompletionScriptsTest {

    /** completions/ at the repository root, seen from the cli module's directory where the tests run. */
    private static final Path CHECKED_IN = Path.of("..", "completions");
    private static final String REGENERATE = "regenerate with: ./mcctl completion bash > completions/mcctl.bash && "
            + "./mcctl completion zsh > completions/_mcctl";

    @Test
    void checked_in_bash_script_matches_the_command_model() throws Exception {
        assertEquals(CompletionScripts.script("bash"), Files.readString(CHECKED_IN.resolve("mcctl.bash"), StandardCharsets.UTF_8),
                "completions/mcctl.bash is stale; " + REGENERATE);
    }

    @Test
    void checked_in_zsh_script_matches_the_command_model() throws Exception {
        assertEquals(CompletionScripts.script("zsh"), Files.readString(CHECKED_IN.resolve("_mcctl"), StandardCharsets.UTF_8),
                "completions/_mcctl is stale; " + REGENERATE);
    }

    @Test
    void completion_prints_a_script_that_knows_every_command_and_enum_value() {
        CliRun run = CliRun.run("completion", "bash").expectOk();
        for (String word : new String[] {"offload", "snapshot", "inspect", "--durability", "--page-size", "json"}) {
            assertTrue(run.out().contains(word), () -> word + " missing from the bash completion script");
        }
        assertTrue(CliRun.run("completion", "zsh").expectOk().out().startsWith("#compdef mcctl"));
    }

    @Test
    void an_unknown_shell_is_refused_naming_the_choices() {
        CliRun run = CliRun.run("completion", "fish").expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("bash") && run.err().contains("zsh"), run.err());
    }
}
