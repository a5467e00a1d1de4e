package io.mcctl.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import picocli.AutoComplete;
import picocli.CommandLine;

/**
 * Bash, zsh and fish completion scripts generated from the picocli model, so they list exactly the commands,
 * options and enum values mcctl has. zsh uses the bash script through zsh's bashcompinit; fish gets its own
 * ({@link FishCompletion}).
 * {@link #main} writes them into {@code completions/}; a test fails when the checked-in copies are stale.
 */
public final class CompletionScripts {

    private CompletionScripts() {
    }

    public static String script(String shell) {
        CommandLine model = Main.commandLine(Map.of(), new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        String bash = AutoComplete.bash("mcctl", model);
        return switch (shell) {
            case "bash" -> bash;
            case "zsh" -> "#compdef mcctl\n# zsh completion for mcctl: the bash script, through zsh's bash completion support.\n"
                    + "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n" + bash;
            case "fish" -> FishCompletion.script(model);
            default -> throw new IllegalArgumentException("no completion script for shell '" + shell + "': allowed are bash, zsh, fish");
        };
    }

    /** Regenerates {@code completions/mcctl.bash}, {@code completions/_mcctl} and {@code completions/mcctl.fish} under the directory given. */
    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args.length > 0 ? args[0] : "completions");
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("mcctl.bash"), script("bash"), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("_mcctl"), script("zsh"), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("mcctl.fish"), script("fish"), StandardCharsets.UTF_8);
    }
}
