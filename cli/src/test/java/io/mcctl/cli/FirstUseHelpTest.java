package io.mcctl.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Help and config text that a first-time operator reads. */
@Timeout(60)
class FirstUseHelpTest {

    private static final Map<String, String> PLAIN = Map.of("NO_COLOR", "1", "COLUMNS", "80");

    /** The help text with its line wrapping undone, so that a phrase is found wherever the terminal broke it. */
    private static String help(String... command) {
        String[] args = new String[command.length + 1];
        System.arraycopy(command, 0, args, 0, command.length);
        args[command.length] = "--help";
        return CliRun.run(PLAIN, args).expectOk().out();
    }

    private static String unwrapped(String text) {
        return text.replaceAll("\\s*\\n\\s*", " ");
    }

    @Test
    void master_start_names_the_state_dir_default_and_says_page_mode_is_a_nodes_setting() {
        String help = unwrapped(help("master", "start"));
        assertTrue(help.contains("[env MCCTL_STATE_DIR; default <root>/master]"), help);
        assertFalse(help.contains("default ]"), help);
        assertTrue(help.contains("a node's setting, the master serves both"), help);
    }

    @Test
    void snapshot_list_names_its_default_without_a_broken_path() {
        String help = unwrapped(help("snapshot", "list"));
        assertFalse(help.contains(". /mooncake-data"), help);
        assertTrue(help.contains("mooncake-data/master in the current directory"), help);
    }

    @Test
    void commands_without_keys_take_no_tenant() {
        assertFalse(help("snapshot", "create").contains("--tenant"));
        assertFalse(help("bitmap", "inspect").contains("--tenant"));
        assertTrue(help("snapshot", "create").contains("--master"));
        assertTrue(help("get").contains("--tenant"));
        CliRun.run(PLAIN, "snapshot", "create", "--tenant", "x").expectExit(ExitCodes.USAGE);
    }

    @Test
    void config_show_says_the_default_root_is_relative_to_the_current_directory() {
        CliRun run = CliRun.run(PLAIN, "config", "show").expectOk();
        String rootLine = run.out().lines().filter(l -> l.startsWith("root_dir ")).findFirst().orElseThrow();
        assertTrue(rootLine.contains(System.getProperty("user.dir")), rootLine);
        assertTrue(rootLine.contains("relative to the current directory"), rootLine);
        String given = CliRun.run(PLAIN, "config", "show", "--root", "/srv/kv").expectOk().out();
        assertFalse(given.contains("relative to the current directory"), given);
        assertTrue(CliRun.run(PLAIN, "config", "show", "-o", "json").expectOk().out().contains("\"relative_to\" : \"the current directory\""));
    }
}
