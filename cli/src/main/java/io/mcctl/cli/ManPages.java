package io.mcctl.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Model.PositionalParamSpec;

/**
 * docs/man: one man page (roff, section 1) per command, generated from the picocli model the way docs/cli-reference.md
 * is, with the same walk ({@link CliReference#commands}). Written here rather than through picocli-codegen's AsciiDoc
 * pages, which would need asciidoctor to become roff. Read with {@code man -l docs/man/mcctl-offload.1}; a release
 * installs them in share/man/man1. A test fails when the checked-in pages are stale.
 */
public final class ManPages {

    /** Width of the synopsis, which keeps picocli's own line breaks: a terminal's 80 columns less man's margins. */
    static final int SYNOPSIS_WIDTH = 72;

    private ManPages() {
    }

    /** File name to page text, for every command. */
    public static Map<String, String> pages() {
        Map<String, String> pages = new TreeMap<>();
        for (CommandLine command : CliReference.commands(SYNOPSIS_WIDTH)) {
            pages.put(fileName(command.getCommandSpec()), page(command));
        }
        return pages;
    }

    /** {@code mcctl master start} is mcctl-master-start.1. */
    static String fileName(CommandSpec spec) {
        return pageName(spec) + ".1";
    }

    private static String pageName(CommandSpec spec) {
        return spec.qualifiedName("-");
    }

    static String page(CommandLine command) {
        CommandSpec spec = command.getCommandSpec();
        StringBuilder out = new StringBuilder();
        String name = pageName(spec);
        out.append(".\\\" Generated from mcctl's command model: java -cp bench/target/mcctl-all.jar io.mcctl.cli.ManPages docs/man\n");
        out.append(".TH \"").append(escape(name.toUpperCase(Locale.ROOT))).append("\" 1 \"\" \"mcctl\" \"mcctl Manual\"\n");
        out.append(".nh\n.ad l\n"); // no hyphenation of option names, ragged right
        out.append(".SH NAME\n").append(escape(name)).append(" \\- ").append(escape(summary(spec))).append('\n');

        out.append(".SH SYNOPSIS\n.nf\n");
        String synopsis = command.getHelp().synopsis(0).stripTrailing();
        for (String line : synopsis.split("\n")) {
            out.append(literal(line)).append('\n');
        }
        out.append(".fi\n");

        String[] description = spec.usageMessage().description();
        if (description.length > 0) {
            out.append(".SH DESCRIPTION\n");
            for (String paragraph : description) {
                paragraph(out, paragraph);
            }
        }

        List<PositionalParamSpec> positionals = spec.positionalParameters().stream().filter(p -> !p.hidden()).toList();
        if (!positionals.isEmpty()) {
            out.append(".SH ARGUMENTS\n");
            for (PositionalParamSpec positional : positionals) {
                out.append(".TP\n\\fI").append(escape(positional.paramLabel())).append("\\fR\n");
                describe(out, positional);
            }
        }

        List<OptionSpec> options = spec.options().stream().filter(o -> !o.hidden()).toList();
        if (!options.isEmpty()) {
            out.append(".SH OPTIONS\n");
            for (OptionSpec option : options) {
                out.append(".TP\n");
                List<String> names = new ArrayList<>();
                for (String optionName : option.names()) {
                    names.add("\\fB" + escape(optionName) + "\\fR");
                }
                out.append(String.join(", ", names));
                if (option.typeInfo().isBoolean() && option.arity().max() == 0) {
                    out.append('\n');
                } else {
                    out.append("=\\fI").append(escape(option.paramLabel())).append("\\fR\n");
                }
                describe(out, option);
            }
        }

        Map<String, CommandLine> subcommands = command.getSubcommands();
        if (!subcommands.isEmpty()) {
            out.append(".SH COMMANDS\n");
            for (CommandLine sub : subcommands.values()) {
                out.append(".TP\n\\fB").append(escape(sub.getCommandName())).append("\\fR\n");
                out.append(escape(summary(sub.getCommandSpec()))).append(" See \\fB")
                        .append(escape(pageName(sub.getCommandSpec()))).append("\\fR(1).\n");
            }
        }

        String[] footer = spec.usageMessage().footer();
        if (footer.length > 0) {
            String text = String.join("%n", footer).replace("%n", "\n").replace("%%", "%").strip();
            if (text.startsWith("Exit codes:")) {
                out.append(".SH EXIT STATUS\n.nf\n");
                text = text.substring("Exit codes:".length()).strip();
            } else {
                out.append(".SH NOTES\n.nf\n");
            }
            for (String line : text.split("\n")) {
                out.append(literal(line)).append('\n');
            }
            out.append(".fi\n");
        }

        out.append(".SH SEE ALSO\n");
        return seeAlso(out, command);
    }

