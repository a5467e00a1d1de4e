package io.mcctl.cli.chaos;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The private network of one chaos run: a bridge in this namespace with the address {@code 10.A.B.1/24}, and one
 * network namespace per process, joined to the bridge by a veth pair, at {@code 10.A.B.n}. Names carry the run's id,
 * so that runs side by side never share a name; {@link #close()} deletes every namespace and the bridge.
 *
 * <p>Faults are made inside the namespaces alone: a cut between two hosts is a blackhole route in each toward the
 * other (a TCP connection needs packets both ways, so one side's route already cuts it; both sides make it
 * symmetrical), a host cut from everyone is its link set down, a slow or lossy link is {@code tc netem} on its end.
 *
 * <p>Thread-safe: every method is synchronized on this object; commands run while holding it are short.
 */
public final class ChaosNet implements AutoCloseable {

    /** One namespace on the bridge. */
    public record Host(String name, String namespace, String address, String link) {
    }

    private final String id;
    private final String bridge;
    private final String subnet;
    private final Map<String, Host> hosts = new LinkedHashMap<>();
    private boolean closed;

    private ChaosNet(String id, String subnet) {
        this.id = id;
        this.bridge = "mcb" + id;
        this.subnet = subnet;
    }

    /**
     * Creates the bridge of run {@code id} (6 hex digits) on a /24 inside 10.0.0.0/8 that no route here uses yet.
     *
     * @throws IOException when a command fails (this needs root: it names the command and what it said)
     */
    public static ChaosNet create(String id, java.util.Random random) throws IOException, InterruptedException {
        if (!id.matches("[0-9a-f]{6}")) {
            throw new IllegalArgumentException("run id '" + id + "': allowed are 6 lowercase hex digits");
        }
        String routes = run(List.of("ip", "-4", "route", "show"));
        String subnet = null;
        for (int attempt = 0; attempt < 100 && subnet == null; attempt++) {
            String candidate = "10." + (100 + random.nextInt(150)) + "." + random.nextInt(256);
            if (!routes.contains(candidate + ".")) {
                subnet = candidate;
            }
        }
        if (subnet == null) {
            throw new IOException("no free /24 in 10.100.0.0-10.249.255.0 for the chaos network");
        }
        ChaosNet net = new ChaosNet(id, subnet);
        try {
            run(List.of("ip", "link", "add", net.bridge, "type", "bridge"));
            run(List.of("ip", "addr", "add", subnet + ".1/24", "dev", net.bridge));
            run(List.of("ip", "link", "set", net.bridge, "up"));
            return net;
        } catch (IOException | RuntimeException e) {
            net.close();
            throw e;
        }
    }

    /** This side's address on the bridge: how the harness's own clients reach the hosts. */
    public String gateway() {
        return subnet + ".1";
    }

    /** Adds a namespace named after {@code name} with the next address on the bridge. */
    public synchronized Host add(String name) throws IOException, InterruptedException {
        int n = hosts.size() + 2;
        if (n > 250) {
            throw new IllegalStateException("more than 249 hosts on one chaos network");
        }
        String namespace = "mc" + id + "-" + name;
        String outer = "mv" + id + String.format("%02x", n);
        String inner = "mi" + id + String.format("%02x", n);
        Host host = new Host(name, namespace, subnet + "." + n, outer);
        hosts.put(name, host); // before the commands, so that close() deletes what they made even when one fails
        run(List.of("ip", "netns", "add", namespace));
        run(List.of("ip", "link", "add", outer, "type", "veth", "peer", "name", inner));
        run(List.of("ip", "link", "set", inner, "netns", namespace));
        run(List.of("ip", "link", "set", outer, "master", bridge));
        run(List.of("ip", "link", "set", outer, "up"));
        inside(host, "ip", "link", "set", "lo", "up");
        inside(host, "ip", "link", "set", inner, "name", "eth0");
        inside(host, "ip", "addr", "add", host.address() + "/24", "dev", "eth0");
        inside(host, "ip", "link", "set", "eth0", "up");
        return host;
    }

    public synchronized Host host(String name) {
        Host host = hosts.get(name);
        if (host == null) {
            throw new IllegalArgumentException("no host '" + name + "' on this chaos network");
        }
        return host;
    }

    /** {@code command} prefixed so that it runs inside {@code host}'s namespace. */
    public static List<String> in(Host host, List<String> command) {
        List<String> full = new ArrayList<>(List.of("ip", "netns", "exec", host.namespace()));
        full.addAll(command);
        return full;
    }

    /** Cuts {@code a} from {@code b} both ways. */
    public synchronized void cut(Host a, Host b) throws IOException, InterruptedException {
        inside(a, "ip", "route", "replace", "blackhole", b.address() + "/32");
        inside(b, "ip", "route", "replace", "blackhole", a.address() + "/32");
    }

    /** Cuts {@code a} from this side's clients (the bridge address). */
    public synchronized void cutFromGateway(Host a) throws IOException, InterruptedException {
        inside(a, "ip", "route", "replace", "blackhole", gateway() + "/32");
    }

    /** Takes back every cut {@code a} has made (its blackhole routes). */
    public synchronized void heal(Host a) throws IOException, InterruptedException {
        for (String line : run(in(a, List.of("ip", "-4", "route", "show", "type", "blackhole"))).split("\n")) {
            String[] words = line.strip().split("\\s+");
            if (words.length >= 2 && words[0].equals("blackhole")) {
                inside(a, "ip", "route", "del", "blackhole", words[1]);
            }
        }
    }

    /** The link of {@code a} down (false) or up (true): cut from everyone, or back. */
    public synchronized void link(Host a, boolean up) throws IOException, InterruptedException {
        inside(a, "ip", "link", "set", "eth0", up ? "up" : "down");
    }

    /** {@code tc netem} on {@code a}'s link with {@code args} (e.g. "loss 20%", "delay 200ms 50ms"); none clears it. */
    public synchronized void netem(Host a, String... args) throws IOException, InterruptedException {
        if (args.length == 0) {
            runQuietly(in(a, List.of("tc", "qdisc", "del", "dev", "eth0", "root")));
            return;
        }
        List<String> command = new ArrayList<>(List.of("tc", "qdisc", "replace", "dev", "eth0", "root", "netem"));
        command.addAll(List.of(args));
        run(in(a, command));
    }

    /** Any other queueing discipline {@code kind} with {@code args} on {@code a}'s link; {@link #netem} with none clears it. */
    public synchronized void qdisc(Host a, String kind, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("tc", "qdisc", "replace", "dev", "eth0", "root", kind));
        command.addAll(List.of(args));
        run(in(a, command));
    }

    private static void inside(Host host, String... command) throws IOException, InterruptedException {
        run(in(host, List.of(command)));
    }

    /** Runs {@code command}, returning its standard output; a non-zero exit throws with what it said. */
    static String run(List<String> command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        byte[] out = process.getInputStream().readAllBytes();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IOException(String.join(" ", command) + ": did not finish within 30 s");
        }
        String said = new String(out, StandardCharsets.UTF_8);
        if (process.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " exited " + process.exitValue() + ": " + said.strip()
                    + (said.contains("Operation not permitted") ? " (the chaos network needs root)" : ""));
        }
        return said;
    }

    private static void runQuietly(List<String> command) {
        try {
            run(command);
        } catch (IOException | InterruptedException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Deletes every namespace (and with it its end of the veth pair, which takes the other end) and the bridge. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Host host : hosts.values()) {
            runQuietly(List.of("ip", "netns", "del", host.namespace()));
            runQuietly(List.of("ip", "link", "del", host.link()));
        }
        runQuietly(List.of("ip", "link", "del", bridge));
    }

    /** The run's id, in every name this network makes. */
    public String id() {
        return id;
    }
}
