package io.mcctl.cli.bench;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

/** Signals to the processes a benchmark or a test started, sent with kill(1): STOP to hang one, CONT, TERM, HUP. */
public final class Signals {

    private Signals() {
    }

    /** Sends signal {@code name} (without the SIG prefix) to process {@code pid}; fails unless kill exits 0 within 10 s. */
    public static void send(long pid, String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, String.valueOf(pid)).inheritIO().start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            kill.destroyForcibly();
            throw new IOException("kill -" + name + " " + pid + " failed");
        }
    }
}
