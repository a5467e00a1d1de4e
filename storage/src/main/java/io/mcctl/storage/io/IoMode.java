package io.mcctl.storage.io;

import java.util.Locale;

/** The {@code io} setting: how bucket-file bytes move. */
public enum IoMode {
    /** USRBIO when fs_type is hf3fs, the root is on a 3FS mount and the library loads; POSIX otherwise. */
    AUTO,
    /** Positional reads and writes through the kernel ({@link PosixBucketIo}). */
    POSIX,
    /** 3FS's USRBIO rings ({@link UsrbioBucketIo}); refusing to start when they cannot be used. */
    USRBIO;

    /** The value as the setting spells it. */
    public String text() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** @throws IllegalArgumentException for anything but auto, posix or usrbio (any case) */
    public static IoMode parse(String text) {
        for (IoMode mode : values()) {
            if (mode.text().equals(text.toLowerCase(Locale.ROOT))) {
                return mode;
            }
        }
        throw new IllegalArgumentException("");
    }
}
