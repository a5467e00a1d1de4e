package io.mcctl.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import picocli.CommandLine;

/**
 * The checked-in completion scripts ({@code completions/}) made from the whole command tree: {@link #main} writes
 * them, a test compares them.
 */
public final class CompletionFiles {

    private CompletionFiles() {
    }

    /** The script for {@code shell} completing mcctl's whole command tree. */
    public static String script(String shell) {
        PrintWriter discard = new PrintWriter(new StringWriter());
        CommandLine model = Main.commandLine(Map.of(), discard, discard);
        return CompletionScripts.script(shell, model);
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
