package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.CommandEnvironment;
import io.mcctl.cli.shell.Shell;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import org.jline.terminal.Terminal;
import org.jline.terminal.TerminalBuilder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code mcctl shell}: every mcctl command, one per line, in one JVM. */
@Command(name = "shell", mixinStandardHelpOptions = true,
        description = {"Interactive shell: run mcctl commands one per line in one JVM, without the leading 'mcctl'.",
                "At a terminal: prompt 'mcctl> ', tab completion of commands, options and their values, of key names "
                        + "from the master (the line's --master, else $MCCTL_MASTER; skipped when it does not answer within "
                        + "300 ms), and history "
                        + "in ~/.mcctl_history (none when $HOME is unset or not writable). Ctrl-C drops the line being typed "
                        + "or interrupts the running command; 'exit', 'quit' or Ctrl-D leaves.",
                "Each line starts from the defaults: options given on one line do not carry over to the next. Words are "
                        + "split as a shell would ('single' and \"double\" quotes, \\ escapes). Blank lines and lines "
                        + "starting with # are skipped; 'help' lists the commands. A failing line prints its error and the "
                        + "shell goes on."},
        footer = {"", "With standard input or output not a terminal (a pipe or a file), the shell reads lines to the end "
                + "of input or to 'exit', prints no prompt and no escape codes, and exits with the code of the last line "
                + "that failed, or 0 when every line succeeded:",
                "  printf 'config show\\nls --master 127.0.0.1:1\\n' | mcctl shell"})
public final class ShellCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        if (Shell.active()) {
            throw new CliException(ExitCodes.USAGE, "already in the mcctl shell: type the command without 'shell', or 'exit' to leave");
        }
        Shell shell = new Shell(CommandEnvironment.trees(spec), CommandEnvironment.of(spec), spec.commandLine().getOut(), spec.commandLine().getErr());
        // System.console() is null unless both stdin and stdout are terminals: then read plain lines, as a script.
        if (System.console() == null) {
            return shell.runScript(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        }
        try (Terminal terminal = TerminalBuilder.builder().system(true).build()) {
            return shell.runInteractive(terminal);
        }
    }
}
