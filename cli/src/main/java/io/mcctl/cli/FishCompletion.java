package io.mcctl.cli;

import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The fish completion script, from the same picocli model as the bash one: every command's subcommands and options,
 * with their one-line descriptions, enum values and file arguments. fish has no generator in picocli, hence this.
 */
final class FishCompletion {

    private FishCompletion() {
    }

    static String script(CommandLine root) {
        String name = root.getCommandName();
        List<String> paths = new ArrayList<>();
        collectPaths(root, "", paths);
        StringBuilder out = new StringBuilder();
        out.append("# fish completion for ").append(name).append(", generated from its command model: ")
                .append(name).append(" completion fish > ~/.config/fish/completions/").append(name).append(".fish\n\n");
        out.append("set -g __").append(name).append("_commands");
        for (String path : paths) {
            out.append(' ').append(quote(path));
        }
        out.append("\n\n");
        out.append("# The command the words typed so far name (\"\" for ").append(name).append(" itself): options are skipped.\n");
        out.append("function __").append(name).append("_command\n");
        out.append("    set -l path \"\"\n");
        out.append("    for word in (commandline -opc)[2..-1]\n");
        out.append("        string match -q -- '-*' $word; and continue\n");
        out.append("        set -l candidate (string trim -- \"$path $word\")\n");
        out.append("        contains -- $candidate $__").append(name).append("_commands; or break\n");
        out.append("        set path $candidate\n");
        out.append("    end\n");
        out.append("    echo $path\n");
        out.append("end\n\n");
        out.append("function __").append(name).append("_at\n");
        out.append("    set -l command (__").append(name).append("_command)\n");
        out.append("    test \"$command\" = \"$argv\"\n");
        out.append("end\n\n");
        append(root, "", name, out);
        return out.toString();
    }

    private static void collectPaths(CommandLine command, String path, List<String> paths) {
        for (var entry : command.getSubcommands().entrySet()) {
            if (entry.getValue().getParent() != command || !entry.getKey().equals(entry.getValue().getCommandName())) {
                continue; // an alias: its command is listed under its own name
            }
            String sub = path.isEmpty() ? entry.getKey() : path + " " + entry.getKey();
            paths.add(sub);
            collectPaths(entry.getValue(), sub, paths);
        }
    }

    private static void append(CommandLine command, String path, String name, StringBuilder out) {
        CommandSpec spec = command.getCommandSpec();
        String condition = " -n " + quote("__" + name + "_at" + (path.isEmpty() ? "" : " " + path));
        out.append("\n# ").append(spec.qualifiedName()).append('\n');
        boolean takesFiles = spec.positionalParameters().stream().anyMatch(p -> isFile(p.type(), p.paramLabel()));
        if (!takesFiles) {
            out.append("complete -c ").append(name).append(condition).append(" -f\n"); // no file names where none is taken
        }
        for (var entry : command.getSubcommands().entrySet()) {
            CommandLine sub = entry.getValue();
            if (sub.getParent() != command || sub.getCommandSpec().usageMessage().hidden()) {
                continue;
            }
            out.append("complete -c ").append(name).append(condition).append(" -a ").append(quote(entry.getKey()))
                    .append(" -d ").append(quote(firstLine(sub.getCommandSpec().usageMessage().description()))).append('\n');
        }
        for (OptionSpec option : spec.options()) {
            if (option.hidden()) {
                continue;
            }
            out.append("complete -c ").append(name).append(condition);
            for (String optionName : option.names()) {
                if (optionName.startsWith("--")) {
                    out.append(" -l ").append(optionName.substring(2));
                } else if (optionName.length() == 2) {
                    out.append(" -s ").append(optionName.substring(1));
                }
            }
            if (option.arity().max() > 0) {
                List<String> values = new ArrayList<>();
                if (option.completionCandidates() != null) {
                    option.completionCandidates().forEach(values::add);
                }
                if (!values.isEmpty()) {
                    out.append(" -x -a ").append(quote(String.join(" ", values)));
                } else if (isFile(option.type(), option.paramLabel())) {
                    out.append(" -r -F");
                } else {
                    out.append(" -x");
                }
            }
            out.append(" -d ").append(quote(firstLine(describe(option)))).append('\n');
        }
        for (var entry : command.getSubcommands().entrySet()) {
            if (entry.getValue().getParent() == command && entry.getKey().equals(entry.getValue().getCommandName())) {
                append(entry.getValue(), path.isEmpty() ? entry.getKey() : path + " " + entry.getKey(), name, out);
            }
        }
    }

    /** Whether an argument names a file: by its type, or by its label where a String also allows '-' (stdin). */
    private static boolean isFile(Class<?> type, String label) {
        return java.nio.file.Path.class.isAssignableFrom(type) || java.io.File.class.isAssignableFrom(type)
                || label.matches(".*\\b(FILE|DIR|PATH)\\b.*");
    }

    private static String describe(OptionSpec option) {
        String text = String.join(" ", option.description());
        List<String> values = new ArrayList<>();
        if (option.completionCandidates() != null) {
            option.completionCandidates().forEach(values::add);
        }
        return text.replace("${DEFAULT-VALUE}", String.valueOf(option.defaultValue()))
                .replace("${COMPLETION-CANDIDATES}", String.join(", ", values));
    }

    /** The first sentence of a description, on one line, for fish's description column. */
    private static String firstLine(String... description) {
        String text = String.join(" ", description).replaceAll("\\s+", " ").strip();
        int end = text.indexOf(". ");
        return end > 0 ? text.substring(0, end + 1) : text;
    }

    /** {@code text} as a fish single-quoted word (inside, only backslash and the quote are escaped). */
    private static String quote(String text) {
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }
}
