package io.mcctl.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Help.Ansi;

/**
 * docs/cli-reference.md, generated from the picocli model: every command's usage text, at a fixed width so
 * the file does not depend on the terminal it was made in. A test fails when the checked-in copy is stale.
 */
public final class CliReference {

    static final int WIDTH = 100;

    private CliReference() {
    }

    public static String markdown() {
        StringBuilder out = new StringBuilder();
        out.append("# CLI reference\n\n");
        out.append("Generated from the command model by `mcctl`'s build; regenerate with\n");
        out.append("`java -cp bench/target/mcctl-all.jar io.mcctl.cli.CliReference > docs/cli-reference.md`.\n");
        for (CommandLine command : commands(WIDTH)) {
            out.append("\n## ").append(command.getCommandSpec().qualifiedName()).append("\n\n```\n");
            out.append(command.getUsageMessage(Ansi.OFF).stripTrailing()).append("\n```\n");
        }
        return out.toString();
    }

    /**
     * Every command of the model, each before its subcommands, with usage help at {@code width} columns and no colour:
     * what the generated references (this page, the man pages) are made from, so they never depend on the terminal.
     */
    static List<CommandLine> commands(int width) {
        CommandLine root = Main.commandLine(Map.of("NO_COLOR", "1"), new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()));
        root.setUsageHelpAutoWidth(false);
        root.setUsageHelpWidth(width);
        List<CommandLine> all = new ArrayList<>();
        walk(root, all);
        return all;
    }

    private static void walk(CommandLine command, List<CommandLine> into) {
        into.add(command);
        for (CommandLine sub : command.getSubcommands().values()) {
            walk(sub, into);
        }
    }

    public static void main(String[] args) {
        System.out.print(markdown());
    }
}
