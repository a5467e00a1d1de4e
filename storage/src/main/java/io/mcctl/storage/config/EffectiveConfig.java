package io.mcctl.storage.config;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The value in force for each setting, with where it came from. Immutable. */
public final class EffectiveConfig {

    /** Where a value came from, in increasing precedence: default, file, environment, flag. */
    public enum SourceKind { DEFAULT, FILE, ENVIRONMENT, FLAG }

    /** One setting's value. */
    public record Entry(Setting<?> setting, Object value, SourceKind source, String sourceDetail) {

        /** The value as it would be written in a config file. */
        public String formattedValue() {
            return setting.format(value);
        }

        /** E.g. {@code flag --page-size}, {@code environment MOONCAKE_DISTRIBUTED_PAGE_SIZE}, {@code file /etc/mcctl.yaml}, {@code default}. */
        public String describeSource() {
            return switch (source) {
                case DEFAULT -> "default";
                case FILE -> "file " + sourceDetail;
                case ENVIRONMENT -> "environment " + sourceDetail;
                case FLAG -> "flag " + sourceDetail;
            };
        }
    }

    private final Map<Setting<?>, Entry> entries;

    EffectiveConfig(Map<Setting<?>, Entry> entries) {
        this.entries = Collections.unmodifiableMap(new LinkedHashMap<>(entries));
    }

    @SuppressWarnings("unchecked")
    public <T> T get(Setting<T> setting) {
        Entry entry = entries.get(setting);
        if (entry == null) {
            throw new IllegalArgumentException("setting " + setting.key() + " was not loaded");
        }
        return (T) entry.value();
    }

    public Entry entry(Setting<?> setting) {
        return entries.get(setting);
    }

    public String sourceOf(Setting<?> setting) {
        return entries.get(setting).describeSource();
    }

    public List<Entry> entries() {
        return List.copyOf(entries.values());
    }
}
