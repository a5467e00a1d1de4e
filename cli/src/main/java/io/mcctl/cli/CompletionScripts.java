package io.mcctl.cli;

import picocli.AutoComplete;
import picocli.CommandLine;

/**
 * Bash, zsh and fish completion scripts generated from the picocli model, so they list exactly the commands,
 * options and enum values mcctl has. zsh uses the bash script through zsh's bashcompinit; fish gets its own
 * ({@link FishCompletion}).
 * {@link CompletionFiles} writes them into {@code completions/}; a test fails when the checked-in copies are stale.
 */
public final class CompletionScripts {

    private CompletionScripts() {
    }

    /** The script for {@code shell} (bash, zsh or fish) that completes the commands of {@code model}. */
    public static String script(String shell, CommandLine model) {
        String bash = AutoComplete.bash("mcctl", model);
        return switch (shell) {
            case "bash" -> bash;
            case "zsh" -> "#compdef mcctl\n# zsh completion for mcctl: the bash script, through zsh's bash completion support.\n"
                    + "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n" + bash;
            case "fish" -> FishCompletion.script(model);
            default -> throw new IllegalArgumentException("no completion script for shell '" + shell + "': allowed are bash, zsh, fish");
        };
    }
}
