package io.mcctl.storage.config;

/** A setting that cannot be used: one line naming the setting, the value, where it came from, and what is allowed. */
public final class ConfigException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ConfigException(String message) {
        super(message);
    }
}
