package io.mcctl.cli.shell;

import io.mcctl.cli.ClientOptions;
import io.mcctl.master.client.MasterClient;
import io.mcctl.master.client.MasterException;
import io.mcctl.master.proto.v1.KeyInfo;
import io.mcctl.master.proto.v1.ListKeysResponse;
import io.mcctl.master.protocol.KeyRules;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.jline.reader.Candidate;
import org.jline.reader.Completer;
import org.jline.reader.LineReader;
import org.jline.reader.ParsedLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Model.PositionalParamSpec;
import picocli.shell.jline3.PicocliJLineCompleter;

/**
 * Tab completion for the shell: picocli's completion of commands, options and option values, plus key names from
 * the master where a command expects a key.
 *
 * <p>A word is a key when, in the command tree, it falls on a positional parameter labelled {@code KEY} (today the
 * key of {@code get}, {@code stat} and {@code offload}, and every key of {@code rm}); this way a command that gains a
 * key parameter completes keys without being listed here. For such a word the master is asked for up to
 * {@value #PAGE_SIZE} keys that start with what has been typed, at the line's {@code --master}, else
 * {@code $MCCTL_MASTER} of the shell's environment, else {@link MasterClient#DEFAULT_TARGET}, for the line's
 * {@code --tenant}, else {@code default}. The line's {@code --timeout} is not used: it is meant for the command, and
 * a TAB must never hold the prompt that long.
 *
 * <p>Completion is a convenience, so it never gets in the way: when the master does not answer within the deadline
 * (300 ms by default), cannot be reached or answers with an error, no key is offered and nothing is printed. The
 * call runs on a background thread so that the deadline bounds the wait even though the client retries an
 * unreachable master; a call that misses the deadline is left to end on its own (the client's per-call deadline
 * bounds it), which also lets a first, cold connection finish so that the next TAB is answered.
 *
 * <p>Thread-safe: {@link #complete} and {@link #close} may be called from any thread (jline calls {@code complete}
 * from the reading thread only). Close it when the shell ends, to close the connections it keeps.
 */
public final class KeyNameCompleter implements Completer, AutoCloseable {

    /** How long a TAB waits for the master's keys. */
    public static final Duration DEFAULT_DEADLINE = Duration.ofMillis(300);

    /** At most this many keys are offered at once: more would not fit a screen, and the master answers faster. */
    public static final int PAGE_SIZE = 100;

    /** The label of the positional parameters whose values are key names. */
    static final String KEY_LABEL = "KEY";

    private static final String DEFAULT_TENANT = "default";
    private static final AtomicInteger THREADS = new AtomicInteger();

    private final CommandSpec root;
    private final Map<String, String> environment;
    private final Duration deadline;
    private final int pageSize;
    private final Completer others;
    private final ExecutorService calls;
    /** One client per address: opening a gRPC connection per TAB would take longer than the deadline. */
    private final Map<String, MasterClient> clients = new HashMap<>();
    private boolean closed;

    /** Completes the commands of {@code root}, asking the master for at most {@value #PAGE_SIZE} keys within 300 ms. */
    public KeyNameCompleter(CommandSpec root, Map<String, String> environment) {
        this(root, environment, DEFAULT_DEADLINE, PAGE_SIZE);
    }

