package io.mcctl.cli;

import io.mcctl.master.server.MasterSettings;
import io.mcctl.storage.config.ConfigLoader;
import io.mcctl.storage.config.EffectiveConfig;
import io.mcctl.storage.config.Setting;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Adds one command-line option per declared {@link Setting} (plus {@code --config FILE}) to every command
 * that uses settings, from the declarations themselves, so a flag is never declared twice.
 */
public final class SettingsOptions {

    /** A command that reads settings. */
    public interface UsesSettings {
        List<Setting<?>> settings();
    }

    static final String CONFIG_OPTION = "--config";

    private SettingsOptions() {
    }

    /** Walks the tree below {@code commandLine} and adds the setting options to each command that uses settings. */
    static void install(CommandLine commandLine) {
        Object command = commandLine.getCommand();
        if (command instanceof UsesSettings uses) {
            CommandSpec spec = commandLine.getCommandSpec();
            spec.addOption(OptionSpec.builder(CONFIG_OPTION).paramLabel("FILE").type(Path.class)
                    .description("YAML file of settings (default: $" + ConfigLoader.CONFIG_ENV + ", if set).").build());
            for (Setting<?> setting : uses.settings()) {
                spec.addOption(OptionSpec.builder(setting.flag()).paramLabel("VALUE").type(String.class)
                        .description(setting.description() + " [env " + setting.envName() + "; default "
                                + defaultText(setting) + "]").build());
            }
        }
        for (CommandLine sub : commandLine.getSubcommands().values()) {
            install(sub);
        }
    }

    /**
     * What help shows as a setting's default. An empty declared default means the value is derived from another
     * setting; the state directory's is the root's {@code master} directory.
     */
    static String defaultText(Setting<?> setting) {
        if (setting.defaultText() == null || setting.defaultText().isEmpty()) {
            return setting == MasterSettings.STATE_DIR ? "<root>/master" : "computed";
        }
        return setting.defaultText();
    }

    /** Resolves the settings of {@code spec}'s command from its flags, the environment, the config file and defaults. */
    public static EffectiveConfig resolve(CommandSpec spec, List<Setting<?>> settings) {
        Map<Setting<?>, String> flags = new LinkedHashMap<>();
        for (Setting<?> setting : settings) {
            String value = spec.findOption(setting.flag()).getValue();
            if (value != null) {
                flags.put(setting, value);
            }
        }
        Path configFile = spec.findOption(CONFIG_OPTION).getValue();
        return ConfigLoader.load(settings, flags, CommandEnvironment.of(spec), configFile);
    }
}
