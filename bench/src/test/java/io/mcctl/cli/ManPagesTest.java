package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class ManPagesTest {

    /** docs/man at the repository root, seen from the cli module's directory where the tests run. */
    private static final Path CHECKED_IN = Path.of("..", "docs", "man");
    private static final String REGENERATE = "regenerate with: java -cp bench/target/mcctl-all.jar io.mcctl.cli.ManPages docs/man";

    @Test
    void checked_in_man_pages_match_the_command_model_one_per_command() throws Exception {
        Map<String, String> expected = ManPages.pages();
        Map<String, String> checkedIn = new TreeMap<>();
        try (Stream<Path> files = Files.list(CHECKED_IN)) {
            for (Path file : files.filter(f -> f.getFileName().toString().endsWith(".1")).toList()) {
                checkedIn.put(file.getFileName().toString(), Files.readString(file, StandardCharsets.UTF_8));
            }
        }
        assertEquals(expected.keySet(), checkedIn.keySet(), "docs/man has a page for each command and no other; " + REGENERATE);
        for (Map.Entry<String, String> page : expected.entrySet()) {
            assertEquals(page.getValue(), checkedIn.get(page.getKey()), "docs/man/" + page.getKey() + " is stale; " + REGENERATE);
        }
        assertEquals(CliReference.commands(ManPages.SYNOPSIS_WIDTH).size(), expected.size());
        assertTrue(expected.containsKey("mcctl.1") && expected.containsKey("mcctl-master-start.1") && expected.containsKey("mcctl-snapshot-wal-dump.1"),
                expected.keySet()::toString);
    }

    @Test
    void every_page_renders_without_a_warning_and_man_reads_it() throws Exception {
        Path groff = Path.of("/usr/bin/groff");
        assertTrue(Files.isExecutable(groff), "groff is missing: install Debian's package groff-base (with man-db)");
        for (Map.Entry<String, String> page : ManPages.pages().entrySet()) {
            Path file = Files.createTempFile("mcctl-man", ".1");
            try {
                Files.writeString(file, page.getValue(), StandardCharsets.UTF_8);
                Process render = new ProcessBuilder(groff.toString(), "-man", "-Tutf8", "-ww", "-z", file.toString())
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
                String warnings = new String(render.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(render.waitFor(30, TimeUnit.SECONDS));
                assertEquals(0, render.exitValue(), page.getKey() + ": " + warnings);
                assertEquals("", warnings, page.getKey() + " renders with warnings");
            } finally {
                Files.delete(file);
            }
        }
        ProcessBuilder man = new ProcessBuilder("/usr/bin/man", "-l", CHECKED_IN.resolve("mcctl-offload.1").toString());
        man.environment().put("MANPAGER", "cat");
        man.environment().put("MANWIDTH", "100");
        Process shown = man.redirectErrorStream(true).start();
        String text = new String(shown.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(shown.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, shown.exitValue(), text);
        for (String expected : new String[] {"MCCTL-OFFLOAD(1)", "NAME", "mcctl-offload", "Write a file", "SYNOPSIS", "--overwrite",
                "--master=HOST:PORT", "SEE ALSO", "mcctl(1)"}) {
            assertTrue(text.contains(expected), () -> "man -l mcctl-offload.1 shows no '" + expected + "':\n" + text);
        }
    }

    @Test
    void roff_control_characters_in_help_text_are_escaped() {
        assertEquals("\\&.hidden \\e \\-\\-flag", ManPages.escape(".hidden \\ --flag"));
        assertEquals("\\&'quoted'", ManPages.escape("'quoted'"));
    }
}
