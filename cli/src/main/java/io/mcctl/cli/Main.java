package io.mcctl.cli;

import io.mcctl.master.client.MasterException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Help.Ansi;

/** Entry point of the mcctl binary. */
public final class Main {

    private Main() {
    }

    public static void main(String[] args) {
        // Log lines carry a timestamp and go to stderr, so stdout stays the command's own output.
        System.setProperty("org.slf4j.simpleLogger.showDateTime", System.getProperty("org.slf4j.simpleLogger.showDateTime", "true"));
        System.setProperty("org.slf4j.simpleLogger.dateTimeFormat",
                System.getProperty("org.slf4j.simpleLogger.dateTimeFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"));
        System.setProperty("org.slf4j.simpleLogger.log.io.grpc", System.getProperty("org.slf4j.simpleLogger.log.io.grpc", "warn"));
        silenceGrpcLogging();
        PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
        PrintWriter err = new PrintWriter(new OutputStreamWriter(System.err, StandardCharsets.UTF_8), true);
        int code = run(args, System.getenv(), out, err);
        out.flush();
        err.flush();
        GrpcThreads.stop();
        System.exit(code);
    }

    /**
     * grpc-java logs through java.util.logging: a name that does not resolve, or a peer that is not gRPC, prints a
     * warning with a stack trace before mcctl's own one-line error. mcctl reports those failures itself.
     */
    private static final java.util.logging.Logger GRPC_LOGGER = java.util.logging.Logger.getLogger("io.grpc");

    static void silenceGrpcLogging() {
        GRPC_LOGGER.setLevel(java.util.logging.Level.OFF);
    }

    private static final java.util.regex.Pattern FIRST_SENTENCE = java.util.regex.Pattern.compile("\\. (?=[A-Z0-9])");

    /**
     * Joins each command's description lines into paragraphs, so help wraps them at the terminal's width
     * instead of breaking wherever the source line ended. A line that starts with a space (an example), the
     * line after it, and the line after one ending in ':' start a new paragraph; the first sentence is a line
     * of its own, the summary that command lists show.
     */
    static void reflowDescriptions(CommandLine commandLine) {
        CommandLine.Model.CommandSpec spec = commandLine.getCommandSpec();
        CommandLine.Model.UsageMessageSpec usage = spec.usageMessage();
        // The lines as written: interpolated now, ${...} escaped as $${...} would be read as a variable later.
        Boolean interpolates = spec.interpolateVariables();
        spec.interpolateVariables(false);
        String[] written = usage.description();
        spec.interpolateVariables(interpolates);
        java.util.List<String> paragraphs = new java.util.ArrayList<>();
        String previous = null;
        for (String line : written) {
            boolean breaks = previous == null || line.startsWith(" ") || previous.startsWith(" ") || previous.endsWith(":");
            if (breaks) {
                paragraphs.add(line);
            } else {
                paragraphs.set(paragraphs.size() - 1, paragraphs.get(paragraphs.size() - 1) + " " + line);
            }
            previous = line;
        }
        // Command lists show a command's first description line: let that be its whole first sentence.
        if (!paragraphs.isEmpty()) {
            java.util.regex.Matcher sentence = FIRST_SENTENCE.matcher(paragraphs.get(0));
            if (sentence.find()) {
                paragraphs.add(1, paragraphs.get(0).substring(sentence.end()));
                paragraphs.set(0, paragraphs.get(0).substring(0, sentence.start() + 1));
            }
        }
        usage.description(paragraphs.toArray(String[]::new));
        for (CommandLine sub : commandLine.getSubcommands().values()) {
            if (sub.getParent() == commandLine) { // aliases map to the same command: reflow it once
                reflowDescriptions(sub);
            }
        }
    }

    /** Runs one command line and returns its exit code; what it prints goes to {@code out} and {@code err}. */
    public static int run(String[] args, Map<String, String> environment, PrintWriter out, PrintWriter err) {
        return commandLine(environment, out, err, McctlCommand.subcommandsFor(args)).execute(args);
    }

