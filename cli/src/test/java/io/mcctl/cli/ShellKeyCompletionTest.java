package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mcctl.cli.shell.KeyNameCompleter;
import io.mcctl.master.server.MasterServer;
import io.mcctl.storage.layout.BucketLayout;
import io.mcctl.testkit.FreePorts;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jline.reader.Candidate;
import org.jline.reader.LineReader;
import org.jline.reader.LineReaderBuilder;
import org.jline.reader.ParsedLine;
import org.jline.reader.Parser.ParseContext;
import org.jline.reader.impl.DefaultParser;
import org.jline.terminal.Terminal;
import org.jline.terminal.TerminalBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DisplayNameGeneration;
import org.junit.jupiter.api.DisplayNameGenerator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Key names completed in the shell from a real master in this JVM that holds a few keys in two tenants, and the
 * rest of the completion left as it was. Completers that must find the master get a generous deadline so that a
 * busy machine does not make them miss it; only the test of an absent master uses the shell's own deadline.
 */
@Timeout(120)
@DisplayNameGeneration(DisplayNameGenerator.ReplaceUnderscores.class)
class ShellKeyCompletionTest {

    static final List<String> DEFAULT_KEYS = List.of("key-1", "key-2", "kv-x", "other");
    static final List<String> T2_KEYS = List.of("ab1", "ab2", "abc", "zz");
    static final Duration PATIENT = Duration.ofSeconds(20);

    @TempDir
    static Path root;

    static MasterServer master;
    static String target;
    static Terminal terminal;
    static LineReader reader;

    /** The completers a test made, closed after it. */
    final List<KeyNameCompleter> completers = new ArrayList<>();

    @BeforeAll
    static void startMasterWithKeys() throws Exception {
        BucketLayout layout = new BucketLayout(root.resolve("tier"), 4, 4096, 256 * 4096L);
        master = MasterServer.start(MasterServer.Options.builder(layout).build());
        target = "127.0.0.1:" + master.port();
        offload("default", DEFAULT_KEYS);
        offload("t2", T2_KEYS);
        terminal = TerminalBuilder.builder().dumb(true).streams(InputStream.nullInputStream(), OutputStream.nullOutputStream()).build();
        reader = LineReaderBuilder.builder().terminal(terminal).build();
    }

    /** Offloads one small file per key, named after it, with mcctl itself. */
    static void offload(String tenant, List<String> keys) throws Exception {
        Path dir = Files.createDirectories(root.resolve("in-" + tenant));
        for (String key : keys) {
            Files.writeString(dir.resolve(key), "object " + key, StandardCharsets.UTF_8);
        }
        CliRun.run("offload", "--batch", dir.toString(), "--master", target, "--tenant", tenant).expectOk();
    }

    @AfterAll
    static void stopMaster() throws Exception {
        if (terminal != null) {
            terminal.close();
        }
        if (master != null) {
            master.close();
        }
    }

    @AfterEach
    void closeCompleters() {
        completers.forEach(KeyNameCompleter::close);
    }

    KeyNameCompleter completer(Map<String, String> environment, Duration deadline, int pageSize) {
        StringWriter sink = new StringWriter();
        KeyNameCompleter completer = new KeyNameCompleter(
                Main.commandLine(environment, new PrintWriter(sink), new PrintWriter(sink)).getCommandSpec(), environment, deadline, pageSize);
        completers.add(completer);
        return completer;
    }

    /** A completer whose environment points at the test's master. */
    KeyNameCompleter completer() {
        return completer(Map.of(ClientOptions.MASTER_ENV, target), PATIENT, KeyNameCompleter.PAGE_SIZE);
    }

    /** The candidates offered with the cursor at {@code cursor} in {@code line}, as jline asks when TAB is pressed. */
    static List<Candidate> complete(KeyNameCompleter completer, String line, int cursor) {
        ParsedLine parsed = new DefaultParser().parse(line, cursor, ParseContext.COMPLETE);
        List<Candidate> candidates = new ArrayList<>();
        completer.complete(reader, parsed, candidates);
        return candidates;
    }

    static List<Candidate> complete(KeyNameCompleter completer, String line) {
        return complete(completer, line, line.length());
    }

    /** The values jline would offer for {@code line}: the candidates that start with the word under the cursor. */
    static List<String> values(KeyNameCompleter completer, String line) {
        return offered(complete(completer, line), line, line.length());
    }

    static List<String> offered(List<Candidate> candidates, String line, int cursor) {
        ParsedLine parsed = new DefaultParser().parse(line, cursor, ParseContext.COMPLETE);
        String typed = parsed.word().substring(0, parsed.wordCursor());
        return candidates.stream().map(Candidate::value).filter(v -> v.startsWith(typed)).sorted().toList();
    }

