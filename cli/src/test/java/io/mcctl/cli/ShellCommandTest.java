package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.cli.shell.Shell;
import java.io.PrintWriter;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(120)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class ShellCommandTest {

    @TempDir
    Path dir;

    /** A shell run over a script given as its input, the way a pipe feeds it. */
    record ShellRun(int exitCode, String out, String err) {
        static ShellRun of(String script) throws Exception {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            int code = new Shell(Main.TREES, Map.of(), new PrintWriter(out, true), new PrintWriter(err, true)).runScript(new StringReader(script));
            return new ShellRun(code, out.toString(), err.toString());
        }
    }

    private static String pageSizeLine(String out, int occurrence) {
        List<String> lines = out.lines().filter(l -> l.startsWith("page_size ")).toList();
        assertTrue(lines.size() > occurrence, out);
        return lines.get(occurrence);
    }

    @Test
    void several_commands_run_in_order_with_their_output() throws Exception {
        ShellRun run = ShellRun.of("config show\n--version\n");
        assertEquals(ExitCodes.OK, run.exitCode(), run.err());
        int settings = run.out().indexOf("SETTING");
        int version = run.out().indexOf("mcctl ");
        assertTrue(settings >= 0, run.out());
        assertTrue(version > settings, run.out());
        assertTrue(run.out().contains("Java "), run.out());
        assertEquals("", run.err());
    }

    @Test
    void a_failing_line_prints_its_error_and_the_next_line_still_runs() throws Exception {
        ShellRun run = ShellRun.of("get\n--version\n");
        List<String> errors = run.err().lines().filter(l -> l.startsWith("mcctl: error: ")).toList();
        assertEquals(1, errors.size(), run.err());
        assertTrue(run.out().contains("Java "), run.out());
    }

    @Test
    void the_exit_code_is_the_last_failing_lines_code() throws Exception {
        assertEquals(ExitCodes.OK, ShellRun.of("config show\n--version\n").exitCode());
        ShellRun run = ShellRun.of("config show --no-such-option\n--version\n");
        assertEquals(ExitCodes.USAGE, run.exitCode(), run.err());
        ShellRun notFound = ShellRun.of("config show --no-such-option\nsnapshot inspect " + dir.resolve("missing") + "\n--version\n");
        assertEquals(ExitCodes.NOT_FOUND, notFound.exitCode(), notFound.err());
    }

    @Test
    void exit_stops_before_later_lines() throws Exception {
        ShellRun run = ShellRun.of("config show\nexit\n--version\n");
        assertEquals(ExitCodes.OK, run.exitCode(), run.err());
        assertTrue(run.out().contains("SETTING"), run.out());
        assertFalse(run.out().contains("Java "), run.out());
        assertFalse(ShellRun.of("quit\n--version\n").out().contains("Java "));
    }

    @Test
    void blank_lines_and_comments_are_skipped() throws Exception {
        ShellRun run = ShellRun.of("\n   \n# a comment\n  # another --no-such-option\n--version\n\n");
        assertEquals(ExitCodes.OK, run.exitCode(), run.err());
        assertEquals("", run.err());
        assertTrue(run.out().startsWith("mcctl "), run.out());
    }

    @Test
    void option_values_do_not_leak_between_lines() throws Exception {
        ShellRun run = ShellRun.of("config show --page-size 16KiB\nconfig show\n");
        assertEquals(ExitCodes.OK, run.exitCode(), run.err());
        assertTrue(pageSizeLine(run.out(), 0).contains("16KiB"), run.out());
        assertTrue(pageSizeLine(run.out(), 1).contains("64KiB"), run.out());
    }

    @Test
    void quoted_words_stay_one_argument() throws Exception {
        Path config = dir.resolve("with space.yaml");
        Files.writeString(config, "page_size: 32KiB\n");
        ShellRun run = ShellRun.of("config show --config '" + config + "'\n");
        assertEquals(ExitCodes.OK, run.exitCode(), run.err());
        assertTrue(pageSizeLine(run.out(), 0).contains("32KiB"), run.out());
        ShellRun unclosed = ShellRun.of("config show --config 'oops\n--version\n");
        assertEquals(ExitCodes.USAGE, unclosed.exitCode());
        assertTrue(unclosed.err().contains("unclosed quote"), unclosed.err());
        assertTrue(unclosed.out().contains("Java "), unclosed.out());
    }

    @Test
    void shell_inside_the_shell_is_refused_in_one_line() throws Exception {
        ShellRun run = ShellRun.of("shell\n--version\n");
        assertEquals(ExitCodes.USAGE, run.exitCode());
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().contains("already in the mcctl shell"), run.err());
        assertTrue(run.out().contains("Java "), run.out());
    }

    @Test
    void help_says_how_piped_input_and_the_exit_code_work() {
        CliRun run = CliRun.run(Map.of("NO_COLOR", "1"), "shell", "--help").expectOk();
        assertTrue(run.out().contains("last line"), run.out());
        assertTrue(run.out().contains("| mcctl shell"), run.out());
    }

    @Test
    @Tag("process")
    void a_real_process_with_piped_stdin_runs_every_line_without_prompts() throws Exception {
        Path script = dir.resolve("script.txt");
        Files.writeString(script, "config show\nls --master 127.0.0.1:1\n--version\n");
        Path out = dir.resolve("out.txt");
        Path err = dir.resolve("err.txt");
        Process process = McctlProcess.builder(dir, Map.of("NO_COLOR", "1"), "shell")
                .redirectInput(script.toFile()).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertTrue(process.waitFor(90, TimeUnit.SECONDS), "mcctl shell did not end at end of input");
        String stdout = Files.readString(out, StandardCharsets.UTF_8);
        String stderr = Files.readString(err, StandardCharsets.UTF_8);
        assertEquals(ExitCodes.UNAVAILABLE, process.exitValue(), () -> stdout + "\n" + stderr);
        assertTrue(stdout.contains("SETTING"), stdout);
        assertTrue(stdout.contains("Java "), stdout);
        assertFalse(stdout.contains("mcctl>"), stdout);
        assertFalse(stdout.contains("\u001b") || stderr.contains("\u001b"), "escape codes in output");
        assertEquals(1, stderr.lines().filter(l -> l.startsWith("mcctl: error: ")).count(), stderr);
    }

    @Test
    void master_start_is_refused_in_one_line_instead_of_holding_the_shell() throws Exception {
        ShellRun run = ShellRun.of("master start --root " + dir.resolve("root") + " --port 0 --metrics-port 0\n--version\n");
        assertEquals(ExitCodes.USAGE, run.exitCode(), run.err());
        assertEquals(1, run.err().lines().count(), run.err());
        assertTrue(run.err().contains("'master start' runs until it is stopped"), run.err());
        assertTrue(run.out().contains("Java "), "the next line ran: " + run.out());
        assertFalse(Files.exists(dir.resolve("root")), "nothing was laid out");
        assertTrue(ShellRun.of("master start --help\n").out().contains("Usage: mcctl master start"), "its help is still shown");
    }

    @Test
    @Tag("process")
    void piped_lines_to_a_master_that_is_down_fail_at_once_after_the_first() throws Exception {
        Path script = dir.resolve("script.txt");
        Files.writeString(script, "ls --master 127.0.0.1:1\n".repeat(20) + "ls --master 127.0.0.1:2\n");
        Path out = dir.resolve("out.txt");
        Path err = dir.resolve("err.txt");
        Process process = McctlProcess.builder(dir, Map.of("NO_COLOR", "1"), "shell")
                .redirectInput(script.toFile()).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        assertTrue(process.waitFor(90, TimeUnit.SECONDS), "mcctl shell did not end at end of input");
        List<String> errors = Files.readAllLines(err, StandardCharsets.UTF_8);
        assertEquals(21, errors.size(), String.join("\n", errors));
        assertTrue(errors.get(0).startsWith("mcctl: error: cannot reach the master at 127.0.0.1:1"), errors.get(0));
        assertFalse(errors.get(0).contains("not retried"), errors.get(0));
        for (String line : errors.subList(1, 20)) {
            assertTrue(line.startsWith(errors.get(0) + " (not retried: it failed"), line);
        }
        assertTrue(errors.get(20).startsWith("mcctl: error: cannot reach the master at 127.0.0.1:2")
                && !errors.get(20).contains("not retried"), "another address is tried: " + errors.get(20));
    }
}
