package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;

/** One in-process run of the mcctl command line: its exit code and what it printed. */
public record CliRun(int exitCode, String out, String err) {

    public static CliRun run(Map<String, String> environment, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Main.run(args, environment, new PrintWriter(out, true), new PrintWriter(err, true));
        return new CliRun(code, out.toString(), err.toString());
    }

    public static CliRun run(String... args) {
        return run(Map.of(), args);
    }

    /** Fails with both streams shown unless the exit code is {@code expected}. */
    public CliRun expectExit(int expected) {
        assertEquals(expected, exitCode, () -> "exit code; stdout:\n" + out + "\nstderr:\n" + err);
        return this;
    }

    public CliRun expectOk() {
        return expectExit(ExitCodes.OK);
    }
}