    /** The keys among all the candidates for {@code line}, whether or not they fit the word under the cursor. */
    static List<String> keysOffered(KeyNameCompleter completer, String line) {
        return complete(completer, line).stream().map(Candidate::value)
                .filter(v -> DEFAULT_KEYS.contains(v) || T2_KEYS.contains(v)).sorted().toList();
    }

    @Test
    void keys_complete_from_a_master_that_wants_a_token_with_the_token_of_the_environment() throws Exception {
        Path dir = Files.createDirectories(root.resolve("secured"));
        String token = "token-of-the-default-tenant";
        Path tokens = Files.writeString(dir.resolve("tokens.yaml"), "tokens:\n  - name: shell\n    sha256: "
                + io.mcctl.master.security.TokenTable.sha256Hex(token) + "\n    role: tenant\n    tenants: [default]\n");
        BucketLayout layout = new BucketLayout(dir.resolve("tier"), 4, 4096, 256 * 4096L);
        try (MasterServer secured = MasterServer.start(MasterServer.Options.builder(layout).build(), io.mcctl.master.security.MasterSecurity.of(null, null, null, tokens))) {
            String address = "127.0.0.1:" + secured.port();
            Path in = Files.createDirectories(dir.resolve("in"));
            Files.writeString(in.resolve("secret-1"), "x");
            CliRun.run(Map.of(ConnectionOptions.TOKEN_ENV, token), "offload", "--batch", in.toString(), "--master", address).expectOk();
            assertEquals(List.of("secret-1"), values(completer(Map.of(ClientOptions.MASTER_ENV, address, ConnectionOptions.TOKEN_ENV, token),
                    PATIENT, KeyNameCompleter.PAGE_SIZE), "get sec"));
            assertEquals(List.of(), values(completer(Map.of(ClientOptions.MASTER_ENV, address), PATIENT, KeyNameCompleter.PAGE_SIZE), "get sec"),
                    "without the token the master refuses the listing, and nothing is offered");
        }
    }

    @Test
    void the_key_of_get_completes_from_the_master_named_by_the_environment() {
        KeyNameCompleter completer = completer();
        assertEquals(List.of("key-1", "key-2"), values(completer, "get ke"));
        assertEquals(List.of("key-1", "key-2", "kv-x"), values(completer, "get k"));
        assertEquals(DEFAULT_KEYS, keysOffered(completer, "get "));
        assertTrue(values(completer, "get ").contains("--tenant"), "an empty word may still be an option");
        assertEquals(List.of(), values(completer, "get nothing-starts-so"));
    }

    @Test
    void a_whole_page_of_keys_completes_as_a_finished_word() {
        List<Candidate> keys = complete(completer(), "get ke").stream().filter(c -> c.value().startsWith("ke")).toList();
        assertEquals(2, keys.size());
        assertTrue(keys.stream().allMatch(Candidate::complete), "a space follows a chosen key");
    }

    @Test
    void every_command_with_a_key_parameter_completes_it() {
        KeyNameCompleter completer = completer();
        assertEquals(List.of("other"), values(completer, "stat o"));
        assertEquals(List.of("other"), values(completer, "stat -o json o"));
        assertEquals(List.of("key-1", "key-2"), values(completer, "offload ke"));
        assertEquals(List.of("key-1", "key-2"), values(completer, "rm ke"));
        assertEquals(List.of("key-1", "key-2"), values(completer, "rm other ke"), "every key of rm");
        assertEquals(List.of("key-1", "key-2"), values(completer, "get --out /tmp/x ke"));
        assertEquals(List.of("key-1", "key-2"), values(completer, "-x get ke"));
    }

    @Test
    void the_lines_tenant_chooses_the_keys() {
        KeyNameCompleter completer = completer();
        assertEquals(List.of("ab1", "ab2", "abc"), values(completer, "rm --tenant t2 ab"));
        assertEquals(List.of("ab1", "ab2", "abc"), values(completer, "rm --tenant=t2 ab"));
        assertEquals(List.of("ab1", "ab2", "abc"), offered(complete(completer, "get ab --tenant t2", "get ab".length()),
                "get ab --tenant t2", "get ab".length()), "options after the cursor count too");
        assertEquals(List.of("zz"), values(completer, "stat --tenant t2 z"));
        assertEquals(List.of(), values(completer, "get --tenant t2 ke"));
        assertEquals(List.of(), values(completer, "get --tenant no-such-tenant k"));
        assertEquals(List.of(), values(completer, "get --tenant 'not a tenant!' k"));
    }

