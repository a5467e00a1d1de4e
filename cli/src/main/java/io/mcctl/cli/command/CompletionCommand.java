package io.mcctl.cli.command;

import io.mcctl.cli.CommandEnvironment;
import io.mcctl.cli.CompletionScripts;
import io.mcctl.cli.ExitCodes;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code mcctl completion bash|zsh|fish}: the shell completion script, generated from the command model. */
@Command(name = "completion", mixinStandardHelpOptions = true,
        description = {"Print the completion script for SHELL. Install it with, for example:",
                "  ./mcctl completion bash > /etc/bash_completion.d/mcctl",
                "  ./mcctl completion zsh > \"$${fpath[1]}/_mcctl\"",
                "  ./mcctl completion fish > ~/.config/fish/completions/mcctl.fish",
                "or source it from your shell's start-up file. The same scripts are in completions/."})
public final class CompletionCommand implements Callable<Integer> {

    /** Shells with a completion script. */
    public enum Shell { bash, zsh, fish }

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "SHELL", description = "One of: ${COMPLETION-CANDIDATES}.")
    Shell shell;

    @Override
    public Integer call() {
        PrintWriter discard = new PrintWriter(new StringWriter());
        CommandLine model = CommandEnvironment.trees(spec).whole(Map.of(), discard, discard);
        spec.commandLine().getOut().print(CompletionScripts.script(shell.name(), model));
        spec.commandLine().getOut().flush();
        return ExitCodes.OK;
    }
}
