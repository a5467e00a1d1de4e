package io.mcctl.cli.shell;

import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.CommandTrees;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jline.reader.EOFError;
import org.jline.reader.EndOfFileException;
import org.jline.reader.LineReader;
import org.jline.reader.LineReaderBuilder;
import org.jline.reader.Parser.ParseContext;
import org.jline.reader.UserInterruptException;
import org.jline.reader.impl.DefaultParser;
import org.jline.terminal.Terminal;
import org.jline.terminal.Terminal.Signal;
import org.jline.terminal.Terminal.SignalHandler;
import picocli.CommandLine;

/**
 * Runs mcctl command lines one after another in this JVM, each through a fresh command tree so that option
 * values never carry over from one line to the next.
 *
 * <p>Not thread-safe: one instance serves one input. Several shells may run at once on different threads.
 */
public final class Shell {

    /** The history file, in $HOME. */
    public static final String HISTORY_FILE = ".mcctl_history";

    private static final ThreadLocal<Boolean> ACTIVE = ThreadLocal.withInitial(() -> false);

    private final CommandTrees trees;
    private final Map<String, String> environment;
    private final PrintWriter out;
    private final PrintWriter err;
    private int lastFailure = ExitCodes.OK;

    public Shell(CommandTrees trees, Map<String, String> environment, PrintWriter out, PrintWriter err) {
        this.trees = trees;
        this.environment = Map.copyOf(environment);
        this.out = out;
        this.err = err;
    }

    /** Whether a shell is running lines on this thread (so that {@code shell} inside it can be refused). */
    public static boolean active() {
        return ACTIVE.get();
    }

    /**
     * Reads lines from {@code in} until it ends or a line says {@code exit}: no prompt, no history, no escape codes.
     *
     * @return the exit code of the last line that failed, or 0 when every line succeeded
     */
    public int runScript(Reader in) throws IOException {
        DefaultParser parser = parser();
        BufferedReader lines = in instanceof BufferedReader buffered ? buffered : new BufferedReader(in);
        ACTIVE.set(true);
        try {
            String line;
            while ((line = lines.readLine()) != null) {
                List<String> words;
                try {
                    words = words(parser, line);
                } catch (EOFError unclosed) {
                    fail(ExitCodes.USAGE, "unclosed quote in: " + line.strip());
                    continue;
                }
                if (execute(words) == Step.EXIT) {
                    break;
                }
            }
            return lastFailure;
        } finally {
            ACTIVE.set(false);
            UnreachableMasters.clear();
        }
    }

    /**
     * Reads lines from a terminal with the prompt {@code mcctl> }, history and tab completion, until {@code exit},
     * {@code quit} or Ctrl-D. Ctrl-C drops the line being typed; while a command runs, it interrupts the command.
     * Tab completion covers commands, options, their values and, where a command takes a key, the master's key names
     * (see {@link KeyNameCompleter}).
     *
     * @return 0: at a terminal, failures have been seen already and are not the shell's own
     */
    public int runInteractive(Terminal terminal) {
        CommandLine model = trees.whole(environment, out, err);
        try (KeyNameCompleter completer = new KeyNameCompleter(model.getCommandSpec(), environment)) {
            return runInteractive(terminal, completer);
        }
    }

    private int runInteractive(Terminal terminal, KeyNameCompleter completer) {
        LineReaderBuilder builder = LineReaderBuilder.builder()
                .terminal(terminal)
                .appName("mcctl")
                .parser(parser())
                .completer(completer)
                .option(LineReader.Option.DISABLE_EVENT_EXPANSION, true); // keys may contain '!'
        historyFile().ifPresent(file -> builder.variable(LineReader.HISTORY_FILE, file));
        LineReader reader = builder.build();
        Thread shellThread = Thread.currentThread();
        SignalHandler previous = terminal.handle(Signal.INT, signal -> shellThread.interrupt());
        ACTIVE.set(true);
        try {
            while (true) {
                String line;
                try {
                    line = reader.readLine("mcctl> ");
                } catch (UserInterruptException cancelled) {
                    continue;
                } catch (EndOfFileException end) {
                    break;
                }
                Step step = execute(words(parser(), line));
                Thread.interrupted(); // a Ctrl-C that arrived as the command ended must not hit the next one
                if (step == Step.EXIT) {
                    break;
                }
            }
            return ExitCodes.OK;
        } finally {
            ACTIVE.set(false);
            UnreachableMasters.clear();
            terminal.handle(Signal.INT, previous);
            try {
                reader.getHistory().save();
            } catch (IOException e) {
                err.println("mcctl: warning: history not saved: " + e.getMessage());
                err.flush();
            }
        }
    }