    @Test
    void the_lines_master_wins_over_the_environment() throws Exception {
        KeyNameCompleter completer = completer(Map.of(ClientOptions.MASTER_ENV, "127.0.0.1:" + FreePorts.one()), PATIENT, KeyNameCompleter.PAGE_SIZE);
        assertEquals(List.of("key-1", "key-2", "kv-x"), values(completer, "get --master " + target + " k"));
        assertEquals(List.of("key-1", "key-2", "kv-x"), values(completer, "get --master=" + target + " k"));
        assertEquals(List.of("ab1", "ab2", "abc"), values(completer, "rm --master " + target + " --tenant t2 a"));
    }

    @Test
    void a_page_cut_short_offers_no_space_and_keeps_jline_from_guessing_past_the_typed_prefix() {
        KeyNameCompleter completer = completer(Map.of(ClientOptions.MASTER_ENV, target), PATIENT, 2);
        List<Candidate> offered = complete(completer, "get k").stream().filter(c -> c.value().startsWith("k")).toList();
        assertEquals(List.of("k", "key-1", "key-2"), offered.stream().map(Candidate::value).sorted().toList(),
                "two keys, and the typed word itself so that the prefix shared by those two is not inserted");
        assertTrue(offered.stream().noneMatch(Candidate::complete), "no space after a key from a page cut short");
    }

    @Test
    void words_that_are_not_keys_get_no_key_candidates() {
        KeyNameCompleter completer = completer();
        assertEquals(List.of(), keysOffered(completer, "ls k"), "ls has no key parameter");
        assertEquals(List.of(), keysOffered(completer, "ls --prefix k"));
        assertEquals(List.of(), keysOffered(completer, "offload key-1 k"), "the second word of offload is a file");
        assertEquals(List.of(), keysOffered(completer, "get --tenant k"), "an option's value");
        assertEquals(List.of(), keysOffered(completer, "get --out k"));
        assertEquals(List.of(), keysOffered(completer, "config show k"));
        assertEquals(List.of(), keysOffered(completer, "k"));
    }

    @Test
    @Timeout(10)
    void an_absent_master_offers_nothing_and_does_not_hold_the_prompt() throws Exception {
        String nobody = "127.0.0.1:" + FreePorts.one();
        KeyNameCompleter completer = completer(Map.of(ClientOptions.MASTER_ENV, nobody), KeyNameCompleter.DEFAULT_DEADLINE,
                KeyNameCompleter.PAGE_SIZE);
        for (int tab = 0; tab < 5; tab++) {
            assertEquals(List.of(), values(completer, "get ke"));
            assertEquals(List.of(), values(completer, "rm --master " + nobody + " ke"));
        }
        assertEquals(List.of(), values(completer, "get --master not-an-address k"));
        assertEquals(List.of(), values(completer, "get --master 127.0.0.1:99999 k"));
    }

    @Test
    void a_master_started_after_a_failed_tab_is_found_at_the_next_one() throws Exception {
        int port = FreePorts.one();
        String late = "127.0.0.1:" + port;
        KeyNameCompleter completer = completer(Map.of(ClientOptions.MASTER_ENV, late), PATIENT, KeyNameCompleter.PAGE_SIZE);
        assertEquals(List.of(), values(completer, "get l"));
        BucketLayout layout = new BucketLayout(root.resolve("late-tier"), 2, 4096, 64 * 4096L);
        try (MasterServer second = MasterServer.start(MasterServer.Options.builder(layout).port(port).build())) {
            Path file = Files.writeString(root.resolve("late-object"), "late", StandardCharsets.UTF_8);
            CliRun.run("offload", "late-key", file.toString(), "--master", late).expectOk();
            assertEquals(List.of("late-key"), values(completer, "get l"));
        }
    }

    @Test
    void commands_options_and_values_still_complete() {
        KeyNameCompleter completer = completer();
        assertTrue(values(completer, "get --te").contains("--tenant"), values(completer, "get --te").toString());
        assertFalse(values(completer, "get --te").contains("key-1"));
        assertTrue(values(completer, "ge").contains("get"), values(completer, "ge").toString());
        List<String> outputs = values(completer, "stat -o ");
        assertTrue(outputs.contains("json"), outputs.toString());
    }

    @Test
    void a_closed_completer_offers_no_keys_and_still_completes_commands() {
        KeyNameCompleter completer = completer();
        assertEquals(List.of("key-1", "key-2"), values(completer, "get ke"));
        completer.close();
        assertEquals(List.of(), values(completer, "get ke"));
        assertTrue(values(completer, "get --te").contains("--tenant"));
    }
}
