package io.mcctl.cli.bench;

import io.mcctl.cli.CliException;
import io.mcctl.cli.ExitCodes;
import io.mcctl.storage.config.SizeParser;
import java.util.List;

/** The heap of a master a benchmark starts (--master-heap): fixed and touched up front unless 'grow' is asked for. */
public final class MasterHeap {

    /** The heap the master started here gets unless --master-heap says otherwise, or a quarter of the memory if less. */
    private static final long DEFAULT_MASTER_HEAP = 4L << 30;
    /** The smallest --master-heap: less would measure the collector rather than the master. */
    private static final long MIN_MASTER_HEAP = 64L << 20;

    private MasterHeap() {
    }

    /** The JVM options for a master heap of {@code text}: a size, fixed and touched up front, or "grow" for none. */
    public static List<String> parse(String text) {
        if ("grow".equals(text)) {
            return List.of();
        }
        long bytes;
        try {
            bytes = SizeParser.parse(text);
        } catch (IllegalArgumentException e) {
            bytes = -1;
        }
        if (bytes < MIN_MASTER_HEAP || bytes % (1 << 20) != 0) {
            throw new CliException(ExitCodes.USAGE, "invalid --master-heap " + text + ": allowed is 'grow' or a size of whole MiB from 64MiB, such as 4GiB");
        }
        return fixed(bytes);
    }

    /** The options of a heap fixed at {@code bytes} and touched before the master serves. */
    public static List<String> fixed(long bytes) {
        String mib = (bytes >> 20) + "m";
        return List.of("-Xms" + mib, "-Xmx" + mib, "-XX:+AlwaysPreTouch");
    }

    /**
     * 4 GiB, or a quarter of the machine's memory (the JVM's own default limit) shared among the {@code masters} started at
     * once where that is less: touched up front, they must fit.
     */
    public static long defaultBytes(int masters) {
        long memory = ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getTotalMemorySize();
        return Math.max(MIN_MASTER_HEAP, Math.min(DEFAULT_MASTER_HEAP, memory / 4 / masters >> 20 << 20));
    }
}