    /** The command tree with only what running {@code args} needs (see {@link McctlCommand#subcommandsFor}). */
    public static CommandLine commandLine(Map<String, String> environment, PrintWriter out, PrintWriter err, String[] args) {
        return commandLine(environment, out, err, McctlCommand.subcommandsFor(args));
    }

    /** The trees this class builds, for the commands that build further ones (the shell, completion). */
    static final CommandTrees TREES = new CommandTrees() {
        @Override
        public CommandLine forArgs(Map<String, String> environment, PrintWriter out, PrintWriter err, String[] args) {
            return commandLine(environment, out, err, args);
        }

        @Override
        public CommandLine whole(Map<String, String> environment, PrintWriter out, PrintWriter err) {
            return commandLine(environment, out, err);
        }
    };

    /** The whole configured command tree, for tools that read the model (completion, docs). */
    public static CommandLine commandLine(Map<String, String> environment, PrintWriter out, PrintWriter err) {
        return commandLine(environment, out, err, McctlCommand.SUBCOMMANDS);
    }

    private static CommandLine commandLine(Map<String, String> environment, PrintWriter out, PrintWriter err, java.util.List<Class<?>> subcommands) {
        McctlCommand root = new McctlCommand(environment, TREES);
        CommandLine commandLine = new CommandLine(root);
        for (Class<?> subcommand : subcommands) {
            commandLine.addSubcommand(subcommand);
        }
        SettingsOptions.install(commandLine);
        reflowDescriptions(commandLine);
        commandLine.setOut(out);
        commandLine.setErr(err);
        commandLine.setCaseInsensitiveEnumValuesAllowed(true);
        commandLine.setUsageHelpAutoWidth(true);
        commandLine.setUsageHelpLongOptionsMaxWidth(30);
        boolean colour = !environment.containsKey("NO_COLOR");
        commandLine.setColorScheme(CommandLine.Help.defaultColorScheme(colour ? Ansi.AUTO : Ansi.OFF));
        commandLine.setParameterExceptionHandler((ex, args) -> {
            CommandLine failed = ex.getCommandLine();
            err.println("mcctl: error: " + ex.getMessage());
            err.println("Try '" + failed.getCommandSpec().qualifiedName() + " --help' for usage.");
            err.flush();
            return ExitCodes.USAGE;
        });
        commandLine.setExecutionExceptionHandler((ex, failed, parseResult) -> {
            String unreachable = MasterErrors.unreachable(ex, failed.getCommandSpec());
            if (unreachable != null || ex instanceof MasterException master && master.unreachable()) {
                String line = unreachable != null ? unreachable : ex.getMessage().lines().findFirst().orElse("");
                io.mcctl.cli.shell.UnreachableMasters.failed(MasterErrors.target(failed.getCommandSpec()), line);
                err.println("mcctl: error: " + line);
                if (root.stacktrace) {
                    ex.printStackTrace(err);
                }
                err.flush();
                return ExitCodes.UNAVAILABLE;
            }
            int code = ExitCodes.of(ex);
            String message = ex.getMessage() == null || ex.getMessage().isBlank() ? ex.getClass().getSimpleName() : ex.getMessage();
            if (code == ExitCodes.INTERNAL) {
                message = "internal error: " + ex.getClass().getName() + ": " + message + " (run again with -x and report the stack trace)";
            } else if (ex instanceof NoSuchFileException missing) {
                message = missing.getReason() != null ? missing.getReason() : "no such file: " + missing.getFile();
            } else if (ex instanceof AccessDeniedException denied) {
                message = "permission denied: " + denied.getFile();
            } else if (ex instanceof java.nio.file.FileSystemException fs && fs.getReason() == null) {
                // its message is the bare path: the reason goes with it
                message = io.mcctl.storage.io.IoErrors.reason(fs).toLowerCase(java.util.Locale.ROOT) + ": " + fs.getFile();
            }
            err.println("mcctl: error: " + message.lines().findFirst().orElse(message));
            if (root.stacktrace) {
                ex.printStackTrace(err);
            }
            err.flush();
            return code;
        });
        return commandLine;
    }
}
