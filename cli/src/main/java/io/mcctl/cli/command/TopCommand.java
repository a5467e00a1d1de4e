package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ClientOptions;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.CommandEnvironment;
import io.mcctl.cli.stats.TierStatsReport;
import io.mcctl.cli.stats.TopView;
import io.mcctl.master.client.MasterClient;
import io.mcctl.storage.config.DurationParser;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.LocalTime;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jline.terminal.Attributes;
import org.jline.terminal.Terminal;
import org.jline.terminal.TerminalBuilder;
import org.jline.utils.InfoCmp.Capability;
import org.jline.utils.NonBlockingReader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code mcctl top}: {@code mcctl stats} refreshed, with rates. */
@Command(name = "top", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Show the tier's state refreshed every interval: pages used per bucket as a grid of small bars and a",
                "histogram, the hit ratio since start and over the last interval, page allocations, evictions and lookups",
                "per second, and the biggest tenants. On a terminal it redraws one screen until q or Ctrl-C; when stdout is",
                "not a terminal it prints a plain-text snapshot per interval, without escape codes."})
public final class TopCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Option(names = "--interval", paramLabel = "DURATION", defaultValue = "1s",
            description = "Time between refreshes, 100ms to 1h (default: ${DEFAULT-VALUE}).")
    String interval;

    @Option(names = "--count", paramLabel = "N", defaultValue = "0",
            description = "Stop after N refreshes (default: 0, until q or Ctrl-C; when stdout is not a terminal, until killed).")
    long count;

    @Option(names = "--tenants", paramLabel = "N", defaultValue = "10",
            description = "Most tenants listed, biggest first; 0 lists none (default: ${DEFAULT-VALUE}).")
    int tenants;

    @Override
    public Integer call() throws IOException, InterruptedException {
        Duration period;
        try {
            period = DurationParser.parse(interval);
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid --interval '" + interval + "': allowed is " + DurationParser.ALLOWED);
        }
        if (period.compareTo(Duration.ofMillis(100)) < 0 || period.compareTo(Duration.ofHours(1)) > 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --interval '" + interval + "': allowed is 100ms to 1h");
        }
        if (count < 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --count " + count + ": allowed is 0 (no end) or more");
        }
        if (tenants < 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --tenants " + tenants + ": allowed is 0 or more");
        }
        try (MasterClient master = client.connect(spec)) {
            if (System.console() != null && !"dumb".equals(CommandEnvironment.of(spec).get("TERM"))) {
                return interactive(master, period);
            }
            return plain(master, period);
        }
    }

    /** Snapshots one after the other on stdout, for logs and pipes; a failing call ends the command with its error. */
    private int plain(MasterClient master, Duration period) throws InterruptedException {
        PrintWriter out = spec.commandLine().getOut();
        long pageSize = master.layout().getPageSize();
        TopView view = new TopView(master.target(), DurationParser.format(period), false);
        int width = columns();
        long next = System.nanoTime();
        for (long shown = 0; count == 0 || shown < count; shown++) {
            if (shown > 0) {
                next += period.toNanos();
                sleepUntil(next);
                out.println();
            }
            TierStatsReport report = new TierStatsReport(master.stats(), pageSize);
            for (String line : view.frame(report, System.nanoTime(), LocalTime.now(), width, tenants, "")) {
                out.println(line);
            }
            out.flush();
        }
        return ExitCodes.OK;
    }

    /**
     * One screen redrawn in the terminal's alternate buffer, read in raw mode with signals off so that q and Ctrl-C
     * arrive as keys at once; the terminal is put back as it was however the loop ends. A failing call is shown on
     * the screen and tried again next interval: a master restarting is something to watch, not a reason to quit.
     */
    private int interactive(MasterClient master, Duration period) throws IOException {
        try (Terminal terminal = TerminalBuilder.builder().system(true).build()) {
            AtomicBoolean stop = new AtomicBoolean();
            terminal.handle(Terminal.Signal.INT, signal -> stop.set(true));
            Attributes saved = terminal.enterRawMode();
            Attributes raw = new Attributes(terminal.getAttributes());
            raw.setLocalFlag(Attributes.LocalFlag.ISIG, false);
            terminal.setAttributes(raw);
            boolean unicode = StandardCharsets.UTF_8.equals(terminal.encoding());
            terminal.puts(Capability.enter_ca_mode);
            terminal.puts(Capability.cursor_invisible);
            try {
                TopView view = new TopView(master.target(), DurationParser.format(period), unicode);
                long pageSize = -1;
                NonBlockingReader keys = terminal.reader();
                long next = System.nanoTime();
                for (long shown = 0; !stop.get() && (count == 0 || shown < count); shown++) {
                    List<String> lines;
                    try {
                        if (pageSize < 0) {
                            pageSize = master.layout().getPageSize();
                        }
                        lines = view.frame(new TierStatsReport(master.stats(), pageSize), System.nanoTime(), LocalTime.now(),
                                terminal.getWidth(), tenants, "  (q quits)");
                    } catch (RuntimeException e) {
                        lines = List.of("mcctl top  " + master.target() + "  " + LocalTime.now().withNano(0) + "  (q quits)", "",
                                "cannot get the master's stats: " + e.getMessage());
                    }
                    draw(terminal, lines);
                    next += period.toNanos();
                    while (!stop.get()) {
                        long waitMillis = (next - System.nanoTime()) / 1_000_000;
                        if (waitMillis <= 0) {
                            break;
                        }
                        int key = keys.read(waitMillis);
                        if (key == 'q' || key == 'Q' || key == 3 || key == NonBlockingReader.EOF) {
                            stop.set(true);
                        }
                    }
                }
            } finally {
                terminal.puts(Capability.cursor_visible);
                terminal.puts(Capability.exit_ca_mode);
                terminal.setAttributes(saved);
                terminal.flush();
            }
        }
        return ExitCodes.OK;
    }

    private static void draw(Terminal terminal, List<String> lines) {
        terminal.puts(Capability.clear_screen);
        int height = Math.max(1, terminal.getHeight());
        PrintWriter writer = terminal.writer();
        for (int i = 0; i < Math.min(lines.size(), height - 1); i++) {
            writer.print(lines.get(i));
            writer.print("\r\n");
        }
        writer.flush();
    }

    /** Width of plain snapshots: $COLUMNS when set, else 100. */
    private int columns() {
        try {
            int columns = Integer.parseInt(CommandEnvironment.of(spec).getOrDefault("COLUMNS", "100"));
            return Math.max(40, columns);
        } catch (NumberFormatException e) {
            return 100;
        }
    }

    private static void sleepUntil(long nanos) throws InterruptedException {
        long wait = nanos - System.nanoTime();
        if (wait > 0) {
            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
    }
}
