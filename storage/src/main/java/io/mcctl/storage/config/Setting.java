package io.mcctl.storage.config;

import java.util.Objects;
import java.util.function.Function;

/**
 * One setting, declared once: its YAML key, its environment variable, its command-line flag, its
 * default, how its text is parsed, and a sentence saying what is allowed.
 *
 * @param <T> the parsed type
 */
public final class Setting<T> {

    private final String key;
    private final String envName;
    private final String flag;
    private final String defaultText;
    private final Function<String, T> parser;
    private final Function<T, String> formatter;
    private final String allowed;
    private final String description;

    private Setting(String key, String envName, String flag, String defaultText, Function<String, T> parser,
                    Function<T, String> formatter, String allowed, String description) {
        this.key = key;
        this.envName = envName;
        this.flag = flag;
        this.defaultText = defaultText;
        this.parser = parser;
        this.formatter = formatter;
        this.allowed = allowed;
        this.description = description;
    }

    /**
     * Declares a setting.
     *
     * @param parser turns text into a value, throwing {@link IllegalArgumentException} (message optional) when the text is not allowed
     */
    public static <T> Setting<T> of(String key, String envName, String flag, String defaultText, Function<String, T> parser,
                                    Function<T, String> formatter, String allowed, String description) {
        return new Setting<>(key, envName, flag, defaultText, parser, formatter, allowed, description);
    }

    /** YAML key, e.g. {@code page_size}. */
    public String key() { return key; }

    /** Environment variable, e.g. {@code MOONCAKE_DISTRIBUTED_PAGE_SIZE}. */
    public String envName() { return envName; }

    /** Command-line flag, e.g. {@code --page-size}. */
    public String flag() { return flag; }

    /** The default as text, or null when the default is computed (the root). */
    public String defaultText() { return defaultText; }

    public String allowed() { return allowed; }

    public String description() { return description; }

    T parse(String text, String sourceDescription) {
        try {
            return Objects.requireNonNull(parser.apply(text.trim()));
        } catch (IllegalArgumentException e) {
            String reason = e.getMessage() == null || e.getMessage().isBlank() ? "" : " (" + e.getMessage() + ")";
            throw new ConfigException("invalid " + key + " '" + text + "' from " + sourceDescription + reason + ": allowed is " + allowed);
        }
    }

    String format(Object value) {
        @SuppressWarnings("unchecked")
        T typed = (T) value;
        return formatter.apply(typed);
    }

    @Override
    public String toString() {
        return key;
    }
}
