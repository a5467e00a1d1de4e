package io.mcctl.storage.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Resolves settings with the precedence flag > environment > YAML file > default. The YAML file is a
 * flat map of setting keys ({@code page_size: 64KiB}); an unknown key is an error, not a silent typo.
 */
public final class ConfigLoader {

    /** Environment variable naming the YAML file when {@code --config} is not given. */
    public static final String CONFIG_ENV = "MCCTL_CONFIG";

    /** A key given twice is refused rather than the last one silently winning. */
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory())
            .enable(com.fasterxml.jackson.core.JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private ConfigLoader() {
    }

    /**
     * @param settings   every setting to resolve, in display order
     * @param flags      values given on the command line, by setting (absent = not given)
     * @param env        the process environment
     * @param configFile the {@code --config} file, or null to use {@code MCCTL_CONFIG}, or none
     */
    public static EffectiveConfig load(List<Setting<?>> settings, Map<Setting<?>, String> flags, Map<String, String> env,
                                       Path configFile) {
        Path file = configFile != null ? configFile
                : env.get(CONFIG_ENV) != null && !env.get(CONFIG_ENV).isBlank() ? Path.of(env.get(CONFIG_ENV)) : null;
        Map<String, String> fileValues = file == null ? Map.of() : readYaml(file, configFile == null, settings);
        Map<Setting<?>, EffectiveConfig.Entry> entries = new LinkedHashMap<>();
        for (Setting<?> setting : settings) {
            String flagText = flags.get(setting);
            EffectiveConfig.Entry entry;
            if (flagText != null) {
                String where = "flag " + setting.flag();
                entry = new EffectiveConfig.Entry(setting, setting.parse(flagText, where), EffectiveConfig.SourceKind.FLAG, setting.flag());
            } else if (env.get(setting.envName()) != null) {
                String where = "environment " + setting.envName();
                entry = new EffectiveConfig.Entry(setting, setting.parse(env.get(setting.envName()), where),
                        EffectiveConfig.SourceKind.ENVIRONMENT, setting.envName());
            } else if (fileValues.containsKey(setting.key())) {
                String where = "file " + file;
                entry = new EffectiveConfig.Entry(setting, setting.parse(fileValues.get(setting.key()), where),
                        EffectiveConfig.SourceKind.FILE, file.toString());
            } else {
                entry = new EffectiveConfig.Entry(setting, setting.parse(setting.defaultText(), "default"),
                        EffectiveConfig.SourceKind.DEFAULT, "");
            }
            entries.put(setting, entry);
        }
        return new EffectiveConfig(entries);
    }

    private static Map<String, String> readYaml(Path file, boolean fromEnv, List<Setting<?>> settings) {
        String named = fromEnv ? " (named by " + CONFIG_ENV + ")" : "";
        JsonNode root;
        try {
            root = YAML.readTree(Files.readAllBytes(file));
        } catch (NoSuchFileException e) {
            throw new ConfigException("config file " + file + named + " does not exist");
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            // Jackson's message carries its own location in a second paragraph; name it the way editors do.
            String reason = e.getOriginalMessage() == null ? e.getClass().getSimpleName() : e.getOriginalMessage().lines().findFirst().orElse("");
            com.fasterxml.jackson.core.JsonLocation where = e.getLocation();
            String at = where == null || where.getLineNr() < 1 ? "" : ":" + where.getLineNr() + ":" + where.getColumnNr();
            if (reason.startsWith("Duplicate field")) {
                reason = "a setting is given twice (" + reason.substring("Duplicate field ".length()) + "): give each setting once";
            }
            throw new ConfigException("config file " + file + at + named + " is not valid YAML: " + reason);
        } catch (IOException e) {
            String reason = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage().lines().findFirst().orElse("");
            throw new ConfigException("config file " + file + named + " cannot be read: " + reason);
        }
        if (root == null || root.isMissingNode() || root.isNull()) {
            return Map.of();
        }
        if (!root.isObject()) {
            throw new ConfigException("config file " + file + named + " must be a map of setting: value, not a " + root.getNodeType().name().toLowerCase());
        }
        List<String> known = settings.stream().map(Setting::key).collect(Collectors.toList());
        Map<String, String> values = new LinkedHashMap<>();
        List<String> unknown = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> field = it.next();
            if (!known.contains(field.getKey())) {
                unknown.add(field.getKey());
            } else if (!field.getValue().isValueNode() || field.getValue().isNull()) {
                throw new ConfigException("invalid " + field.getKey() + " in config file " + file + ": expected a single value, not "
                        + field.getValue().getNodeType().name().toLowerCase());
            } else {
                values.put(field.getKey(), field.getValue().asText());
            }
        }
        if (!unknown.isEmpty()) {
            throw new ConfigException("unknown setting" + (unknown.size() > 1 ? "s " : " ") + String.join(", ", unknown) + " in config file "
                    + file + ": allowed keys are " + String.join(", ", known));
        }
        return values;
    }
}