    private static String seeAlso(StringBuilder out, CommandLine command) {
        List<String> related = new ArrayList<>();
        if (command.getParent() != null) {
            related.add("\\fB" + escape(pageName(command.getParent().getCommandSpec())) + "\\fR(1)");
        }
        for (CommandLine sub : command.getSubcommands().values()) {
            related.add("\\fB" + escape(pageName(sub.getCommandSpec())) + "\\fR(1)");
        }
        if (!related.isEmpty()) {
            out.append(String.join(",\n", related)).append('\n');
        }
        out.append(".PP\nThe full documentation is in the docs folder of the release (docs/cli-reference.md, docs/operator-guide.md).\n");
        return out.toString();
    }

    /** A command's first description paragraph: the sentence command lists show. */
    private static String summary(CommandSpec spec) {
        String[] description = spec.usageMessage().description();
        return description.length == 0 ? "" : text(description[0]).strip();
    }

    /** An option's or argument's description, its lines joined; picocli's %n breaks become roff line breaks. */
    private static void describe(StringBuilder out, ArgSpec arg) {
        String joined = text(String.join(" ", arg.description())).strip();
        String[] lines = joined.split("\n");
        for (int i = 0; i < lines.length; i++) {
            if (i > 0) {
                out.append(".br\n");
            }
            out.append(escape(lines[i].strip())).append('\n');
        }
    }

    /** One description paragraph: an indented one (an example) is kept as written, others are filled by man. */
    private static void paragraph(StringBuilder out, String paragraph) {
        String text = text(paragraph);
        if (text.startsWith(" ")) {
            out.append(".PP\n.RS 4\n.nf\n");
            for (String line : text.split("\n")) {
                out.append(literal(line.strip())).append('\n');
            }
            out.append(".fi\n.RE\n");
        } else {
            out.append(".PP\n");
            for (String line : text.strip().split("\n")) {
                out.append(escape(line.strip())).append('\n');
            }
        }
    }

    /** picocli's format specifiers in help text: %n a line break, %% a per cent sign. */
    private static String text(String help) {
        return help.replace("%n", "\n").replace("%%", "%");
    }

    /** Text for roff: backslashes and hyphens escaped, and no line may start with a control character. */
    static String escape(String text) {
        String escaped = text.replace("\\", "\\e").replace("-", "\\-");
        if (escaped.startsWith(".") || escaped.startsWith("'")) {
            escaped = "\\&" + escaped;
        }
        return escaped;
    }

    /** A line of a no-fill block: escaped, with its leading spaces kept (roff would otherwise break before them). */
    private static String literal(String line) {
        String escaped = escape(line);
        return escaped.startsWith(" ") ? "\\&" + escaped : escaped;
    }

    /** Writes every page into {@code dir} and removes pages of commands that no longer exist. */
    public static void write(Path dir) throws IOException {
        Files.createDirectories(dir);
        Map<String, String> pages = pages();
        try (var existing = Files.list(dir)) {
            for (Path file : existing.filter(f -> f.getFileName().toString().endsWith(".1")).toList()) {
                if (!pages.containsKey(file.getFileName().toString())) {
                    Files.delete(file);
                }
            }
        }
        for (Map.Entry<String, String> page : pages.entrySet()) {
            Files.writeString(dir.resolve(page.getKey()), page.getValue(), StandardCharsets.UTF_8);
        }
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: java -cp mcctl-all.jar io.mcctl.cli.ManPages DIR (writes one page per command into DIR, e.g. docs/man)");
            System.exit(ExitCodes.USAGE);
        }
        write(Path.of(args[0]));
    }
}