    /**
     * @param root        the command tree whose lines are completed
     * @param environment where {@code MCCTL_MASTER} is looked up
     * @param deadline    how long one completion waits for the master
     * @param pageSize    at most this many keys are offered
     */
    public KeyNameCompleter(CommandSpec root, Map<String, String> environment, Duration deadline, int pageSize) {
        if (deadline.isNegative() || deadline.isZero()) {
            throw new IllegalArgumentException("deadline must be more than zero: " + deadline);
        }
        if (pageSize < 1) {
            throw new IllegalArgumentException("page size must be at least 1: " + pageSize);
        }
        this.root = root;
        this.environment = Map.copyOf(environment);
        this.deadline = deadline;
        this.pageSize = pageSize;
        this.others = new PicocliJLineCompleter(root);
        // Daemon threads: a call left running past its deadline must not keep the JVM alive after the shell ends.
        this.calls = Executors.newCachedThreadPool(task -> {
            Thread thread = new Thread(task, "mcctl-key-completion-" + THREADS.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
    }

    @Override
    public void complete(LineReader reader, ParsedLine line, List<Candidate> candidates) {
        KeyWord keyWord;
        try {
            keyWord = keyWord(line);
        } catch (RuntimeException e) {
            keyWord = null; // a line the model cannot follow is left to picocli, which copes with anything
        }
        // Picocli's candidates are always offered: where a key may go, an option may go too (`get <TAB>` lists both).
        others.complete(reader, line, candidates);
        if (keyWord == null) {
            return;
        }
        try {
            candidates.addAll(keys(keyWord));
        } catch (RuntimeException e) {
            // Completion must never break the line being typed: whatever went wrong, there is just nothing to offer.
        }
    }

    /** The keys to offer for {@code word}: none whenever the master cannot tell quickly. */
    private List<Candidate> keys(KeyWord word) {
        String target = word.master() != null ? word.master()
                : environment.getOrDefault(ClientOptions.MASTER_ENV, MasterClient.DEFAULT_TARGET);
        String tenant = word.tenant() != null ? word.tenant() : DEFAULT_TENANT;
        if (KeyRules.checkTenant(tenant) != null) {
            return List.of(); // the master would refuse it: spare the round trip
        }
        Future<ListKeysResponse> call;
        try {
            // Even opening the client runs in the background: the first one loads Netty, which can outlast the deadline.
            call = calls.submit(() -> listKeys(target, tenant, word.prefix()));
        } catch (RejectedExecutionException e) {
            return List.of(); // the shell is closing
        }
        ListKeysResponse response;
        try {
            response = call.get(deadline.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException | ExecutionException e) {
            return List.of();
        } catch (InterruptedException e) {
            call.cancel(true);
            Thread.currentThread().interrupt(); // jline turns it into Ctrl-C handling
            return List.of();
        }
        if (response == null) {
            return List.of();
        }
        boolean truncated = !response.getNextPageToken().isEmpty();
        List<Candidate> offered = new ArrayList<>(response.getKeysCount() + 1);
        for (KeyInfo key : response.getKeysList()) {
            offered.add(new Candidate(key.getKey(), key.getKey(), null, null, null, null, !truncated));
        }
        if (truncated && !response.getKeysList().isEmpty()) {
            // Without this, jline would insert the longest prefix shared by the keys shown, which the keys not shown
            // may not share; offering the typed word itself keeps that prefix to what has been typed.
            offered.add(new Candidate(word.prefix(), "...", null, "more keys: type more of the key", null, null, false));
        }
        return offered;
    }

    /** The master's first page of keys, or null once the completer is closed. */
    private ListKeysResponse listKeys(String target, String tenant, String prefix) {
        MasterClient client = client(target);
        if (client == null) {
            return null;
        }
        try {
            return client.listKeys(tenant, prefix, pageSize, "");
        } catch (MasterException e) {
            if (e.unreachable()) {
                // A fresh connection at the next TAB finds a master started meanwhile; the failed one would wait
                // out gRPC's reconnect backoff, which grows to two minutes.
                drop(client);
            }
            throw e;
        }
    }

    private synchronized MasterClient client(String target) {
        if (closed) {
            return null;
        }
        // TLS and the token from the environment, as the shell's commands take them when no option says otherwise.
        return clients.computeIfAbsent(MasterClient.checkTarget(target),
                address -> new MasterClient(address, deadline, io.mcctl.cli.ConnectionOptions.fromEnvironment(environment)));
    }

    private void drop(MasterClient client) {
        synchronized (this) {
            if (!clients.remove(client.target(), client)) {
                return; // another call dropped it already, or the shell closed it
            }
        }
        client.close();
    }

    /** Closes every connection to a master; later completions offer no keys. */
    @Override
    public void close() {
        List<MasterClient> open;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            open = List.copyOf(clients.values());
            clients.clear();
        }
        calls.shutdownNow();
        for (MasterClient client : open) {
            client.close();
        }
    }

    /** The word under the cursor when it is a key: what has been typed of it, and the line's master and tenant. */
    record KeyWord(String prefix, String master, String tenant) {
    }

    /**
     * Follows the line through the command tree the way picocli would parse it, to tell whether the word under the
     * cursor falls on a {@value #KEY_LABEL} positional parameter; null when it does not.
     */
    KeyWord keyWord(ParsedLine line) {
        List<String> words = line.words();
        int current = line.wordIndex();
        if (current < 0 || current >= words.size()) {
            return null;
        }
        CommandSpec command = root;
        String master = null;
        String tenant = null;
        boolean onlyPositionals = false;
        int positionals = 0;
        boolean currentIsPositional = false;
        for (int i = 0; i < words.size(); i++) {
            String word = words.get(i);
            if (i == current) {
                // What has been typed so far decides: an option, or its value, is never a key.
                String typed = line.word().substring(0, Math.min(line.wordCursor(), line.word().length()));
                currentIsPositional = onlyPositionals || !typed.startsWith("-");
                if (currentIsPositional) {
                    positionals++;
                }
                continue;
            }
            if (!onlyPositionals && word.equals("--")) {
                onlyPositionals = true;
                continue;
            }
            if (!onlyPositionals && word.startsWith("-")) {
                int equals = word.indexOf('=');
                String name = equals > 0 ? word.substring(0, equals) : word;
                OptionSpec option = command.findOption(name);
                String value = null;
                if (equals > 0) {
                    value = word.substring(equals + 1);
                } else if (option != null && takesValue(option, words, i)) {
                    if (i + 1 == current) {
                        return null; // the word under the cursor is this option's value
                    }
                    value = i + 1 < words.size() ? words.get(i + 1) : null;
                    i++;
                }
                if (name.equals("--master")) {
                    master = value;
                } else if (name.equals("--tenant")) {
                    tenant = value;
                }
                continue;
            }
            if (i < current && positionals == 0 && command.subcommands().containsKey(word)) {
                command = command.subcommands().get(word).getCommandSpec();
                continue;
            }
            if (i < current) {
                positionals++;
            }
        }
        if (!currentIsPositional || command == root) {
            return null;
        }
        int index = positionals - 1;
        for (PositionalParamSpec positional : command.positionalParameters()) {
            if (KEY_LABEL.equals(positional.paramLabel()) && positional.index().contains(index)) {
                String typed = line.word().substring(0, Math.min(line.wordCursor(), line.word().length()));
                return new KeyWord(typed, master, tenant);
            }
        }
        return null;
    }

    /** Whether {@code option} at {@code words[at]} takes the next word as its value, as picocli would decide. */
    private static boolean takesValue(OptionSpec option, List<String> words, int at) {
        if (option.arity().max() == 0) {
            return false;
        }
        if (option.arity().min() > 0) {
            return true;
        }
        // An optional value is taken only when the next word does not look like an option.
        return at + 1 < words.size() && !words.get(at + 1).startsWith("-");
    }
}
