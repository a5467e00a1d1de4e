package io.mcctl.cli.util;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.storage.config.SizeParser;
import java.util.ArrayList;
import java.util.List;

/** Sizes given as arguments (4096, 64KiB, 16MiB): parsed, checked, and refused with one line naming the option. */
public final class SizeArguments {

    private SizeArguments() {
    }

    /** The value of {@code option}, a size of at least one byte. */
    public static long positive(String option, String text) {
        try {
            long bytes = SizeParser.parse(text);
            if (bytes < 1) {
                throw new IllegalArgumentException("not positive");
            }
            return bytes;
        } catch (IllegalArgumentException e) {
            throw new CliException(ExitCodes.USAGE, "invalid " + option + " '" + text + "': allowed is a positive size such as 4096, 64KiB or 16MiB");
        }
    }

    /** The --sizes of a benchmark, each from 1 byte to {@code largest}; one bad size refuses the run. */
    public static List<Long> objectSizes(List<String> sizes, long largest) {
        List<Long> objectSizes = new ArrayList<>();
        for (String size : sizes) {
            long bytes;
            try {
                bytes = SizeParser.parse(size);
            } catch (IllegalArgumentException e) {
                throw new CliException(ExitCodes.USAGE, "invalid --sizes '" + size + "': allowed is " + SizeParser.ALLOWED);
            }
            if (bytes < 1 || bytes > largest) {
                throw new CliException(ExitCodes.USAGE, "invalid --sizes '" + size + "': allowed is 1 byte to " + SizeParser.format(largest));
            }
            objectSizes.add(bytes);
        }
        return objectSizes;
    }
}
