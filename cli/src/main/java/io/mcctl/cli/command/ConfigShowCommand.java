package io.mcctl.cli.command;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.cli.OutputMixin;
import io.mcctl.cli.SettingsOptions;
import io.mcctl.cli.Table;
import io.mcctl.master.server.MasterSettings;
import io.mcctl.storage.config.EffectiveConfig;
import io.mcctl.storage.config.Setting;
import io.mcctl.storage.config.StorageSettings;
import io.mcctl.storage.io.BucketIoSelector;
import io.mcctl.storage.io.usrbio.UsrbioUnavailableException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code mcctl config show}: every setting in force, its value and where the value came from. */
@Command(name = "show", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Print the effective settings and each value's source.",
                "Precedence: flag > environment > YAML file (--config or $MCCTL_CONFIG) > default.",
                "Last, the bucket-file IO these settings give on this machine (io auto, posix or usrbio) and why; io usrbio "
                        + "that cannot be used here is an error (exit 2), as it would be at start.",
                "Paths are shown resolved. The default root, " + StorageSettings.DEFAULT_ROOT + ", is relative to the current "
                        + "directory: run from another directory, mcctl uses another root; its SOURCE says so."})
public final class ConfigShowCommand implements Callable<Integer>, SettingsOptions.UsesSettings {

    @Spec
    CommandSpec spec;

    @Mixin
    OutputMixin output;

    @Override
    public List<Setting<?>> settings() {
        List<Setting<?>> all = new ArrayList<>(StorageSettings.ALL);
        all.addAll(MasterSettings.ALL);
        return all;
    }

    @Override
    public Integer call() {
        EffectiveConfig config = SettingsOptions.resolve(spec, settings());
        StorageSettings.layout(config); // settings that are invalid together fail here, as at start
        // Which bucket-file IO these settings give on this machine, and why; a refused usrbio is the error a start would be.
        String ioMode;
        String ioReason;
        UsrbioUnavailableException refused = null;
        try {
            BucketIoSelector.Choice choice = BucketIoSelector.choose(config);
            ioMode = choice.mode().text();
            ioReason = choice.reason();
        } catch (UsrbioUnavailableException e) {
            refused = e;
            ioMode = null;
            ioReason = e.getMessage();
        }
        if (output.json()) {
            List<Map<String, Object>> rows = new ArrayList<>();
            for (EffectiveConfig.Entry entry : config.entries()) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("key", entry.setting().key());
                Object value = entry.value();
                row.put("value", value instanceof java.nio.file.Path || value instanceof java.time.Duration ? entry.formattedValue() : value);
                row.put("text", entry.formattedValue());
                row.put("source", entry.source().name().toLowerCase());
                row.put("source_detail", entry.sourceDetail());
                row.put("env", entry.setting().envName());
                row.put("flag", entry.setting().flag());
                if (relativeDefault(entry)) {
                    row.put("relative_to", "the current directory");
                }
                rows.add(row);
            }
            Map<String, Object> io = new LinkedHashMap<>();
            io.put("mode", ioMode);
            io.put(refused == null ? "reason" : "error", ioReason);
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("settings", rows);
            report.put("io", io);
            spec.commandLine().getOut().println(OutputMixin.toJson(report));
        } else {
            Table table = new Table("SETTING", "VALUE", "SOURCE", "ENVIRONMENT");
            for (EffectiveConfig.Entry entry : config.entries()) {
                String source = entry.describeSource() + (relativeDefault(entry)
                        ? " (" + StorageSettings.DEFAULT_ROOT + ", relative to the current directory)" : "");
                table.row(entry.setting().key(), entry.formattedValue(), source, entry.setting().envName());
            }
            spec.commandLine().getOut().print(table.render());
            if (refused == null) {
                spec.commandLine().getOut().println("io in force: " + ioReason);
            }
        }
        spec.commandLine().getOut().flush();
        if (refused != null) {
            throw new CliException(ExitCodes.USAGE, refused.getMessage(), refused);
        }
        return 0;
    }

    /** Whether {@code entry} is the default root, a path that depends on the directory mcctl runs in. */
    private static boolean relativeDefault(EffectiveConfig.Entry entry) {
        return entry.setting() == StorageSettings.ROOT_DIR && entry.source() == EffectiveConfig.SourceKind.DEFAULT;
    }
}