    /** ~/.mcctl_history, or none when $HOME is unset or not a writable directory. */
    Optional<Path> historyFile() {
        String home = environment.get("HOME");
        if (home == null || home.isBlank()) {
            return Optional.empty();
        }
        Path dir = Path.of(home);
        if (!Files.isDirectory(dir) || !Files.isWritable(dir)) {
            return Optional.empty();
        }
        Path file = dir.resolve(HISTORY_FILE);
        if (Files.exists(file) && !Files.isWritable(file)) {
            return Optional.empty();
        }
        return Optional.of(file);
    }

    private enum Step { NEXT, EXIT }

    private Step execute(List<String> words) {
        if (words.isEmpty()) {
            return Step.NEXT;
        }
        String first = words.get(0);
        if (first.equals("exit") || first.equals("quit")) {
            if (words.size() == 1) {
                return Step.EXIT;
            }
            fail(ExitCodes.USAGE, "'" + first + "' takes no arguments");
            return Step.NEXT;
        }
        String[] args = words.size() == 1 && first.equals("help") ? new String[] {"--help"} : words.toArray(new String[0]);
        CommandLine commandLine = trees.forArgs(environment, out, err, args);
        String runsUntilStopped = runsUntilStopped(commandLine, words);
        if (runsUntilStopped != null) {
            fail(ExitCodes.USAGE, "'" + runsUntilStopped + "' runs until it is stopped and would hold the shell: run it outside "
                    + "the shell, e.g. in another terminal: mcctl " + runsUntilStopped);
            return Step.NEXT;
        }
        int code = commandLine.execute(args);
        out.flush();
        err.flush();
        if (code != ExitCodes.OK) {
            lastFailure = code;
        }
        return Step.NEXT;
    }

    /** Commands that serve until they are stopped: in the shell they would never give the prompt back. */
    static final java.util.Set<String> RUN_UNTIL_STOPPED = java.util.Set.of("mcctl master start");

    /**
     * The command (without "mcctl") that {@code words} would run when it is one that runs until stopped, else null.
     * Asking for its help is fine.
     */
    static String runsUntilStopped(CommandLine root, List<String> words) {
        CommandLine command = root;
        for (String word : words) {
            if (word.equals("-h") || word.equals("--help") || word.equals("-V") || word.equals("--version")) {
                return null;
            }
            CommandLine sub = word.startsWith("-") ? null : command.getSubcommands().get(word);
            if (sub != null) {
                command = sub;
            }
        }
        String name = command.getCommandSpec().qualifiedName();
        return RUN_UNTIL_STOPPED.contains(name) ? name.substring("mcctl ".length()) : null;
    }

    private void fail(int code, String message) {
        err.println("mcctl: error: " + message);
        err.flush();
        lastFailure = code;
    }

    private static DefaultParser parser() {
        DefaultParser parser = new DefaultParser();
        parser.setEofOnUnclosedQuote(true);
        return parser;
    }

    /** The words of a line, quotes respected; none for a blank line or a {@code #} comment. */
    private static List<String> words(DefaultParser parser, String line) {
        String trimmed = line.strip();
        if (trimmed.isEmpty() || trimmed.startsWith("#")) {
            return List.of();
        }
        return List.copyOf(parser.parse(trimmed, trimmed.length(), ParseContext.ACCEPT_LINE).words());
    }
}
