package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class McctlCommandTest {

    @Test
    void help_lists_every_command_group_and_the_exit_codes() {
        CliRun run = CliRun.run("--help").expectOk();
        for (String command : List.of("master", "offload", "get", "rm", "ls", "stat", "snapshot", "fsck", "bitmap", "mount",
                "bench", "shell", "config", "completion")) {
            assertTrue(run.out().contains("\n  " + command + " "), () -> command + " missing from help:\n" + run.out());
        }
        assertTrue(run.out().contains("UNAVAILABLE"));
        assertTrue(run.out().contains("fsck(8)"));
    }

    @Test
    void every_subcommand_answers_help() {
        for (String[] args : List.of(new String[] {"master", "--help"}, new String[] {"snapshot", "inspect", "--help"},
                new String[] {"bench", "allocator", "--help"}, new String[] {"config", "show", "--help"},
                new String[] {"snapshot", "wal", "dump", "--help"})) {
            CliRun run = CliRun.run(args).expectOk();
            assertTrue(run.out().startsWith("Usage: mcctl"), run.out());
        }
    }

    @Test
    void help_wraps_descriptions_as_paragraphs_and_keeps_example_lines_as_written() {
        String get = CliRun.run("get", "--help").expectOk().out();
        assertTrue(get.replace("\n", " ").contains("listed in KEYS_FILE into --out DIR"), get);
        for (String line : get.lines().toList()) {
            assertTrue(line.length() <= 80, "wrapped at the width: '" + line + "'");
        }
        String completion = CliRun.run("completion", "--help").expectOk().out();
        assertTrue(completion.contains("\n  ./mcctl completion bash > /etc/bash_completion.d/mcctl\n"), completion);
        assertTrue(completion.contains("\n  ./mcctl completion zsh > \"${fpath[1]}/_mcctl\"\n"), completion);
    }

    @Test
    void version_names_mcctl_and_java() {
        CliRun run = CliRun.run("--version").expectOk();
        assertTrue(run.out().startsWith("mcctl "), run.out());
        assertFalse(run.out().startsWith("mcctl unknown"), run.out());
        assertTrue(run.out().contains("Java "), run.out());
    }

    @Test
    void a_group_without_subcommand_is_a_usage_error_naming_the_choices() {
        CliRun run = CliRun.run("snapshot").expectExit(ExitCodes.USAGE);
        assertTrue(run.err().contains("needs a subcommand"), run.err());
        assertTrue(run.err().contains("inspect"), run.err());
    }

    @Test
    void an_unknown_option_is_one_error_line_and_a_pointer_to_help() {
        CliRun run = CliRun.run("config", "show", "--no-such-option").expectExit(ExitCodes.USAGE);
        List<String> lines = run.err().lines().toList();
        assertEquals(2, lines.size(), run.err());
        assertTrue(lines.get(0).startsWith("mcctl: error: "), run.err());
        assertTrue(lines.get(1).contains("mcctl config show --help"), run.err());
    }

    @Test
    void stacktrace_flag_adds_the_trace_to_the_error_line() {
        Map<String, String> env = Map.of("MOONCAKE_DISTRIBUTED_PAGE_SIZE", "3000");
        CliRun quiet = CliRun.run(env, "config", "show").expectExit(ExitCodes.USAGE);
        assertEquals(1, quiet.err().lines().count(), quiet.err());
        CliRun loud = CliRun.run(env, "config", "show", "-x").expectExit(ExitCodes.USAGE);
        assertTrue(loud.err().contains("\tat io.mcctl."), loud.err());
    }

    @Test
    void no_color_environment_keeps_help_free_of_escape_codes() {
        CliRun run = CliRun.run(Map.of("NO_COLOR", "1"), "--help").expectOk();
        assertFalse(run.out().contains("\u001b["), run.out());
    }
}
