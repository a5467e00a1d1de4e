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
            + "./mcctl completion zsh > completions/_mcctl && ./mcctl completion fish > completions/mcctl.fish";

    @Test
    void checked_in_bash_script_matches_the_command_model() throws Exception {
        assertEquals(CompletionFiles.script("bash"), Files.readString(CHECKED_IN.resolve("mcctl.bash"), StandardCharsets.UTF_8),
                "completions/mcctl.bash is stale; " + REGENERATE);
    }

    @Test
    void checked_in_zsh_script_matches_the_command_model() throws Exception {
        assertEquals(CompletionFiles.script("zsh"), Files.readString(CHECKED_IN.resolve("_mcctl"), StandardCharsets.UTF_8),
                "completions/_mcctl is stale; " + REGENERATE);
    }

    @Test
    void checked_in_fish_script_matches_the_command_model() throws Exception {
        assertEquals(CompletionFiles.script("fish"), Files.readString(CHECKED_IN.resolve("mcctl.fish"), StandardCharsets.UTF_8),
                "completions/mcctl.fish is stale; " + REGENERATE);
    }

    @Test
    void the_fish_script_completes_nested_commands_their_options_and_enum_values() {
        String fish = CliRun.run("completion", "fish").expectOk().out();
        assertTrue(fish.contains("complete -c mcctl -n '__mcctl_at snapshot' -a 'inspect'"), fish);
        assertTrue(fish.contains("complete -c mcctl -n '__mcctl_at snapshot wal' -a 'dump'"), fish);
        assertTrue(fish.contains("complete -c mcctl -n '__mcctl_at ls' -s o -l output -x -a 'text json'"), fish);
        assertTrue(fish.contains("complete -c mcctl -n '__mcctl_at get' -l out -r -F"), fish);
        assertTrue(fish.contains("complete -c mcctl -n '__mcctl_at master start' -l page-size -x"), fish);
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
        CliRun run = CliRun.run("completion", "tcsh").expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("bash") && run.err().contains("zsh") && run.err().contains("fish"), run.err());
    }
}
